"""The check codes of issue 28: missing-heading / missing-block (wikilinks and markdown links),
broken-relative-link, duplicate-title, alias-collision, empty-page, orphan-page; their
positions and output forms, the [check.severity] setting, and the staged delta seeing
cross-page rules change (every derived answer equals an uncached full check)."""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo, page


def problems(repo: Repo, *args: str) -> list[dict]:
    proc = repo.llmwiki("check", "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["problems"]


def located(found: list[dict]) -> list[tuple[str, int, int, str, str]]:
    return [(p["path"], p["line"], p["col"], p["code"], p["severity"]) for p in found]


@pytest.fixture
def wiki(repo: Repo) -> Repo:
    repo.write(
        "wiki/concepts/alpha.md",
        page(
            "Alpha",
            "# Alpha\n\n## Usage Notes\n\npara ^blk\n\n"
            "[b](beta.md) [bu](beta.md#usage) [bad](beta.md#nope) "
            "[self](#usage-notes) [gone](../gone.md) [pic](pic.png) "
            "[site](../guide/) [web](https://example.com/x.md)\n"
            "[[beta#Usage]] [[beta#No Such]] [[beta#^b2]] [[beta#^nob]]\n",
            aliases="[Beta]",
        ),
    )
    repo.write(
        "wiki/concepts/beta.md", page("Alpha", "# Beta\n\n## Usage\n\nthe para ^b2\n\n[[alpha]]\n")
    )
    repo.write("wiki/concepts/pic.png", b"\x89PNG")
    repo.write("wiki/notes/empty.md", "---\ntitle: Empty\n---\n\n")
    repo.write("wiki/notes/lonely.md", "# Lonely\n\nno links\n")
    repo.commit("wiki")
    return repo


def test_each_code_at_its_place(wiki: Repo) -> None:
    found = problems(wiki)
    assert located(found) == [
        ("wiki/concepts/alpha.md", 2, 1, "duplicate-title", "warning"),
        ("wiki/concepts/alpha.md", 3, 1, "alias-collision", "warning"),
        ("wiki/concepts/alpha.md", 11, 34, "missing-heading", "warning"),
        ("wiki/concepts/alpha.md", 11, 75, "broken-relative-link", "error"),
        ("wiki/concepts/alpha.md", 12, 16, "missing-heading", "warning"),
        ("wiki/concepts/alpha.md", 12, 46, "missing-block", "warning"),
        ("wiki/concepts/beta.md", 2, 1, "duplicate-title", "warning"),
        ("wiki/notes/empty.md", 1, 1, "empty-page", "warning"),
    ]
    by_code = {p["code"]: p for p in found}
    assert by_code["broken-relative-link"]["target"] == "wiki/gone.md"
    assert (
        by_code["broken-relative-link"]["message"]
        == "broken relative link […](../gone.md): no file wiki/gone.md"
    )
    assert (
        by_code["missing-block"]["message"]
        == "missing block [[beta#^nob]]: no block ^nob in concepts/beta"
    )
    assert (
        'duplicate title "Alpha": concepts/alpha has it too'
        in by_code["duplicate-title"]["message"]
    )
    assert (
        '"Beta" also names concepts/beta (its file name)' in by_code["alias-collision"]["message"]
    )
    text = wiki.llmwiki("check")
    assert text.returncode == 1
    assert (
        "wiki/concepts/alpha.md:11:75: broken relative link […](../gone.md): no file wiki/gone.md"
        in text.stdout
    )
    github = wiki.llmwiki("check", "--format", "github").stdout
    assert (
        "::warning file=wiki/notes/empty.md,line=1,col=1,title=llmwiki empty-page::empty page"
        in github
    )
    assert (
        "::error file=wiki/concepts/alpha.md,line=11,col=75,title=llmwiki broken-relative-link::"
        in github
    )


def test_github_anchor_slugs_and_percent_escapes(repo: Repo) -> None:
    repo.write("wiki/a.md", "# Foo & Bar\n\n# Intro\n\n# Intro\n\n## Café Notes\n")
    repo.write(
        "wiki/My Page.md",
        "[x](a.md#foo--bar) [y](a.md#intro-1) [z](a.md#caf%C3%A9-notes) "
        "[w](My%20Page.md) [v](a.md#Foo%20%26%20Bar) [u](a.md#nope-1)\n",
    )
    repo.commit("wiki")
    assert [(p["col"], p["code"]) for p in problems(repo)] == [(108, "missing-heading")]


def test_severity_settings(wiki: Repo) -> None:
    wiki.write(
        ".llmwiki/config.toml",
        '[check.severity]\nbroken-relative-link = "warning"\nempty-page = "off"\n'
        'orphan-page = "warning"\nmissing-heading = "error"\n',
    )
    found = problems(wiki)
    codes = [(p["path"], p["code"], p["severity"]) for p in found]
    assert ("wiki/concepts/alpha.md", "broken-relative-link", "warning") in codes
    assert not any(code == "empty-page" for _, code, _ in codes)
    assert ("wiki/concepts/alpha.md", "missing-heading", "error") in codes
    assert [path for path, code, _ in codes if code == "orphan-page"] == [
        "wiki/notes/empty.md",
        "wiki/notes/lonely.md",
    ]
    assert wiki.llmwiki("check").returncode == 1  # missing-heading is an error now
    assert problems(wiki, "--rev", "HEAD") == problems(
        wiki, "--rev", "HEAD", "--no-cache"
    )  # cached orphans agree
    for bad, said in (
        ('foo = "off"', "unknown problem code 'foo'"),
        ('unchecked-page = "off"', "cannot change unchecked-page"),
        ('empty-page = "maybe"', "use one of error, warning, off"),
    ):
        wiki.write(".llmwiki/config.toml", f"[check.severity]\n{bad}\n")
        proc = wiki.llmwiki("check")
        assert proc.returncode == 2 and said in proc.stderr


def _base(repo: Repo) -> None:
    repo.write(
        "wiki/concepts/alpha.md",
        page(
            "Alpha",
            "## Usage\n[b](beta.md#usage) [[gamma]] [d](../files/doc.pdf) "
            "[s](../../sources/ref.md)\n",
        ),
    )
    repo.write("sources/ref.md", "# A source, outside the wiki: not a page\n")
    repo.write(
        "wiki/concepts/beta.md",
        page("Beta", "## Usage\n[[alpha]] [a](alpha.md)\n", aliases="[The Beta]"),
    )
    repo.write("wiki/concepts/gamma.md", page("Gamma", "[[the-beta]] [[lonely]]\n"))
    repo.write("wiki/notes/lonely.md", page("Lonely", "text\n"))
    repo.write("wiki/files/doc.pdf", b"%PDF")
    repo.write(".llmwiki/config.toml", '[check.severity]\norphan-page = "warning"\n')
    repo.commit("base")


EDITS = {
    "duplicate title, new page": [("wiki/notes/fresh.md", page("Beta", "[[alpha]]\n"))],
    "duplicate title, title only": [("wiki/notes/lonely.md", page("Gamma", "text\n"))],
    "alias collides with a new file name": [("wiki/notes/the-beta.md", "[[alpha]]\n")],
    "alias dropped": [
        ("wiki/concepts/beta.md", page("Beta", "## Usage\n[[alpha]] [a](alpha.md)\n"))
    ],
    "md target deleted": [("wiki/concepts/beta.md", None)],
    "md anchor heading renamed": [
        ("wiki/concepts/beta.md", page("Beta", "## Use\n[[alpha]]\n", aliases="[The Beta]"))
    ],
    "attachment deleted": [("wiki/files/doc.pdf", None)],
    "markdown file outside the wiki deleted": [("sources/ref.md", None)],
    "orphan made": [("wiki/concepts/gamma.md", page("Gamma", "[[the-beta]]\n"))],
    "md link added to a new page": [
        ("wiki/notes/fresh.md", "[x](../concepts/nowhere.md) [y](../concepts/alpha.md#usage)\n")
    ],
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_staged_delta_sees_cross_page_rules(repo: Repo, edit: str) -> None:
    _base(repo)
    assert repo.llmwiki("check", "--rev", "HEAD").returncode in (
        0,
        1,
    )  # HEAD's result and facts cached
    for path, text in EDITS[edit]:
        if text is None:
            repo.git("rm", "-q", path)
        else:
            repo.write(path, text)
    repo.git("add", "-A")
    fast = problems(repo, "--staged")
    assert fast == problems(repo, "--staged", "--no-cache")
    assert problems(repo, "--staged", "--base", "HEAD") == problems(
        repo, "--staged", "--base", "HEAD", "--no-cache"
    )
    repo.write("wiki/notes/extra.md", "[[alpha]]\n")  # a second edit, derived from the first index
    repo.git("add", "-A")
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")


def test_images_are_relative_links_too(repo: Repo) -> None:
    repo.write(
        "wiki/a.md",
        "![ok](img/d.png) ![gone](img/x.png) `![code](img/y.png)` ![web](https://e.org/z.png)\n",
    )
    repo.write("wiki/img/d.png", b"\x89PNG")
    repo.commit("wiki")
    assert [(p["col"], p["code"], p["target"]) for p in problems(repo)] == [
        (18, "broken-relative-link", "wiki/img/x.png")
    ]
