"""Running git: one process per call, output as bytes, failures as GitError.

Plain subprocess rather than GitPython on this path because `llmwiki check` runs in every
pre-commit hook: GitPython adds ~60 ms of imports and has no batched blob read, while
``git cat-file --batch`` reads thousands of blobs in one process (see docs/benchmarks.md).

Only ``gitstore/`` calls `GitRunner.run`, `spawn` and `text` (tests/test_shape.py): every
other module asks a typed helper of `gitstore.git.Git` (``blob_at``, ``read_blob``,
``ls_tree``, ``update_ref``...), so each git command line is written once.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..errors import GitError


def clean_env(environ: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("LC_ALL", "C")
    return env


class GitRunner:
    """Runs git in one work tree. Inherits GIT_INDEX_FILE and friends on purpose: inside a
    pre-commit hook they name the index being committed."""

    def __init__(self, root: Path, environ: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._env = clean_env(environ)

    @property
    def env(self) -> Mapping[str, str]:
        """The environment git runs with."""
        return self._env

    def run(
        self, *args: str, input: bytes | None = None, check: bool = True, detached: bool = False
    ) -> bytes:
        """``git ARGS``; its output, GitError on failure (``check``). ``detached``: in a
        session of its own, so a signal to llmwiki's process group (a killed CI step, a closed
        terminal) does not kill it halfway through a step that holds one of git's locks --
        it finishes and releases the lock, and recovery finds a consistent repository."""
        return self.call(*args, input=input, check=check, detached=detached)[1]

    def call(
        self, *args: str, input: bytes | None = None, check: bool = True, detached: bool = False
    ) -> tuple[int, bytes]:
        """`run`, with git's exit status beside its output."""
        cmd = ["git", *args]
        try:
            proc = subprocess.run(
                cmd,
                cwd=self.root,
                input=input,
                capture_output=True,
                env=self._env,
                start_new_session=detached,
            )
        except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
            raise GitError(cmd, 127, "git is not installed or not on PATH") from exc
        if check and proc.returncode != 0:
            raise GitError(cmd, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.returncode, proc.stdout

    def spawn(self, *args: str) -> Callable[[], bytes]:
        """Start ``git ARGS`` now and return what waits for its output (as ``run`` with
        ``check=False``): the hook overlaps git's work with its own (~10 ms each)."""
        cmd = ["git", *args]
        try:
            proc = subprocess.Popen(
                cmd, cwd=self.root, env=self._env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
            raise GitError(cmd, 127, "git is not installed or not on PATH") from exc
        done: list[bytes] = []

        def output() -> bytes:
            if not done:
                done.append(proc.communicate()[0])
            return done[0]

        return output

    def text(self, *args: str) -> str:
        return self.run(*args).decode("utf-8", "surrogateescape").strip()


#: Bytes of paths named on one git command line. Linux's smallest argument limit is 128 KiB,
#: shared with the environment; a write of 100,000 files names some 5 MB of paths, which
#: fails as one command ("Argument list too long"), so paths go in batches this size.
ARG_BYTES = 32 * 1024


def batches(args: Sequence[str], limit: int = ARG_BYTES) -> list[list[str]]:
    """``args`` in order, in runs whose encoded size stays within ``limit`` bytes (a longer
    single argument is a run of its own)."""
    runs: list[list[str]] = []
    size = limit + 1
    for arg in args:
        n = len(arg.encode("utf-8", "surrogateescape")) + 1
        if size + n > limit:
            runs.append([])
            size = 0
        runs[-1].append(arg)
        size += n
    return runs
