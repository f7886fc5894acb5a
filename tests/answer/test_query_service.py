"""The query and review services return values (no printing): what the CLI and MCP render."""

from __future__ import annotations

import pytest

from llmwiki_git.answer.query import QueryResult
from llmwiki_git.answer.service import pending_index, run_query
from llmwiki_git.review.service import (
    CandidateRow,
    CandidateView,
    list_view,
    reject_candidate,
    show_view,
)
from llmwiki_git.review.stage import Staged, stage_candidate
from llmwiki_git.wiki.citations import BROKEN, PENDING, RESOLVED, Citation
from llmwiki_git.workspace import Workspace

from ..conftest import Repo
from ..servers import serve
from .test_query_cli import demo, head, openai_env, sse_answer  # noqa: F401 - the fixture

ANSWER = "A blob stores bytes. See [[blobs]], [[trees]] and [[no-such-page]]."


def test_run_query_returns_the_result_and_streams_tokens(
    demo: Repo,
    monkeypatch: pytest.MonkeyPatch,  # noqa: F811
    capfd: pytest.CaptureFixture[str],
) -> None:
    events: list[tuple[str, str]] = []
    with serve(sse_answer(ANSWER)) as (url, _):
        for key, value in openai_env(url).items():
            monkeypatch.setenv(key, value)
        result = run_query(
            Workspace.open(demo.root),
            "What does a blob store?",
            save=False,
            lang=None,
            debug=True,
            provider=None,
            on_start=lambda r: events.append(("start", ",".join(r.page_ids))),
            on_token=lambda t: events.append(("token", t)),
        )
    assert isinstance(result, QueryResult)
    assert result.answer == ANSWER and result.exit_code == 0 and result.provider == "openai"
    assert events[0] == ("start", ",".join(result.page_ids)) and "concepts/blobs" in result.page_ids
    tokens = [t for kind, t in events[1:] if kind == "token"]
    assert (
        len(tokens) > 2 and "".join(tokens) == ANSWER
    )  # streamed piece by piece, as the server sent it
    assert result.citations == [
        Citation("blobs", RESOLVED, "concepts/blobs"),
        Citation("trees", RESOLVED, "concepts/trees"),
        Citation("no-such-page", BROKEN),
    ]
    assert result.debug is not None and result.saved is None and result.refusal is None
    assert capfd.readouterr() == ("", "")  # the service prints nothing


def test_a_refused_save_is_a_value_with_exit_code_1_and_nothing_written(
    demo: Repo,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = head(demo)
    notes: list[str] = []
    with serve(sse_answer(ANSWER)) as (url, _):
        for key, value in openai_env(url).items():
            monkeypatch.setenv(key, value)
        result = run_query(
            Workspace.open(demo.root),
            "What does a blob store?",
            save=True,
            lang=None,
            debug=False,
            provider=None,
            note=notes.append,
        )
    assert (
        result.exit_code == 1 and result.refusal is not None and result.refusal["code"] == "broken"
    )
    assert result.refusal["targets"] == ["no-such-page"] and result.saved is None
    assert head(demo) == before


def test_review_services_return_views(demo: Repo) -> None:  # noqa: F811
    ws = Workspace.open(demo.root)
    staged2 = stage_candidate(ws, "What is a tree?", "A tree lists blobs. See [[trees]].", None)
    assert isinstance(staged2, Staged)
    staged = stage_candidate(
        ws,
        "What is a blob?",
        "A blob stores bytes. See [[blobs]] and [[what-is-a-tree]].",
        pending_index(ws),
    )  # a link to the other candidate's page: pending
    assert isinstance(staged, Staged)
    rows = list_view(ws)
    assert all(isinstance(r, CandidateRow) for r in rows)
    assert {r.id: r.citation_status for r in rows} == {
        staged.candidate_id: "1 resolved, 1 pending, 0 broken",
        staged2.candidate_id: "1 resolved, 0 pending, 0 broken",
    }
    view = show_view(ws, staged.candidate_id)
    assert isinstance(view, CandidateView) and view.question == "What is a blob?"
    assert view.verdict.citations == [
        Citation("blobs", RESOLVED, "concepts/blobs"),
        Citation("what-is-a-tree", PENDING, None, (staged2.candidate_id,)),
    ]
    assert view.to_json()["verdict"]["citations"][1] == {
        "target": "what-is-a-tree",
        "status": "pending",
        "candidateIds": [staged2.candidate_id],
    }
    done = reject_candidate(ws, staged2.candidate_id)
    assert done.ref == f"refs/llmwiki/rejected/{staged2.candidate_id}"
    assert [r.id for r in list_view(ws)] == [staged.candidate_id]
