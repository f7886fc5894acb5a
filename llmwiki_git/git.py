"""The git adapter: plumbing commands through subprocess, errors converted to GitError.

Plain subprocess rather than GitPython on this path because `llmwiki check` runs in every
pre-commit hook: GitPython adds ~60 ms of imports and has no batched blob read, while
``git cat-file --batch`` reads thousands of blobs in one process (see docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import GitError, NotARepository

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

# One record of ``ls-files -z -s -t``: a tag, then "mode blob stage<TAB>" for index entries
# (tag H, S, M, C...) or nothing for an untracked file (tag "?"), then the path.
_LS_WORKTREE = re.compile(rb"(?:\? |([A-Z]) (\d{6}) ([0-9a-f]{40,64}) ([0-3])\t)([^\0]*)\0")


@dataclass(frozen=True)
class TreeEntry:
    """One file of a tree or of the index: git mode, blob id and repo-relative path."""

    mode: str
    blob: str
    path: str

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"

    @property
    def is_file(self) -> bool:
        return self.mode in ("100644", "100755")


def _tree_entries(out: bytes) -> list[TreeEntry]:
    """The blobs of ``git ls-tree -z`` output."""
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob = meta.decode().split(" ")
        if kind == "blob":
            entries.append(TreeEntry(mode, blob, path.decode("utf-8", "surrogateescape")))
    return entries


def _clean_env(environ: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.setdefault("LC_ALL", "C")
    return env


class Git:
    """Runs git in one work tree. Inherits GIT_INDEX_FILE and friends on purpose: inside a
    pre-commit hook they name the index being committed."""

    def __init__(self, root: Path, environ: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._env = _clean_env(environ)

    def run(self, *args: str, input: bytes | None = None, check: bool = True, detached: bool = False) -> bytes:
        """``git ARGS``; its output, GitError on failure (``check``). ``detached``: in a
        session of its own, so a signal to llmwiki's process group (a killed CI step, a closed
        terminal) does not kill it halfway through a step that holds one of git's locks --
        it finishes and releases the lock, and recovery finds a consistent repository."""
        cmd = ["git", *args]
        try:
            proc = subprocess.run(
                cmd, cwd=self.root, input=input, capture_output=True, env=self._env, start_new_session=detached
            )
        except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
            raise GitError(cmd, 127, "git is not installed or not on PATH") from exc
        if check and proc.returncode != 0:
            raise GitError(cmd, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def spawn(self, *args: str) -> Callable[[], bytes]:
        """Start ``git ARGS`` now and return what waits for its output (as ``run`` with
        ``check=False``): the hook overlaps git's work with its own (~10 ms each)."""
        cmd = ["git", *args]
        try:
            proc = subprocess.Popen(cmd, cwd=self.root, env=self._env, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
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

    def rev_parse(self, rev: str) -> str | None:
        """The commit id ``rev`` names, or None when it does not exist (an unborn HEAD)."""
        out = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        value = out.decode().strip()
        return value or None

    def common_dir(self) -> Path:
        known = _COMMON_DIRS.get(_repo_key(self.root, self._env))
        if known is not None and known.is_dir():
            return known  # find_root asked already (one git process less in every hook)
        path = Path(self.text("rev-parse", "--git-common-dir"))
        return path if path.is_absolute() else (self.root / path).resolve()

    def ls_tree(self, rev: str) -> list[TreeEntry]:
        out = self.run("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev)
        return _tree_entries(out)

    def ls_index(self) -> list[TreeEntry]:
        out = self.run("ls-files", "-s", "-z")
        entries: dict[str, TreeEntry] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, blob, stage = meta.decode().split(" ")
            name = path.decode("utf-8", "surrogateescape")
            # During a merge conflict keep "ours" (stage 2) over the base (stage 1).
            if stage in ("0", "2") or name not in entries:
                entries[name] = TreeEntry(mode, blob, name)
        return list(entries.values())

    def blob_ids(self, tree: str, paths: list[str]) -> dict[str, str]:
        """Path -> blob id of the given files in ``tree``, with one ``ls-tree`` (looking
        paths up one by one as ``tree:path`` re-reads a large folder's tree each time)."""
        if not paths:
            return {}
        out = self.run("--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", tree, "--",
                       *paths, check=False)
        return {entry.path: entry.blob for entry in _tree_entries(out)}

    def ls_worktree(self) -> tuple[dict[str, tuple[str, str]], set[str], list[str]]:
        """The index, the changed files and the untracked files from one ``ls-files`` call:
        path -> (mode, blob) of the index (in a conflict "ours" over the base), the tracked
        paths whose work-tree file differs (or is gone), and the untracked paths (not
        ignored). One process and one regular-expression pass (a fresh `llmwiki context`
        lists the work tree once)."""
        args = ("ls-files", "-z", "-s", "-t", "-m", "-o", "--exclude-standard")
        out = self.run(*args)
        entries: dict[str, tuple[str, str]] = {}
        modified: set[str] = set()
        untracked: list[str] = []
        records = _LS_WORKTREE.findall(out)
        if len(records) != out.count(b"\0"):
            raise GitError(args, 0, "a record of its output has an unexpected shape")
        for tag, mode, blob, stage, raw in records:
            path = raw.decode("utf-8", "surrogateescape")
            if not tag:
                untracked.append(path)
            elif tag == b"C":
                modified.add(path)
            elif stage in (b"0", b"2") or path not in entries:
                entries[path] = (mode.decode(), blob.decode())
        return entries, modified, untracked

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Read many blobs with one ``cat-file --batch`` process."""
        wanted = list(dict.fromkeys(blobs))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode())
        result: dict[str, bytes] = {}
        pos = 0
        for blob in wanted:
            header_end = out.index(b"\n", pos)
            header = out[pos:header_end].split()
            pos = header_end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            result[blob] = out[pos : pos + size]
            pos += size + 1
        return result


class CatFile:
    """One ``git cat-file --batch-command`` process for many object lookups (the hook's
    revisions and blobs): each further git process costs ~5-10 ms, and each one that names
    index paths (``:path``) reads the whole index again. Close it (or use ``with``)."""

    _CHUNK = 16_000  # request bytes written before reading the answers (well under a pipe buffer)

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = False  # git older than 2.36 (no --batch-command): one process per call instead

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
                self._proc = subprocess.Popen(cmd, cwd=self._git.root, env=self._git._env, stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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
                stdin.write("".join(f"{command} {name}\n" for name in pending).encode("utf-8", "surrogateescape"))
                stdin.flush()
            except OSError as exc:
                raise GitError(["git", "cat-file", "--batch-command"], -1, str(exc)) from exc
            for _ in pending:
                header = stdout.readline()
                if not header.endswith(b"\n"):
                    raise GitError(["git", "cat-file", "--batch-command"], -1, "git cat-file stopped answering")
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
            out = self._git.run("rev-parse", "--verify", "--quiet", "--end-of-options", name, check=False)
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


# Common git dirs find_root learnt with the root, by `_repo_key` (saves Git.common_dir a process).
_COMMON_DIRS: dict[tuple[str, ...], Path] = {}


def _repo_key(root: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    return (str(root), *(env.get(name, "") for name in ("GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE")))


def find_root(start: Path, environ: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """The work-tree root above ``start`` and whether it is a git repository.

    Outside git, the nearest folder holding ``.llmwiki/`` or ``wiki/`` is the root, else
    ``start`` itself, so a plain folder of markdown can still be checked.
    """
    start = start.resolve()
    if not start.is_dir():
        raise NotARepository(f"{start} is not a directory")
    env = _clean_env(environ)
    proc = subprocess.run(
        ["git", "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir"],
        cwd=start,
        capture_output=True,
        env=env,
    )
    if proc.returncode == 0:
        lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
        if len(lines) == 3 and not lines[2] and lines[1].startswith("/"):
            root = Path(lines[0])
            _COMMON_DIRS[_repo_key(root, env)] = Path(lines[1])
            return root, True
        proc = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, env=env)
    if proc.returncode == 0:
        return Path(proc.stdout.decode("utf-8", "surrogateescape").strip()), True
    for folder in (start, *start.parents):
        if (folder / ".llmwiki").is_dir() or (folder / "wiki").is_dir():
            return folder, False
    return start, False


def blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (so work-tree files share the scan cache)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def find_project(start: Path, root: Path) -> Path:
    """The nearest folder from ``start`` up to ``root`` that holds ``.llmwiki/`` (a wiki
    kept in a subfolder of a larger repository), else ``root``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".llmwiki").is_dir():
            return folder
        if folder == root:
            break
    return root
