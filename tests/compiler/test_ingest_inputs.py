"""`llmwiki ingest` takes what people have (issue 36, item 6): files anywhere, folders
(recursively, by extension), http(s) URLs (real server on 127.0.0.1: content type, size and
time limits); and what it keeps out (issue 34): C1 control characters (removed, and said
so), non-http(s) link targets of HTML, a markdown file's own frontmatter as a second block;
and it names every path to git in batches (no "Argument list too long")."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..conftest import Repo, page
from ..servers import serve

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def ingest(repo: Repo, *args: str) -> dict[str, Any]:
    proc = repo.llmwiki("ingest", "--json", *args, env=FAST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert isinstance(out, dict)
    return out


def _meta(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(loaded, dict)
    return loaded


def test_a_file_outside_the_repository_is_ingested_as_named(
    repo: Repo, prefix: str, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "downloads"
    elsewhere.mkdir()
    (elsewhere / "Trip Notes.md").write_text("# Trip notes\n\nWe walked along the river.\n")
    out = ingest(repo, str(elsewhere / "Trip Notes.md"))
    assert [s["source"] for s in out["sources"]] == ["sources/trip-notes.md"]
    assert "We walked along the river." in (repo.root / "sources/trip-notes.md").read_text()
    os.symlink(elsewhere / "Trip Notes.md", elsewhere / "link.md")
    refused = repo.llmwiki("ingest", str(elsewhere / "link.md"), env=FAST)
    assert refused.returncode == 1 and "symbolic link" in refused.stderr


def test_a_folder_is_ingested_recursively_by_extension(
    repo: Repo, prefix: str, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    (docs / "guide" / "deep").mkdir(parents=True)
    (docs / ".hidden").mkdir()
    (docs / "readme.md").write_text("# Readme\n\nRead me first.\n")
    (docs / "guide" / "intro.txt").write_text("An introduction in plain text.\n")
    (docs / "guide" / "deep" / "page.html").write_text("<p>Deep inside the guide.</p>")
    (docs / "guide" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0")  # not taken
    (docs / ".hidden" / "secret.md").write_text("# Secret\n")  # a hidden folder: left out
    os.symlink(docs / "readme.md", docs / "guide" / "again.md")  # a symlink: left out
    out = ingest(repo, str(docs))
    assert sorted(s["source"] for s in out["sources"]) == [
        "sources/intro.md",
        "sources/page.md",
        "sources/readme.md",
    ]
    (tmp_path / "empty").mkdir()
    refused = repo.llmwiki("ingest", str(tmp_path / "empty"), env=FAST)
    assert refused.returncode == 1 and "no file ingest takes" in refused.stderr


def test_a_folder_inside_the_repository_leaves_sources_and_git_alone(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/a.md", "# A\n\nThe first note.\n")
    assert ingest(repo, "inbox")["sources"][0]["source"] == "sources/a.md"
    repo.write("inbox/b.md", "# B\n\nThe second note.\n")
    out = ingest(repo, ".")  # the whole repository: not sources/ itself, not .git
    assert not any(s["file"].startswith(("sources", "./sources", ".git")) for s in out["sources"])


PAGE = (
    b"<html><head><title>Fetched</title></head><body><p>A page served over HTTP.</p></body></html>"
)


def test_a_url_is_fetched_with_its_content_type_checked_and_limits(
    repo: Repo, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handler(path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        if path == "/docs/article":
            return 200, {"content-type": "text/html; charset=utf-8"}, PAGE
        if path == "/logo.png":
            return 200, {"content-type": "image/png"}, b"\x89PNG"
        if path == "/big.txt":
            return 200, {"content-type": "text/plain"}, b"x" * 5000
        if path == "/slow.txt":
            time.sleep(3)
            return 200, {"content-type": "text/plain"}, b"late"
        return 404, {"content-type": "text/plain"}, b"no"

    with serve(handler) as (url, _):
        out = ingest(repo, f"{url}/docs/article")
        assert out["sources"][0]["source"] == "sources/article.md"
        text = (repo.root / "sources/article.md").read_text()
        assert _meta(text)["url"] == f"{url}/docs/article" and _meta(text)["title"] == "Fetched"
        assert "A page served over HTTP." in text
        for path, expected in (("/logo.png", "image/png"), ("/missing", "HTTP 404")):
            proc = repo.llmwiki("ingest", f"{url}{path}", env=FAST)
            assert proc.returncode == 1 and expected in proc.stderr, proc.stderr
        monkeypatch.setattr("llmwiki_git.compiler.inputs.MAX_INPUT_BYTES", 1000)
        proc = repo.llmwiki("ingest", f"{url}/big.txt", env=FAST)
        assert proc.returncode == 1 and "limit" in proc.stderr, proc.stderr
        monkeypatch.setattr("llmwiki_git.compiler.inputs.URL_TIMEOUT", 0.5)
        started = time.monotonic()
        proc = repo.llmwiki("ingest", f"{url}/slow.txt", env=FAST)
        assert proc.returncode == 1 and "could not be fetched" in proc.stderr, proc.stderr
        assert time.monotonic() - started < 2.5
    assert not (repo.root / "sources/big.md").exists()


def test_c1_controls_are_removed_said_so_and_never_stop_a_compile(repo: Repo, prefix: str) -> None:
    repo.write("inbox/ctl.txt", "A line with a C1 control \u0090 here and \u009b31m there.\n")
    repo.write("inbox/entity.html", "<p>An entity &#144; in HTML, and some text after it.</p>")
    repo.write("inbox/fine.md", "# Fine\n\nA source with nothing odd in it at all.\n")
    proc = repo.llmwiki("ingest", "inbox/ctl.txt", "inbox/entity.html", "inbox/fine.md", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "control character" in proc.stderr and "inbox/ctl.txt" in proc.stderr
    assert "inbox/entity.html" in proc.stderr
    for name in ("ctl", "entity"):
        text = (repo.root / f"sources/{name}.md").read_text()
        assert not any(0x80 <= ord(c) <= 0x9F for c in text), text
    compiled = repo.llmwiki("compile", env=FAST)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert "Staged compile-" in compiled.stdout


def test_non_http_link_targets_are_neutralized_at_html_ingest(repo: Repo, prefix: str) -> None:
    repo.write(
        "inbox/evil.html",
        "<p>Click <a href='javascript:alert(1)'>one</a>, "
        "<a href='JaVaScRiPt&#58;alert(2)'>two</a>, <a href='java\tscript:alert(3)'>three</a>, "
        "<a href='data:text/html;base64,PHNjcmlwdD4='>four</a>, "
        "<a href='vbscript:msgbox'>five</a> and <a href='https://example.org/'>a web page</a> "
        "in this rather long first paragraph.</p>",
    )
    ingest(repo, "inbox/evil.html")
    text = (repo.root / "sources/evil.md").read_text()
    for bad in ("javascript", "data:text", "vbscript", "alert"):
        assert bad not in text.lower(), text
    assert "one" in text and "five" in text and "(https://example.org/)" in text
    proc = repo.llmwiki("compile", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    cid = json.loads(proc.stdout)["candidate"]["id"]
    note = repo.git("show", f"llmwiki/review/{cid}:{prefix}concepts/evil.md")
    assert "javascript" not in note.lower() and "data:" not in note


def test_a_markdown_sources_own_frontmatter_is_never_a_second_block(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/blank.md", "\n\n---\ntitle: After blank lines\n---\n# Body\n\nThe text.\n")
    repo.write("inbox/broken.md", "---\ntitle: [unclosed\n---\n# Broken\n\nThe body text.\n")
    ingest(repo, "inbox/blank.md", "inbox/broken.md")
    for name, title in (("blank", "After blank lines"), ("broken", "Broken")):
        text = (repo.root / f"sources/{name}.md").read_text()
        assert text.count("---\n") == 2, text  # one frontmatter block: ours
        assert _meta(text)["title"] == title
    broken = _meta((repo.root / "sources/broken.md").read_text())
    assert broken["originalFrontmatter"] == "title: [unclosed\n"  # kept, as text


@pytest.mark.slow
def test_thousands_of_files_are_named_to_git_in_batches(repo: Repo, tmp_path: Path) -> None:
    """Under the smallest argument limit Linux has (128 KiB: a 512 KiB stack), 1,400 files
    with long names (their slugs cut at 80 characters) are some 150 KB of paths: one git
    command line for all of them fails."""
    repo.write("wiki/concepts/alpha.md", page("Alpha", "A."))
    repo.commit("wiki")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    stem = "a-document-with-a-rather-long-file-name-as-exported-by-some-tools-of-ours"
    for i in range(1400):
        (inbox / f"{i:04d}-{stem}.txt").write_text(f"Document {i}.\n")

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (512 * 1024, resource.RLIM_INFINITY))

    proc = subprocess.run(
        [sys.executable, "-m", "llmwiki_git", "ingest", str(inbox)],
        cwd=repo.root,
        capture_output=True,
        text=True,
        env={**os.environ, **FAST},
        preexec_fn=small_stack,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = repo.git("ls-tree", "--name-only", "HEAD", "sources/").split()
    assert len(listed) == 1400
