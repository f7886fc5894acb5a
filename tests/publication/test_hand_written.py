"""Issue 22, smaller finding: `query --save` (and `--save --review`, and approving an answer)
never replaces a hand-written `queries/<slug>.md` -- a page there without `type: query` in
its frontmatter -- and says why, before the model is asked. A saved answer is still
replaced. Both layouts."""

from __future__ import annotations

import pytest

from ..conftest import Repo
from ..test_security import demo_in

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
MINE = "---\ntitle: What is a blob\n---\nMy own notes on blobs, written by hand. See [[blobs]].\n"


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_hand_written_query_page_is_never_replaced_by_an_answer(repo: Repo, layout: str) -> None:
    prefix = demo_in(repo, layout)
    mine = repo.root / f"{prefix}queries" / "what-is-a-blob.md"
    repo.write(f"{prefix}queries/what-is-a-blob.md", MINE)
    tip = repo.commit("my own page")
    for review in ([], ["--review"]):
        proc = repo.llmwiki("query", "what is a blob?", "--save", *review, env=FAST)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "not a saved answer" in proc.stderr and "type: query" in proc.stderr, proc.stderr
        assert mine.read_text() == MINE
        assert repo.git("rev-parse", "HEAD").strip() == tip
        assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    # a saved answer at that name is llmwiki's to replace
    repo.write(
        f"{prefix}queries/what-is-a-blob.md", MINE.replace("---\ntitle", "---\ntype: query\ntitle")
    )
    repo.commit("now a saved answer")
    proc = repo.llmwiki("query", "what is a blob?", "--save", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert "written by hand" not in mine.read_text()
