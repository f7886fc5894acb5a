"""`llmwiki compile` against a small local model (issue 40): the JSON steps send their
schema as structured output with each step's output limit, a reply that does not validate
is asked again once with the validation error, a second invalid one is refused showing what
was received and what the run spent, and a server refusing ``response_format`` gets the
prose request instead. A real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from llmwiki_git.compiler.concepts import EXTRACT_SYSTEM, PAGE_SYSTEM
from llmwiki_git.compiler.modelask import EXTRACT_SCHEMA, PAGE_SCHEMA
from llmwiki_git.providers.limits import STEPS

from ..conftest import Repo
from ..servers import json_response, serve

SOURCE = "# Raft\n\nRaft elects a leader that replicates a log.\nA follower without heartbeats starts an election.\n"
CONCEPTS = {"concepts": [{"name": "Leader election", "summary": "How Raft picks a leader."}]}
PAGE = {
    "title": "Leader election",
    "summary": "How Raft picks a leader.",
    "body": "Raft elects a leader ^[raft.md:3-3].",
}


class SmallModel:
    """Answers compile's two prompts; ``bad`` replies (in order) come first for a step."""

    def __init__(self, bad: dict[str, list[str]] | None = None, refuse_schema: bool = False):
        self.bad = bad or {}
        self.refuse_schema = refuse_schema
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        with self.lock:
            self.bodies.append(body)
        if self.refuse_schema and "response_format" in body:
            return json_response(
                {"error": {"message": "response_format: json_schema is not supported"}}, 400
            )
        system = body["messages"][0]["content"]
        step = "extract" if system == EXTRACT_SYSTEM else "page"
        assert system in (EXTRACT_SYSTEM, PAGE_SYSTEM)
        with self.lock:
            queue = self.bad.get(step) or []
            content = queue.pop(0) if queue else json.dumps(CONCEPTS if step == "extract" else PAGE)
        return json_response(
            {
                "choices": [{"index": 0, "message": {"content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5},
            }
        )


@pytest.fixture(params=["wiki", "root"])
def sources(request: pytest.FixtureRequest, repo: Repo) -> Repo:
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(f"{prefix}concepts/blob.md", "---\ntitle: Blob\n---\nA blob holds bytes.\n")
    repo.write("sources/raft.md", SOURCE)
    repo.commit("wiki and a source")
    return repo


def compile_(repo: Repo, url: str, *args: str, **env: str) -> Any:
    return repo.llmwiki(
        "compile",
        *args,
        env={
            "OPENAI_BASE_URL": f"{url}/v1",
            "LLMWIKI_MODEL": "gemma-3-270m",
            "LLMWIKI_EMBEDDING_PROVIDER": "none",
            **env,
        },
    )


def test_schema_and_limits_are_sent_and_an_invalid_reply_is_asked_again_once(
    sources: Repo,
) -> None:
    model = SmallModel({"extract": ['{"concepts": [{"summary": "no name"}]}']})
    with serve(model) as (url, _):
        proc = compile_(sources, url, "--json")
    assert proc.returncode == 0, proc.stderr
    extract, retry, page = model.bodies
    assert extract["response_format"]["json_schema"] == {
        "name": "concepts",
        "schema": EXTRACT_SCHEMA.schema,
    }
    assert page["response_format"]["json_schema"]["schema"] == PAGE_SCHEMA.schema
    assert [b["max_tokens"] for b in model.bodies] == [
        STEPS["extract"],
        STEPS["extract"],
        STEPS["page"],
    ]
    said = retry["messages"][1]["content"]
    assert said.startswith(extract["messages"][1]["content"])
    assert (
        "Your previous reply could not be used: concepts/0: 'name' is a required property" in said
    )
    out = json.loads(proc.stdout)
    assert out["usage"]["requests"] == 3 and [p["target"] for p in out["pages"]] == [
        f"{'wiki/' if (sources.root / 'wiki').is_dir() else ''}concepts/leader-election.md"
    ]


def test_a_second_invalid_reply_is_refused_with_what_was_received(sources: Repo) -> None:
    garbage = "Sure! Here is the page: Leader election is when"
    model = SmallModel({"page": [garbage, garbage + " again"]})
    head = sources.git("rev-parse", "HEAD").strip()
    with serve(model) as (url, _):
        proc = compile_(sources, url, LLMWIKI_MAX_TOKENS="page=64")
    assert proc.returncode == 1
    err = " ".join(proc.stderr.split())
    assert "malformed model output for the page on 'Leader election'" in err
    assert "not JSON (no JSON object in the reply), after one retry" in err
    assert f"received: '{garbage} again'" in err and "nothing was staged" in err
    assert re.search(r"spent 3 model request\(s\), 150 tokens in, 15 out", err)
    assert [b["max_tokens"] for b in model.bodies][1:] == [64, 64]
    assert sources.git("rev-parse", "HEAD").strip() == head
    assert sources.git("branch", "--list", "llmwiki/review/*") == ""


def test_a_server_refusing_the_schema_gets_the_prose_request(sources: Repo) -> None:
    with serve(SmallModel(refuse_schema=True)) as (url, _):
        strict = compile_(sources, url, LLMWIKI_STRUCTURED_OUTPUT="on")
    assert strict.returncode == 1 and "response_format" in strict.stderr
    assert "spent 0 model request(s)" in " ".join(strict.stderr.split())
    model = SmallModel(refuse_schema=True)
    with serve(model) as (url, _):
        proc = compile_(sources, url, "--json")
    assert proc.returncode == 0, proc.stderr
    # refused once, then prose for the rest of the run
    assert ["response_format" in b for b in model.bodies] == [True, False, False]


def test_ctrl_c_closes_the_requests_in_flight(sources: Repo) -> None:
    """Ctrl-C while compile waits on a slow model: the worker's connection is closed (the
    server sees it) and the command stops at once with exit 130, staging nothing."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from ..providers.servers_stream import Reply, replies, stream_server

    started = threading.Event()
    slow = Reply(
        200,
        {"content-type": "application/json"},
        [started.set, *[piece for _ in range(600) for piece in (b" ", lambda: time.sleep(0.05))]],
    )
    with stream_server(replies(slow)) as (url, seen):
        proc = subprocess.Popen(
            [sys.executable, "-m", "llmwiki_git", "compile"],
            cwd=sources.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={
                **os.environ,
                "OPENAI_BASE_URL": f"{url}/v1",
                "LLMWIKI_MODEL": "m",
                "LLMWIKI_EMBEDDING_PROVIDER": "none",
            },
        )
        assert started.wait(60)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert seen[0].client_closed.wait(10)
    assert proc.returncode == 130, err
    said = " ".join(err.split())
    assert "Interrupted: closed 1 model request(s) in flight; nothing was staged;" in said
    assert "had answered 0 request(s), 0 tokens in, 0 out" in said
    assert seen[0].written < 100  # 30 s of "generation" not waited for
    assert sources.git("branch", "--list", "llmwiki/review/*") == ""
