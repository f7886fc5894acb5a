"""One ``git cat-file --batch-command`` process for many object lookups (the hook's
revisions and blobs)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable

from ..errors import GitError
from .git import Git


class CatFile:
    """One ``git cat-file --batch-command`` process for many object lookups (the hook's
    revisions and blobs): each further git process costs ~5-10 ms, and each one that names
    index paths (``:path``) reads the whole index again. Close it (or use ``with``)."""

    _CHUNK = 16_000  # request bytes written before reading the answers (well under a pipe buffer)

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = (
            False  # git older than 2.36 (no --batch-command): one process per call instead
        )

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.close()
            except OSError:
                pass
            proc.stdout.close()
            proc.wait()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            cmd = ["git", "cat-file", "--batch-command"]
            try:
                self._proc = subprocess.Popen(
                    cmd,
                    cwd=self._git.root,
                    env=self._git.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
                raise GitError(cmd, 127, "git is not installed or not on PATH") from exc
        return self._proc

    def _ask(self, command: str, names: list[str]) -> list[tuple[bytes, bytes | None]]:
        """(header, contents or None) for each name, in order; a name with a line break
        gets the header ``missing``."""
        proc = self._start()
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None
        answers: list[tuple[bytes, bytes | None]] = []
        pending: list[str] = []

        def flush() -> None:
            try:
                stdin.write(
                    "".join(f"{command} {name}\n" for name in pending).encode(
                        "utf-8", "surrogateescape"
                    )
                )
                stdin.flush()
            except OSError as exc:
                raise GitError(["git", "cat-file", "--batch-command"], -1, str(exc)) from exc
            for _ in pending:
                header = stdout.readline()
                if not header.endswith(b"\n"):
                    raise GitError(
                        ["git", "cat-file", "--batch-command"], -1, "git cat-file stopped answering"
                    )
                parts = header.split()
                body = None
                if command == "contents" and len(parts) == 3 and parts[2].isdigit():
                    body = stdout.read(int(parts[2]) + 1)[:-1]
                answers.append((header, body))
            pending.clear()

        size = 0
        for name in names:
            if "\n" in name or not name:
                flush()
                size = 0
                answers.append((b"missing\n", None))
                continue
            pending.append(name)
            size += len(name) + 10
            if size > self._CHUNK:
                flush()
                size = 0
        flush()
        return answers

    def _answers(self, command: str, names: list[str]) -> list[tuple[bytes, bytes | None]] | None:
        """`_ask`, or None once the process failed (then the caller asks git another way)."""
        if not self._failed:
            try:
                return self._ask(command, names)
            except GitError:
                self._failed = True
                self.close()
        return None

    def object_id(self, name: str) -> str | None:
        """The id of the object ``name`` names (``HEAD^{tree}``, ``:path``...), or None."""
        answers = self._answers("info", [name])
        if answers is None:
            out = self._git.run(
                "rev-parse", "--verify", "--quiet", "--end-of-options", name, check=False
            )
            return out.decode().strip() or None
        header = answers[0][0].split()
        return header[0].decode() if len(header) == 3 else None

    def read_blobs(self, names: Iterable[str]) -> dict[str, bytes]:
        """What `Git.read_blobs` returns, through this one process."""
        wanted = list(dict.fromkeys(names))
        answers = self._answers("contents", wanted)
        if answers is None:
            return self._git.read_blobs(wanted)
        return {name: body for name, (_header, body) in zip(wanted, answers) if body is not None}
