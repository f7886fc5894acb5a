"""`llmwiki compile` with a model: a real OpenAI-compatible server on 127.0.0.1 answering per
prompt (concept extraction per source, one page per concept). Link and citation repair
without a model call, malformed output staging nothing, request and token counts, a re-run
making no request, concurrency."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from typing import Any

import pytest

from llmwiki_git.compiler.concepts import EXTRACT_SYSTEM, PAGE_SYSTEM

from ..conftest import Repo, page
from ..servers import json_response, serve

MERKLE = """# Merkle trees

A Merkle tree hashes every leaf, then every pair of hashes.
One root hash commits to all the data below it.
Git stores blobs and trees this way.
"""
RAFT = """# Raft

Raft elects a leader that replicates a log to its followers.
A follower that hears no heartbeat starts an election.
"""

CONCEPTS = {
    "merkle.md": [
        {"name": "Merkle tree", "summary": "A tree of hashes.", "aliases": ["hash tree"]},
        {"name": "Alpha", "summary": "The first letter, as the source uses it."},
    ],
    "raft.md": [{"name": "Leader election", "summary": "How Raft picks a leader."}],
}
PAGES = {
    "Merkle tree": (
        "A Merkle tree hashes leaves and pairs of hashes ^[merkle.md:3-3]. One root commits to all "
        "^[sources/merkle.md:4-4]. Git keeps [[Blobs]] this way ^[merkle.md:5-5] (see [[Alpha]], "
        "[[leader elections]] and [[quantum foam]]) ^[merkle.md:900-901]."
    ),
    "Alpha": "Alpha, as the Merkle paper uses it, names the first tree ^[merkle.md:3-3].",
    "Leader election": "Raft elects a leader ^[raft.md:3-3]; silence starts an election ^[raft.md:4-4].",
}


class Model:
    """The model behind the server: answers by prompt, counts requests, can be told to
    misbehave for one source or to hold extraction requests until ``together`` arrive."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []
        self.broken: str | None = None
        self.bodies: dict[str, str] = {}  # concept -> a page body other than PAGES'
        self.hold: threading.Event | None = None  # page requests wait for it (a Ctrl-C test)
        self.holding = threading.Event()  # set once a page request is waiting
        self.together: threading.Barrier | None = None
        self.lock = threading.Lock()

    def __call__(
        self, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        with self.lock:
            self.requests.append((system, user))
        if system == EXTRACT_SYSTEM:
            name = re.search(r"^Source file: (.+)$", user, re.MULTILINE).group(1)  # type: ignore[union-attr]
            if self.together is not None:
                self.together.wait()
            content = (
                "Here you are: {not json"
                if name == self.broken
                else json.dumps({"concepts": CONCEPTS[name]})
            )
        else:
            assert system == PAGE_SYSTEM
            if self.hold is not None:
                self.holding.set()
                self.hold.wait(30)
            concept = re.search(r"^Concept: (.+)$", user, re.MULTILINE).group(1)  # type: ignore[union-attr]
            content = (
                "```json\n"
                + json.dumps(
                    {
                        "title": concept,
                        "summary": f"About {concept}.",
                        "body": self.bodies.get(concept, PAGES[concept]),
                    }
                )
                + "\n```"
            )
        return json_response(
            {
                "id": "c1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
            }
        )


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def server(model: Model) -> Any:
    with serve(model) as (url, _):
        yield url


@pytest.fixture(params=["wiki", "root"])
def wiki(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    prefix = "wiki/" if request.param == "wiki" else ""
    repo.write(
        f"{prefix}concepts/alpha.md",
        "---\ntitle: Alpha\nowner: kept-as-is   # an unknown key\n---\nAlpha is the first letter.\n",
    )
    repo.write(f"{prefix}concepts/blob.md", page("Blob", "A blob holds bytes."))
    repo.write("sources/merkle.md", MERKLE)
    repo.write("sources/raft.md", RAFT)
    repo.commit("wiki and sources")
    return repo, prefix


def compile_(repo: Repo, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(
        "compile",
        *args,
        env={
            "OPENAI_BASE_URL": f"{url}/v1",
            "LLMWIKI_MODEL": "test-model",
            "LLMWIKI_EMBEDDING_PROVIDER": "none",
        },
    )


def test_concepts_then_pages_with_repaired_links_and_citations(
    wiki: tuple[Repo, str], model: Model, server: str
) -> None:
    repo, prefix = wiki
    proc = compile_(repo, server, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (
        out["provider"] == "openai"
        and out["model"] == "openai/test-model"
        and out["prompt"] == "concept-pages/1"
    )
    assert out["usage"] == {
        "requests": 5,
        "inputTokens": 500,
        "outputTokens": 50,
        "estimated": False,
    }
    assert len(model.requests) == 5  # 2 extractions + 3 pages
    targets = {p["target"]: p for p in out["pages"]}
    merkle, alpha, election = (
        f"{prefix}concepts/{n}.md" for n in ("merkle-tree", "alpha", "leader-election")
    )
    assert set(targets) == {merkle, alpha, election}
    assert targets[alpha]["change"] == "replace" and targets[merkle]["change"] == "add"
    branch = out["candidate"]["branch"]

    text = repo.git("show", f"{branch}:{merkle}")
    # [[Blobs]] -> the one page titled Blob; [[leader elections]] -> this run's page; [[quantum foam]] unlinked
    assert (
        "[[blob|Blobs]]" in text and "(see [[Alpha]]," in text
    )  # a link that resolves is kept as written
    assert (
        "[[leader-election|leader elections]]" in text
        and "quantum foam" in text
        and "[[quantum" not in text
    )
    assert (
        "^[merkle.md:4-4]" in text and "900" not in text
    )  # normalized, and the made-up lines dropped
    assert "sources:\n- sources/merkle.md\n" in text
    updated = repo.git("show", f"{branch}:{alpha}")
    assert (
        "owner: kept-as-is   # an unknown key\n" in updated and "summary: About Alpha." in updated
    )
    assert "names the first tree" in updated

    page_prompts = [user for system, user in model.requests if system == PAGE_SYSTEM]
    alpha_prompt = next(u for u in page_prompts if u.startswith("Concept: Alpha"))
    assert "The page as it is now:" in alpha_prompt and "Alpha is the first letter." in alpha_prompt
    listed = alpha_prompt.split("Valid link targets")[1].split("\n\n")[0]
    assert "- blob" in listed and "- merkle-tree" in listed and "- leader-election" in listed

    trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)", branch)
    assert (
        "Llmwiki-Model: openai/test-model" in trailers
        and "Llmwiki-Prompt: concept-pages/1" in trailers
    )
    assert run_check(repo, branch).returncode == 0  # the gate accepts the run

    text_run = compile_(repo, server)  # the open run stages these sources already: no request
    assert (
        text_run.returncode == 0
        and text_run.stdout.startswith("Nothing to compile")
        and len(model.requests) == 5
    )
    done = repo.llmwiki(
        "review", "approve", out["candidate"]["id"], env={"LLMWIKI_EMBEDDING_PROVIDER": "none"}
    )
    assert done.returncode == 0, done.stderr
    rerun = compile_(repo, server)
    assert rerun.returncode == 0 and rerun.stdout.startswith(
        "Nothing to compile: 2 sources up to date"
    )
    assert len(model.requests) == 5  # a re-run with nothing changed asks the model nothing

    repo.write("sources/raft.md", RAFT + "Terms number each election.\n")
    repo.commit("raft changed")
    changed = json.loads(compile_(repo, server, "--json").stdout)
    assert changed["compiled"] == ["sources/raft.md"] and [
        p["target"] for p in changed["pages"]
    ] == [election]
    assert len(model.requests) == 7  # one extraction, one page
    assert [u.split("\n", 1)[0] for s, u in model.requests[5:] if s == EXTRACT_SYSTEM] == [
        "Source file: raft.md"
    ]


def run_check(repo: Repo, branch: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki("check", "--base", "main", "--head", branch)


def test_malformed_output_names_the_source_and_stages_nothing(
    wiki: tuple[Repo, str], model: Model, server: str
) -> None:
    repo, _ = wiki
    model.broken = "raft.md"
    head = repo.git("rev-parse", "HEAD").strip()
    proc = compile_(repo, server)
    assert proc.returncode == 1
    assert (
        "malformed model output for sources/raft.md" in proc.stderr
        and "nothing was staged" in proc.stderr
    )
    assert (
        repo.git("branch", "--list", "llmwiki/review/*") == ""
        and repo.git("rev-parse", "HEAD").strip() == head
    )
    assert repo.git("status", "--porcelain") == ""


def test_extractions_run_concurrently(wiki: tuple[Repo, str], model: Model, server: str) -> None:
    repo, _ = wiki
    model.together = threading.Barrier(2, timeout=20)  # both extractions must be in flight at once
    proc = compile_(repo, server, "--concurrency", "2")
    assert proc.returncode == 0, proc.stderr
    assert "extracting concepts: 2/2" in proc.stderr and "writing pages: 3/3" in proc.stderr
    assert re.search(r"Model: openai/test-model: 5 requests, 500 tokens in, 50 out", proc.stderr)


def test_a_concept_named_like_the_table_of_contents_gets_a_page_of_its_own(
    wiki: tuple[Repo, str], model: Model, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, prefix = wiki
    repo.write(
        f"{prefix}index.md",
        "# Knowledge Wiki\n\n## Concepts\n\n- **[[alpha|Alpha]]**\n\n_1 page | Generated now_\n",
    )
    repo.commit("an index")
    monkeypatch.setitem(CONCEPTS, "raft.md", [{"name": "Index", "summary": "Raft's log index."}])
    monkeypatch.setitem(PAGES, "Index", "Each log entry has an index ^[raft.md:3-3].")
    proc = compile_(repo, server, "--json")
    assert proc.returncode == 0, proc.stderr
    targets = [p["target"] for p in json.loads(proc.stdout)["pages"]]
    # never the table of contents; and a name of its own ([[index]] keeps reaching the index page)
    assert f"{prefix}concepts/index-2.md" in targets and f"{prefix}index.md" not in targets


def test_every_repair_is_reported_in_the_summary_and_in_review_show(
    wiki: tuple[Repo, str], model: Model, server: str
) -> None:
    """Issue 36 item 3: citations of lines that do not exist dropped and links to no page
    unlinked, silently, leaving a page with no citation that `review show` passed."""
    repo, prefix = wiki
    model.bodies["Leader election"] = (
        "Raft elects a leader, part of everyday work ^[raft.md:99990-99999] and "
        "^[nonexistent.md:1-2]; see [[no-such-page]]."
    )
    proc = compile_(repo, server, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    pages = {p["target"]: p for p in out["pages"]}
    election = pages[f"{prefix}concepts/leader-election.md"]["repairs"]
    assert election["citationsDropped"] == ["raft.md:99990-99999", "nonexistent.md:1-2"]
    assert election["linksUnlinked"] == ["no-such-page"] and election["uncited"] is True
    merkle = pages[f"{prefix}concepts/merkle-tree.md"]["repairs"]
    assert merkle["citationsDropped"] == ["merkle.md:900-901"]
    assert merkle["linksUnlinked"] == ["quantum foam"] and merkle["uncited"] is False
    cid = out["candidate"]["id"]
    shown = repo.llmwiki("review", "show", cid)
    assert shown.returncode == 0, shown.stderr
    assert "repaired by compile: 2 citation(s) dropped (raft.md:99990-99999" in shown.stdout
    assert "1 link(s) unlinked (no-such-page)" in shown.stdout
    assert "warning: this page cites no source line" in shown.stdout
    shown_json = json.loads(repo.llmwiki("review", "show", cid, "--json").stdout)
    uncited = [p["target"] for p in shown_json["pages"] if p["uncited"]]
    assert uncited == [f"{prefix}concepts/leader-election.md"]


def test_the_compile_summary_names_each_repair(
    wiki: tuple[Repo, str], model: Model, server: str
) -> None:
    repo, prefix = wiki
    proc = compile_(repo, server)
    assert proc.returncode == 0, proc.stderr
    assert (
        f"{prefix}concepts/merkle-tree.md (new)" in proc.stderr
        and "repaired: 1 citation(s) dropped (merkle.md:900-901); 1 link(s) unlinked (quantum foam)"
        in proc.stderr
    ), proc.stderr


def test_ctrl_c_in_a_model_compile_says_what_was_spent_and_that_nothing_was_staged(
    wiki: tuple[Repo, str], model: Model, server: str
) -> None:
    """Issue 36 item 7: Ctrl-C printed only "Interrupted."."""
    import os
    import signal
    import sys

    repo, _ = wiki
    model.hold = threading.Event()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmwiki_git", "compile", "--concurrency", "1"],
        cwd=repo.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "OPENAI_BASE_URL": f"{server}/v1",
            "LLMWIKI_MODEL": "test-model",
            "LLMWIKI_EMBEDDING_PROVIDER": "none",
        },
    )
    try:
        assert model.holding.wait(60), "no page request arrived"
        proc.send_signal(signal.SIGINT)
    finally:
        model.hold.set()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "nothing was staged" in err and "openai/test-model had answered" in err, err
    assert "request(s)" in err and "tokens in" in err, err
    assert repo.git("branch", "--list", "llmwiki/review/*").strip() == ""
