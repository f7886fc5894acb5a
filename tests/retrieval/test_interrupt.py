"""Ctrl-C (issue 23): exit 130 everywhere, the work done so far kept, nothing half-written.

The interrupted command is the real CLI in a subprocess. ``LLMWIKI_TEST_PAUSE_AT=<point>[:n]``
makes it stop at that point and say so on stderr; the test then sends it SIGINT, as Ctrl-C
does. No timing is involved: the signal arrives exactly there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from ..conftest import Repo, page
from ..servers import serve
from .test_embedding_http import openai_handler

PAGES = 150  # one chunk each: more than two slices of checkpoint.SLICE (64)
HOME = "# Home\n\nMy own home page. See [[note-1]].\n"
JOURNAL = "# My log\n\n- started the vault\n"


def _vault(repo: Repo, layout: str) -> str:
    prefix = "wiki/" if layout == "wiki" else ""
    for i in range(PAGES):
        repo.write(
            f"{prefix}notes/note-{i}.md",
            page(f"Note {i}", f"Note {i} is about topic {i} and subject {i * 7}."),
        )
    if layout == "root":  # the user's own home page and journal, never rewritten
        repo.write("index.md", HOME)
        repo.write("log.md", JOURNAL)
    repo.commit("vault")
    return prefix


def _run_until(repo: Repo, point: str, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """Start `llmwiki ARGS`, wait until it pauses at ``point``, and send it SIGINT."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=repo.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env, "LLMWIKI_TEST_PAUSE_AT": point},
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # EOF first means it never paused: the assertion below says so
        seen.append(line)
        if line.startswith("llmwiki-test: paused at"):
            proc.send_signal(signal.SIGINT)
            break
    proc.said = "".join(seen)  # type: ignore[attr-defined]
    return proc


@pytest.mark.parametrize("layout", ["wiki", "root"])
def test_ctrl_c_during_index_exits_130_and_the_next_run_reuses_what_was_embedded(
    repo: Repo, layout: str
) -> None:
    """Regression: Ctrl-C exited 1 ("problems found") and threw every embedded chunk away
    (the re-run said "(414 embedded, 0 reused)")."""
    _vault(repo, layout)
    chunks = PAGES + (layout == "root")  # the user's home page is a page too
    with serve(openai_handler) as (url, seen):
        env = {
            "LLMWIKI_EMBEDDING_PROVIDER": "openai",
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "k",
            "LLMWIKI_EMBEDDING_MODEL": "tiny",
        }
        proc = _run_until(repo, "embedded:2", env, "index")  # after two slices: 128 chunks
        out, err = proc.communicate(timeout=120)
        err = proc.said + err  # type: ignore[attr-defined]
        assert proc.returncode == 130, err
        assert f"Interrupted: 128 of {chunks} chunks were embedded and are kept" in err, err
        assert "Traceback" not in err and "Aborted" not in err
        state = repo.root / ".llmwiki"
        # Nothing half-written: no store, no temporary file; only the checkpoint, whole.
        assert not (state / "embeddings.json").exists() and not (state / "embeddings.bin").exists()
        assert sorted(p.name for p in state.iterdir()) == [".gitignore", "embeddings.partial.npz"]
        asked = sum(len(body["input"]) for _, body, _ in seen.requests)
        assert asked == 128

        again = repo.llmwiki("index", "--json", env=env)
        assert again.returncode == 0, again.stderr
        summary = json.loads(again.stdout)
        assert (summary["chunks"], summary["embedded"], summary["reused"]) == (
            chunks,
            chunks - 128,
            128,
        )
        assert (
            sum(len(body["input"]) for _, body, _ in seen.requests) == chunks
        )  # nothing embedded twice
        assert not (state / "embeddings.partial.npz").exists()  # in the store now
        pack = json.loads(
            repo.llmwiki("context", "topic 140 subject 980", "--json", env=env).stdout
        )
    assert pack["warnings"] == [] and "notes/note-140" in [p["id"] for p in pack["primary"]]
    if layout == "root":
        assert (repo.root / "index.md").read_text() == HOME and (
            repo.root / "log.md"
        ).read_text() == JOURNAL
    assert (
        repo.git("status", "--porcelain") == ""
    )  # the interrupted run left nothing in the work tree


def test_ctrl_c_elsewhere_exits_130_too(repo: Repo) -> None:
    """Any command: one line, exit 130, no traceback (here `check`, stopped at the write of
    its cache, between the write and the rename: no cache file is left half-written)."""
    _vault(repo, "wiki")
    proc = _run_until(repo, "cache", {}, "check")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, proc.said + err  # type: ignore[attr-defined]
    assert err.strip() == "Interrupted." and "Traceback" not in err
    left = [
        p.name
        for p in (repo.root / ".git" / "llmwiki").rglob("*")
        if ".tmp" in p.name or p.name.startswith(".")
    ]
    assert left == []
