from __future__ import annotations

import json

from ..conftest import Repo, page


def test_links_report_from_stdin_and_file(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", page("Alpha", "x"))
    proc = repo.llmwiki_process(
        "links", input="See [[alpha]] and [[Missing Page]] and [[alpha|again]].\n"
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "Answer citations: 1 resolved, 0 pending, 1 broken",
        "resolved: alpha -> concepts/alpha",
        "broken: missing-page",
    ]
    draft = repo.write("draft.md", "---\ntitle: x\n---\nOnly [[alpha]].\n")
    proc = repo.llmwiki_process("links", str(draft), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {
        "version": 1,
        "citations": [{"target": "alpha", "status": "resolved", "pageId": "concepts/alpha"}],
    }


def test_links_none_recognized(repo: Repo) -> None:
    proc = repo.llmwiki("links", input="no links at all, `[[code]]` does not count\n")
    assert proc.returncode == 0
    assert proc.stdout == "Answer citations: none recognized (not a factual-support assessment)\n"


def test_links_missing_file_is_usage_error(repo: Repo) -> None:
    proc = repo.llmwiki("links", "nope.md")
    assert proc.returncode == 2 and "nope.md" in proc.stderr
