"""`llmwiki mv` (issue 28): a page, file or folder moved and every link to it rewritten, in one
commit through the write transaction; only link text changes; refusals change nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..conftest import Repo, page

# A page linking to the moved page in every form, with text around that must not change:
# CRLF line ends, a byte-order mark, a byte that is not UTF-8, code spans and fences,
# a comment, a table's escaped pipe, an alias link. {A} is the bare name, {P} a path from
# the wiki root, {W} a path from the repository root, {R} a relative markdown path.
LINKING = (
    "\ufeff# Links\r\n\r\n"
    "Bare [[{A}]], labelled [[ {A} |the page]], heading [[{A}#Usage]], block [[{A}#^b1]], "
    "embed ![[{A}]].\r\n"
    "Path [[{P}]], from the root [[{W}.md|x]], markdown [the page]({R}#usage) and [plain]({R}).\r\n"
    "By alias: [[Ancient Name]]. Unrelated: [[other]].\r\n"
    "In code: `[[old-page]]` and `[t](../concepts/old-page.md)`.\r\n"
    "```\r\n[[old-page]]\r\n```\r\n"
    "<!-- [[old-page]] -->\r\n"
    "| a | [[{A}\\|table]] |\r\n"
    "Latin-1 byte: \udce9 kept.\r\n"
)
OLD = {
    "A": "old-page",
    "P": "concepts/old-page",
    "W": "wiki/concepts/old-page",
    "R": "../concepts/old-page.md",
}
NEW = {
    "A": "new-page",
    "P": "concepts/sub/new-page",
    "W": "wiki/concepts/sub/new-page",
    "R": "../concepts/sub/new-page.md",
}


def linking(names: dict[str, str]) -> bytes:
    return LINKING.format(**names).encode("utf-8", "surrogateescape")


@pytest.fixture
def wiki(repo: Repo) -> Repo:
    repo.write(
        "wiki/concepts/old-page.md",
        page(
            "Old Page",
            "# Old Page\n\n## Usage\n\npara ^b1\n\n"
            "[up](../notes/linking.md) [[other]] ![pic](pic.png)\n",
            aliases="[Ancient Name]",
        ),
    )
    repo.write("wiki/concepts/pic.png", b"\x89PNG")
    repo.write("wiki/concepts/other.md", page("Other", "Nothing to see: [[elsewhere-missing]]\n"))
    repo.write("wiki/notes/linking.md", linking(OLD))
    repo.commit("wiki")
    return repo


def mv(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki("mv", *args)


def head_bytes(repo: Repo, path: str) -> bytes:
    return subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=repo.root, capture_output=True, check=True
    ).stdout


def test_mv_rewrites_every_link_form_and_nothing_else(wiki: Repo) -> None:
    before = wiki.git("rev-parse", "HEAD").strip()
    proc = mv(wiki, "wiki/concepts/old-page.md", "wiki/concepts/sub/new-page.md")
    assert proc.returncode == 0, proc.stderr
    assert "rewrote 12 links in 2 pages" in proc.stdout
    # one commit on top of the old tip, touching only the moved page and the linking pages
    assert wiki.git("rev-parse", "HEAD~1").strip() == before
    assert sorted(wiki.git("show", "--no-renames", "--name-only", "--format=", "HEAD").split()) == [
        "wiki/concepts/old-page.md",
        "wiki/concepts/sub/new-page.md",
        "wiki/notes/linking.md",
    ]
    # the bytes outside the links are the bytes before: only the names changed
    assert head_bytes(wiki, "wiki/notes/linking.md") == linking(NEW)
    assert (wiki.root / "wiki/notes/linking.md").read_bytes() == linking(NEW)
    moved = head_bytes(wiki, "wiki/concepts/sub/new-page.md").decode()
    assert (
        "[up](../../notes/linking.md) [[other]] ![pic](../pic.png)" in moved
    )  # its relative links follow it
    assert wiki.git("status", "--porcelain") == ""
    check = wiki.llmwiki("check", "--json")
    codes = {(p["path"], p["code"]) for p in json.loads(check.stdout)["problems"]}
    assert codes == {
        ("wiki/concepts/other.md", "broken-link"),
        ("wiki/notes/linking.md", "invalid-utf8"),
    }  # as before


def test_dry_run_prints_the_plan_and_changes_nothing(wiki: Repo) -> None:
    before = wiki.git("rev-parse", "HEAD").strip()
    proc = mv(wiki, "wiki/concepts/old-page.md", "wiki/concepts/sub/new-page.md", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "  wiki/notes/linking.md:3:8: old-page → new-page" in proc.stdout
    assert (
        "  wiki/concepts/old-page.md:11:6: ../notes/linking.md → ../../notes/linking.md"
        in proc.stdout
    )
    data = json.loads(
        mv(
            wiki, "wiki/concepts/old-page.md", "wiki/concepts/sub/new-page.md", "-n", "--json"
        ).stdout
    )
    assert (
        data["dryRun"] is True
        and data["commit"] is None
        and data["links"] == 12
        and data["pages"] == 2
    )
    assert data["moves"] == [
        {"from": "wiki/concepts/old-page.md", "to": "wiki/concepts/sub/new-page.md"}
    ]
    assert {
        "path": "wiki/notes/linking.md",
        "newPath": "wiki/notes/linking.md",
        "line": 4,
        "col": 8,
        "old": "concepts/old-page",
        "new": "concepts/sub/new-page",
    } in data["edits"]
    assert (
        wiki.git("rev-parse", "HEAD").strip() == before and wiki.git("status", "--porcelain") == ""
    )


@pytest.mark.parametrize(
    "case", ["exists-at-head", "exists-untracked", "ambiguous", "hijack", "dirty", "generated"]
)
def test_refusals_change_nothing(wiki: Repo, case: str) -> None:
    new = "wiki/concepts/sub/new-page.md"
    if case == "exists-at-head":
        wiki.write(new, "# taken\n")
        wiki.commit("taken")
    elif case == "exists-untracked":
        wiki.write(new, "# mine, not committed\n")
    elif case == "ambiguous":  # another concept page already answers to [[new-page]]
        wiki.write("wiki/concepts/elsewhere/new-page.md", "# New page elsewhere\n")
        wiki.commit("namesake")
    elif case == "hijack":  # [[new-page]] reaches a page by its alias today; the move would take it
        wiki.write("wiki/concepts/other.md", page("Other", "[[new-page]]\n", aliases="[New Page]"))
        wiki.commit("alias")
    elif case == "dirty":  # a page whose links must change has uncommitted edits
        path = wiki.root / "wiki/notes/linking.md"
        path.write_bytes(path.read_bytes() + b"my edit\n")
    elif case == "generated":
        wiki.llmwiki("index", env={"LLMWIKI_EMBEDDING_PROVIDER": "none"})
        wiki.commit("index")
    before = wiki.git("rev-parse", "HEAD").strip()
    status = wiki.git("status", "--porcelain")
    if case == "generated":
        proc = mv(wiki, "wiki/index.md", "wiki/home.md")
    else:
        proc = mv(wiki, "wiki/concepts/old-page.md", new)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    expected = {
        "exists-at-head": "exists at HEAD",
        "exists-untracked": "exists in the work tree",
        "ambiguous": "would be ambiguous",
        "hijack": "resolves to concepts/other today",
        "dirty": "uncommitted changes to wiki/notes/linking.md",
        "generated": "llmwiki's generated file",
    }[case]
    assert expected in proc.stderr and "nothing was changed" in proc.stderr
    assert (
        wiki.git("rev-parse", "HEAD").strip() == before
        and wiki.git("status", "--porcelain") == status
    )


def test_folder_move_with_an_attachment(repo: Repo) -> None:
    repo.write(
        "wiki/ml/intro.md",
        page("Intro", "![diagram](img/d.png) ![[d.png]] [[ml/basics]] [n](../notes/n.md)\n"),
    )
    repo.write("wiki/ml/basics.md", page("Basics", "[[intro]]\n"))
    repo.write("wiki/ml/img/d.png", b"\x89PNG\r\n")
    repo.write("wiki/notes/n.md", "[[ml/intro]] [[basics]] [i](../ml/intro.md) ![[ml/img/d.png]]\n")
    repo.commit("wiki")
    proc = repo.llmwiki("mv", "wiki/ml", "wiki/topics/machine-learning")
    assert proc.returncode == 0, proc.stderr
    assert "(3 files)" in proc.stdout
    assert repo.git("show", "HEAD:wiki/notes/n.md") == (
        "[[topics/machine-learning/intro]] [[basics]] [i](../topics/machine-learning/intro.md) "
        "![[topics/machine-learning/img/d.png]]\n"
    )
    intro = repo.git("show", "HEAD:wiki/topics/machine-learning/intro.md")
    assert "[[topics/machine-learning/basics]] [n](../../notes/n.md)" in intro
    assert (repo.root / "wiki/topics/machine-learning/img/d.png").read_bytes() == b"\x89PNG\r\n"
    assert not (repo.root / "wiki/ml").exists() and repo.git("status", "--porcelain") == ""
    check = json.loads(repo.llmwiki("check", "--json").stdout)
    assert [p["code"] for p in check["problems"]] == []


def test_root_vault_users_index_gets_link_rewrites_only(repo: Repo) -> None:
    home = "# My vault\r\n\r\nStart at [[old-page]] or [[guides/old-page|the guide]].\r\nNothing else changes.\r\n"
    diary = "# Changelog\n\n2026-01-01: started.\n"
    repo.write("index.md", home)
    repo.write("log.md", diary)
    repo.write("guides/old-page.md", "# Old\n")
    repo.write("notes/x.md", "[[old-page]]\n")
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("vault")
    proc = repo.llmwiki("mv", "guides/old-page.md", "guides/fresh.md")
    assert proc.returncode == 0, proc.stderr
    assert (repo.root / "index.md").read_bytes() == home.replace("old-page", "fresh").encode()
    assert (repo.root / "log.md").read_text() == diary  # no link to the page: byte-identical
    assert sorted(repo.git("show", "--no-renames", "--name-only", "--format=", "HEAD").split()) == [
        "guides/fresh.md",
        "guides/old-page.md",
        "index.md",
        "notes/x.md",
    ]
    assert (
        "mv | guides/old-page.md → guides/fresh.md"
        in (repo.root / ".llmwiki" / "log.md").read_text()
    )


def test_a_users_index_without_links_to_the_moved_page_is_said_untouched(repo: Repo) -> None:
    """Issue 36: mv said "llmwiki rewrote only its links" when nothing in index.md changed."""
    home = "# My vault\n\nMy own home page, with no link to the page that moves.\n"
    repo.write("index.md", home)
    repo.write("guides/old-page.md", "# Old\n")
    repo.write("notes/x.md", "[[old-page]]\n")
    repo.commit("vault")
    proc = repo.llmwiki("mv", "guides/old-page.md", "guides/fresh.md")
    assert proc.returncode == 0, proc.stderr
    assert (repo.root / "index.md").read_text() == home
    assert "index.md is your own page: llmwiki left it as it is" in proc.stderr, proc.stderr
    assert "rewrote only its links" not in proc.stderr


def test_generated_index_is_regenerated_and_journal_appended(repo: Repo) -> None:
    repo.write("wiki/concepts/old-page.md", page("Old Page", "text\n"))
    repo.write("wiki/concepts/b.md", page("B", "[[old-page]]\n"))
    repo.llmwiki("index", env={"LLMWIKI_EMBEDDING_PROVIDER": "none"})
    repo.write(
        "log.md", "# Log\n\n## [2026-01-01T00:00:00Z] index | built\n- Saved: [[old-page]]\n\n"
    )
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("wiki")
    assert "[[old-page|Old Page]]" in (repo.root / "wiki/index.md").read_text()
    proc = repo.llmwiki("mv", "wiki/concepts/old-page.md", "wiki/concepts/new-page.md")
    assert proc.returncode == 0, proc.stderr
    files = repo.git("show", "--no-renames", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == [
        "log.md",
        "wiki/concepts/b.md",
        "wiki/concepts/new-page.md",
        "wiki/concepts/old-page.md",
        "wiki/index.md",
    ]
    assert "[[new-page|Old Page]]" in repo.git("show", "HEAD:wiki/index.md")
    log = repo.git("show", "HEAD:log.md")  # outside the wiki/ folder: history, not a page, kept
    assert (
        "- Saved: [[old-page]]" in log
        and "mv | wiki/concepts/old-page.md → wiki/concepts/new-page.md" in log
    )
    assert repo.git("status", "--porcelain") == ""


def test_a_rename_already_made_is_finished(wiki: Repo) -> None:
    """The gate's advice: after `git mv`, the hook refuses the commit and names `llmwiki mv`,
    which commits the rename (with the page as it stands) and the rewritten links."""
    wiki.git("mv", "wiki/concepts/old-page.md", "wiki/concepts/new-page.md")
    hook = wiki.llmwiki("check", "--staged", "--base", "HEAD")
    assert hook.returncode == 1
    assert "run: llmwiki mv wiki/concepts/old-page.md wiki/concepts/new-page.md" in hook.stderr
    hints = json.loads(wiki.llmwiki("check", "--staged", "--base", "HEAD", "--json").stdout)[
        "renames"
    ]
    assert hints == [
        {
            "from": "wiki/concepts/old-page.md",
            "to": "wiki/concepts/new-page.md",
            "broken": 10,
            "command": "llmwiki mv wiki/concepts/old-page.md wiki/concepts/new-page.md",
        }
    ]
    proc = mv(wiki, "wiki/concepts/old-page.md", "wiki/concepts/new-page.md")
    assert proc.returncode == 0, proc.stderr
    assert "already renamed" in proc.stderr
    assert head_bytes(wiki, "wiki/notes/linking.md") == linking(
        {
            **NEW,
            "P": "concepts/new-page",
            "W": "wiki/concepts/new-page",
            "R": "../concepts/new-page.md",
        }
    )
    assert wiki.git("status", "--porcelain") == ""
    check = json.loads(wiki.llmwiki("check", "--json").stdout)["problems"]
    assert {p["code"] for p in check} == {
        "broken-link",
        "invalid-utf8",
    }  # other.md's, and the Latin-1 byte


POINTS = ["built", "journal", "ref", "file:1", "file:2", "files", "index", "refs"]


@pytest.mark.parametrize("point", POINTS)
def test_kill_9_during_mv_leaves_the_old_or_the_whole_new_state(wiki: Repo, point: str) -> None:
    before = wiki.git("rev-parse", "HEAD").strip()
    old_bytes = (wiki.root / "wiki/notes/linking.md").read_bytes()
    killed = wiki.llmwiki_process(
        "mv",
        "wiki/concepts/old-page.md",
        "wiki/concepts/sub/new-page.md",
        env={"LLMWIKI_TEST_KILL_AT": point},
    )
    assert killed.returncode == -9, killed.stderr
    after = wiki.llmwiki("check")  # any next command finishes or rolls back the write
    assert after.returncode in (0, 1) and "Traceback" not in after.stderr, after.stderr
    assert wiki.git("status", "--porcelain", "--untracked-files=all") == ""
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=wiki.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stderr
    if wiki.git("rev-parse", "HEAD").strip() == before:
        assert (wiki.root / "wiki/notes/linking.md").read_bytes() == old_bytes
        assert (wiki.root / "wiki/concepts/old-page.md").exists()
    else:
        assert wiki.git("rev-parse", "HEAD~1").strip() == before
        assert (wiki.root / "wiki/notes/linking.md").read_bytes() == linking(NEW)
        assert not (wiki.root / "wiki/concepts/old-page.md").exists()
    assert not list(wiki.root.rglob(".llmwiki-*.tmp"))


def test_the_gate_names_a_rename_made_with_edits(wiki: Repo) -> None:
    """A rename with an edit has no blob in common with the old page: git's similarity
    (-M) pairs them, and the hint still names the move."""
    wiki.git("mv", "wiki/concepts/old-page.md", "wiki/concepts/renamed.md")
    with open(wiki.root / "wiki/concepts/renamed.md", "a", encoding="utf-8") as handle:
        handle.write("one more line\n")
    wiki.git("add", "-A")
    hook = wiki.llmwiki("check", "--staged", "--base", "HEAD")
    assert "run: llmwiki mv wiki/concepts/old-page.md wiki/concepts/renamed.md" in hook.stderr
    wiki.git("rm", "-q", "--cached", "wiki/concepts/renamed.md")  # a deletion alone: no hint
    assert "run: llmwiki mv" not in wiki.llmwiki("check", "--staged", "--base", "HEAD").stderr
