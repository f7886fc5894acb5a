"""`llmwiki ingest`: files inside the repository become sources/<slug>.md in one commit; bad
input is refused with a clear error and writes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from llmwiki_git.compiler import convert

from ..conftest import Repo, page
from .minipdf import minimal_pdf

USER_INDEX = "# My vault\n\nMy own home page, written by hand. See [[alpha]].\n"
USER_LOG = "# What I did\n\nMy own journal.\n"


@pytest.fixture(params=["wiki", "root"])
def layout(request: pytest.FixtureRequest, repo: Repo) -> str:
    """A committed wiki in each layout users have: a wiki/ folder, or pages at the root
    beside the user's own index.md and log.md (which llmwiki must never rewrite)."""
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    if request.param == "root":
        repo.write("index.md", USER_INDEX)
        repo.write("log.md", USER_LOG)
    repo.commit("wiki")
    return request.param


def _head(repo: Repo) -> str:
    return repo.git("rev-parse", "HEAD").strip()


def _meta(text: str) -> dict[str, object]:
    head = text.split("---\n", 2)[1]
    loaded = yaml.safe_load(head)
    assert isinstance(loaded, dict)
    return loaded


def test_markdown_html_and_pdf_become_sources_in_one_commit(repo: Repo, layout: str) -> None:
    repo.write(
        "inbox/notes.md",
        "---\ntitle: Field notes\ntags: [trip]\n---\n# Notes\n\nWe saw [[nowhere]].\n",
    )
    repo.write(
        "inbox/article.html",
        "<html><head><title>An article</title><style>p{}</style>"
        "<script>track()</script></head><body><h1>Heading</h1>"
        "<p>Some <b>bold</b> text.</p></body></html>",
    )
    (repo.root / "inbox/paper.pdf").write_bytes(
        minimal_pdf(["Trees hold blobs.", "Blobs hold bytes."], "A paper")
    )
    before = _head(repo)
    proc = repo.llmwiki(
        "ingest", "inbox/notes.md", "inbox/article.html", "inbox/paper.pdf", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [s["source"] for s in out["sources"]] == [
        "sources/notes.md",
        "sources/article.md",
        "sources/paper.md",
    ]
    assert {s["status"] for s in out["sources"]} == {"added"}
    assert repo.git("rev-parse", "HEAD~1").strip() == before  # exactly one commit
    changed = set(repo.git("diff", "--name-only", before, "HEAD").split())
    assert {"sources/notes.md", "sources/article.md", "sources/paper.md"} <= changed
    notes = (repo.root / "sources/notes.md").read_text()
    meta = _meta(notes)
    assert meta["title"] == "Field notes" and meta["tags"] == [
        "trip"
    ]  # the file's own frontmatter is kept
    assert (
        meta["originalName"] == "notes.md"
        and meta["sourceType"] == "markdown"
        and meta["truncated"] is False
    )
    assert notes.endswith("# Notes\n\nWe saw [[nowhere]].\n")  # the body as it was
    article = (repo.root / "sources/article.md").read_text()
    assert (
        _meta(article)["title"] == "An article" and "# Heading" in article and "**bold**" in article
    )
    assert "track()" not in article and "p{}" not in article
    pdf = (repo.root / "sources/paper.md").read_text()
    assert _meta(pdf)["sourceType"] == "pdf" and _meta(pdf)["title"] == "A paper"
    assert "Trees hold blobs.\nBlobs hold bytes." in pdf
    assert _meta(pdf)["originalBytes"] == (repo.root / "inbox/paper.pdf").stat().st_size
    if layout == "root":  # the user's own files are never rewritten, and sources are never pages
        assert (repo.root / "index.md").read_text() == USER_INDEX
        assert (repo.root / "log.md").read_text() == USER_LOG
        assert not (changed & {"index.md", "log.md"})
    else:
        assert "ingest | 3 sources" in (repo.root / "log.md").read_text()
    check = repo.llmwiki(
        "check", "--json"
    )  # [[nowhere]] in a source is no broken link: sources are not pages
    assert not [p for p in json.loads(check.stdout)["problems"] if p["path"].startswith("sources/")]
    assert repo.git("status", "--porcelain", "--", "sources") == ""


def test_the_same_content_twice_is_a_no_op(repo: Repo, layout: str) -> None:
    repo.write("inbox/a.txt", "Plain text source.\n")
    first = repo.llmwiki("ingest", "inbox/a.txt")
    assert first.returncode == 0, first.stderr
    head = _head(repo)
    again = repo.llmwiki("ingest", "inbox/a.txt")
    assert (
        again.returncode == 0 and "Unchanged" in again.stdout and "Nothing changed" in again.stderr
    )
    assert _head(repo) == head
    repo.write("inbox/a.txt", "Plain text source, revised.\n")
    third = repo.llmwiki("ingest", "inbox/a.txt")
    assert third.returncode == 0 and "Updated" in third.stdout
    assert repo.git("rev-parse", "HEAD~1").strip() == head


def test_past_the_limit_a_source_is_cut_and_says_so(repo: Repo) -> None:
    repo.commit("empty")
    line = "word " * 19 + "end\n"  # 99 characters a line
    repo.write("inbox/long.txt", line * 1_200)
    proc = repo.llmwiki("ingest", "inbox/long.txt", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sources"][0]["truncated"] is True
    text = (repo.root / "sources/long.md").read_text()
    meta = _meta(text)
    assert meta["truncated"] is True and meta["originalChars"] == len(line) * 1_200
    body = text.split("---\n", 2)[2].lstrip("\n")
    assert len(body) <= convert.MAX_SOURCE_CHARS and body.endswith("end\n")  # cut at a line end


@pytest.mark.parametrize(
    "case",
    [
        "binary",
        "empty",
        "symlink",
        "oversize",
        "latin1",
        "hidden",
        "source",
        "same-slug",
        "missing",
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    repo.write("inbox/good.md", "# Good\n\nA good source.\n")
    bad = "inbox/bad.md"
    if case == "binary":
        repo.write(bad, b"\x89PNG\r\n\x1a\n\0\0\0")
    elif case == "empty":
        repo.write(bad, " \n\n")
    elif case == "symlink":
        os.symlink(repo.root / "inbox/good.md", repo.root / bad)
    elif case == "oversize":
        monkeypatch.setattr("llmwiki_git.compiler.ingest.MAX_INPUT_BYTES", 64)
        repo.write(bad, "x" * 100)
    elif case == "latin1":
        repo.write(bad, "Caf\xe9\n".encode("latin-1"))
    elif case == "hidden":
        bad = ".llmwiki/secret.md"
        repo.write(bad, "# Secret\n")
    elif case == "source":
        bad = "sources/raw.md"
        repo.write(bad, "# Raw\n")
    elif case == "same-slug":
        bad = "other/good.md"
        repo.write(bad, "# Another good\n")
    elif case == "missing":
        bad = "inbox/nope.md"
    head = _head(repo)
    proc = repo.llmwiki("ingest", "inbox/good.md", bad)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "cannot ingest" in proc.stderr and "nothing was written" in proc.stderr, proc.stderr
    expected = {
        "binary": "binary",
        "empty": "empty",
        "symlink": "symbolic link",
        "oversize": "limit",
        "latin1": "not UTF-8",
        "hidden": ".llmwiki",
        "source": "already in sources/",
        "same-slug": "would become sources/good.md",
        "missing": "cannot read",
    }[case]
    assert expected in proc.stderr
    assert _head(repo) == head
    assert not (repo.root / "sources/good.md").exists()


def test_a_sources_folder_leading_out_of_the_repository_is_never_written_through(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, repo.root / "sources")
    repo.write("inbox/a.md", "# A\n")
    head = _head(repo)
    proc = repo.llmwiki("ingest", "inbox/a.md")
    assert proc.returncode == 1 and "symlink" in proc.stderr, proc.stderr
    assert _head(repo) == head and list(outside.iterdir()) == []


def test_an_uncommitted_file_where_the_source_goes_is_kept(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    repo.write("sources/a.md", "my own draft\n")  # untracked, where inbox/a.md would go
    repo.write("inbox/a.md", "# A\n")
    head = _head(repo)
    proc = repo.llmwiki("ingest", "inbox/a.md")
    assert proc.returncode == 1 and "uncommitted changes to sources/a.md" in proc.stderr, (
        proc.stderr
    )
    assert _head(repo) == head and (repo.root / "sources/a.md").read_text() == "my own draft\n"


def test_a_damaged_pdf_is_refused(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    (repo.root / "inbox").mkdir()
    (repo.root / "inbox/broken.pdf").write_bytes(minimal_pdf(["text"])[:60])
    proc = repo.llmwiki("ingest", "inbox/broken.pdf")
    assert proc.returncode == 1 and "cannot ingest inbox/broken.pdf" in proc.stderr, proc.stderr
