"""`llmwiki query` against a model that degenerates (issue 40): a real server on 127.0.0.1
streams one paragraph over and over; the answer is cut, what was printed is kept and marked
truncated, the citation report still runs, and the server sees the connection close."""

from __future__ import annotations

import json
import time

import pytest

from ..conftest import Repo, copy_demo
from ..providers.servers_stream import replies, sse, sse_reply, stream_server

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
PARAGRAPH = "A blob stores the bytes of one file [[blobs]], and a tree lists blobs by name. "
REPEATS = 3000


@pytest.fixture
def demo(repo: Repo) -> Repo:
    copy_demo(repo.root)
    repo.commit("demo wiki")
    assert repo.llmwiki("index", env=FAST).returncode == 0
    return repo


def degenerate() -> list[object]:
    """An OpenAI-compatible stream saying PARAGRAPH REPEATS times (a minute's worth)."""

    def delta(text: str) -> bytes:
        return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})

    pieces: list[object] = [delta("Blobs hold file contents. ")]
    for _ in range(REPEATS):
        pieces += [delta(PARAGRAPH), lambda: time.sleep(0.02)]
    return [*pieces, sse("[DONE]")]


def env(url: str) -> dict[str, str]:
    return {**FAST, "OPENAI_BASE_URL": f"{url}/v1", "LLMWIKI_PROVIDER": "openai"}


def test_a_repeating_answer_is_cut_kept_marked_and_still_reported(demo: Repo) -> None:
    with stream_server(replies(sse_reply(degenerate()))) as (url, seen):  # type: ignore[arg-type]
        proc = demo.llmwiki_process("query", "what does a blob store?", env=env(url))
        assert seen[0].client_closed.wait(10)  # the server stopped generating
    assert proc.returncode == 0, proc.stderr
    assert seen[0].written < 20  # a few paragraphs, not 3,000
    out = proc.stdout
    assert out.startswith("Blobs hold file contents. " + PARAGRAPH)
    assert "[answer truncated: repetition]" in out
    assert "Answer citations: 1 resolved" in out and "resolved: blobs -> concepts/blobs" in out
    assert "warning: answer-truncated: the model repeated the same 16 word(s)" in proc.stderr
    assert "the request stopped" in proc.stderr


def test_json_marks_the_cut_and_save_refuses_a_truncated_answer(demo: Repo) -> None:
    with stream_server(replies(sse_reply(degenerate()))) as (url, _):  # type: ignore[arg-type]
        proc = demo.llmwiki("query", "what does a blob store?", "--json", env=env(url))
        saved = demo.llmwiki("query", "what does a blob store?", "--save", env=env(url))
    out = json.loads(proc.stdout)
    assert out["truncated"]["reason"] == "repetition"
    assert out["answer"].count(PARAGRAPH) >= 3 and out["answerCitations"]["citations"]
    assert saved.returncode == 1 and "the answer was cut short (repetition)" in saved.stderr
    assert demo.git("status", "--porcelain") == ""


def test_an_answer_stopped_at_the_output_limit_is_marked_too(demo: Repo) -> None:
    def delta(text: str, finish: str | None = None) -> bytes:
        return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})

    stream = [delta("Blobs store bytes [[blobs]] and"), delta("", "length"), sse("[DONE]")]
    with stream_server(replies(sse_reply(stream))) as (url, seen):  # type: ignore[arg-type]
        proc = demo.llmwiki(
            "query", "what does a blob store?", env={**env(url), "LLMWIKI_MAX_TOKENS": "answer=12"}
        )
    assert seen[0].json["max_tokens"] == 12
    assert proc.returncode == 0 and "[answer truncated: max-tokens]" in proc.stdout
    assert (
        "raise LLMWIKI_MAX_TOKENS" in proc.stderr and "Answer citations: 1 resolved" in proc.stdout
    )


def test_ctrl_c_during_an_answer_closes_the_connection(demo: Repo) -> None:
    import os
    import signal
    import subprocess
    import sys
    import threading

    started = threading.Event()
    ping: list[object] = [b": generating\n\n", lambda: time.sleep(0.05)]  # SSE comments
    slow = [*degenerate()[:1], started.set, *ping * 600]
    with stream_server(replies(sse_reply(slow))) as (url, seen):  # type: ignore[arg-type]
        proc = subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", "query", "what does a blob store?"],
            cwd=demo.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env(url)},
        )
        assert started.wait(60)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert seen[0].client_closed.wait(10)  # the server stopped generating
    assert proc.returncode == 130, err
    assert out.startswith("Blobs hold file contents.") and "Interrupted" in err
    assert seen[0].written < 300  # its 30 s of "generation" were not waited for
