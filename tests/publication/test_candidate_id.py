"""One candidate-id rule for the review commands and the Action (they disagreed before:
review accepted a leading "-" and DEL, the Action refused them)."""

from __future__ import annotations

import pytest

from llmwiki_git import action
from llmwiki_git.errors import UsageError
from llmwiki_git.gitstore.git import Git
from llmwiki_git.publication.candidates import check_id, is_candidate_id

from ..conftest import Repo


@pytest.mark.parametrize(
    "cid",
    [
        "-x-0123abcd",
        "x\x7fy-0123abcd",
        ".x-0123abcd",
        "a..b-0123abcd",
        "x.lock-0123abcd.lock",
        "what is-0123abcd",
        "x-0123abc",
        "x-0123ABCD",
    ],
)
def test_malformed_ids_are_refused_by_review_and_the_action(
    repo: Repo, cid: str, monkeypatch
) -> None:
    assert not is_candidate_id(cid)
    with pytest.raises(UsageError):
        check_id(Git(repo.root), cid, must_exist=False)
    monkeypatch.setenv("LLMWIKI_HEAD_REF", f"llmwiki/review/{cid}")
    with pytest.raises(UsageError, match="does not name a review candidate"):
        action.candidate(dict(__import__("os").environ))


@pytest.mark.parametrize(
    "cid", ["what-is-a-blob-0123abcd", "zeta page-0123abcd".replace(" ", "-"), "été-deadbeef"]
)
def test_well_formed_ids_pass_both(repo: Repo, cid: str) -> None:
    assert is_candidate_id(cid)
    assert check_id(Git(repo.root), cid, must_exist=False) is True
