"""The repository lock: one llmwiki writer at a time (saving, staging, approving, indexing).

``repository_lock`` places it at ``<git common dir>/llmwiki/lock``, so every worktree, ``GIT_DIR``
setup and clone sharing one git dir serializes; outside git it is ``.llmwiki/lock``.

The lock is a kernel ``flock`` held on that file itself. The kernel releases it when its
holder exits, however it exits (``kill -9`` included), so a crashed writer never leaves a
lock behind that needs judging: a file nobody holds a flock on is free, whatever it says.
The holder writes a JSON owner record ``{"pid", "startTime", "host", "command"}`` into the
file for the "held by" message only (``startTime``: field 22 of ``/proc/<pid>/stat`` where
/proc exists, else the time of acquisition). Release deletes the file while still holding
the flock, and only if the path is still the file we locked; a waiter that got the flock on
a file deleted meanwhile (its inode no longer at the path) drops it and opens the path again.
A symlink at the lock path is removed, never followed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..errors import LlmwikiError, LockBusy
from .git import Git

LOCK_NAME = "lock"

# Descriptors of the locks this process holds. A forked child (the parallel page scan's
# workers, for one) inherits them, and a flock lives as long as any copy of its descriptor:
# a writer killed with -9 would leave its workers holding the lock. The child closes its
# copies at once, which leaves the parent's lock in place.
_HELD: set[int] = set()


def _close_held_in_child() -> None:
    for fd in _HELD:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)
MAX_RECORD_BYTES = 4096
_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


@dataclass(frozen=True)
class LockOwner:
    """Who holds a lock, as its record says; ``since`` is when the lock file was written."""

    pid: int
    start_time: int | float | None
    host: str
    command: str
    since: float | None = None


# --------------------------------------------------------------------------- processes


def _proc_stat_fields(pid: int) -> list[bytes] | None:
    """Fields 3.. of /proc/<pid>/stat (after the parenthesised command name), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    end = data.rfind(b")")
    if end < 0:
        return None
    return data[end + 1 :].split()


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot."""
    fields = _proc_stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        return int(fields[19])  # fields[0] is field 3 (state), so field 22 is fields[19]
    except ValueError:
        return None


def sweep_dead(folder: Path, pattern: re.Pattern[str]) -> None:
    """Remove the entries of ``folder`` whose name ``pattern`` matches with group 1 the pid of
    a process that is gone: scratch folders of a writer killed before it removed them."""
    import shutil

    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not pid_alive(pid):
            shutil.rmtree(folder / name, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a running process (zombies count as dead). Conservative:
    when it cannot tell, it says alive."""
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - os.kill(pid, 0) would terminate the process there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    except (OverflowError, ValueError):
        return False
    except OSError:
        return True
    fields = _proc_stat_fields(pid)
    if fields and fields[0] in (b"Z", b"X", b"x"):
        return False
    return True


def _default_command() -> str:
    argv = list(sys.argv) or ["python"]
    argv[0] = os.path.basename(argv[0]) or argv[0]
    text = " ".join(argv)
    return text if len(text) <= 200 else text[:199] + "…"


def parse_owner(raw: bytes, since: float | None = None) -> LockOwner | None:
    """The owner a lock record names, or None for garbage. Accepts the JSON record and the
    reference tool's legacy bare pid."""
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if text.isdigit():
        return LockOwner(int(text), None, "", "", since)
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    start = data.get("startTime")
    if isinstance(start, bool) or not isinstance(start, (int, float)):
        start = None
    host = data.get("host")
    command = data.get("command")
    return LockOwner(
        pid,
        start,
        host if isinstance(host, str) else "",
        command if isinstance(command, str) else "",
        since,
    )


# --------------------------------------------------------------------------- the lock


class ProjectLock:
    """``with ProjectLock(state_dir): ...`` holds ``<state_dir>/lock`` for the block.

    ``timeout`` bounds the wait (0: a single attempt); ``poll`` is the retry interval.
    ``root`` is the project folder the state dir must stay inside (default: its parent).
    Not reentrant: a second acquire from the same process waits like anyone else.
    """

    def __init__(
        self,
        state_dir: Path,
        timeout: float = 60.0,
        poll: float = 0.025,
        *,
        root: Path | None = None,
        command: str | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.root = Path(root) if root is not None else self.state_dir.parent
        self.path = self.state_dir / LOCK_NAME
        self.timeout = max(0.0, float(timeout))
        self.poll = max(0.001, float(poll))
        self.command = command if command is not None else _default_command()
        self._fd: int | None = None
        self._pid = 0

    # -- public API

    @property
    def held(self) -> bool:
        return self._fd is not None

    def owner(self) -> LockOwner | None:
        """The holder as its record says (None when the file is absent or unreadable)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | (_FLAGS & ~(os.O_RDWR | os.O_CREAT)))
        except OSError:
            return None
        try:
            return _read_owner(fd)
        finally:
            os.close(fd)

    def acquire(self) -> ProjectLock:
        if self._fd is not None:
            raise LlmwikiError(f"{self.path} is already held by this ProjectLock")
        self._prepare_state_dir()
        started = time.monotonic()
        deadline = started + self.timeout
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fd)
                os.close(fd)
                now = time.monotonic()
                if now >= deadline:
                    raise LockBusy(self.path, owner, now - started) from None
                time.sleep(min(self.poll, max(0.0, deadline - now)))
                continue
            if not self._is_current(fd):  # released (deleted) between our open and our flock
                os.close(fd)
                continue
            try:
                _write_record(fd, self._record())
            except OSError as exc:
                os.close(fd)
                raise LlmwikiError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
            self._fd = fd
            self._pid = os.getpid()
            _HELD.add(fd)
            return self

    def release(self) -> None:
        """Delete the lock file only if it is still the file we locked, then drop the flock."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._pid != os.getpid():  # a forked child: its copy was closed at the fork
            return
        _HELD.discard(fd)
        try:
            if self._is_current(fd):
                os.unlink(self.path)
        except OSError:  # gone already, or a folder we may not write: nobody holds a bare file
            pass
        finally:
            os.close(fd)  # drops the flock

    def __enter__(self) -> ProjectLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    # -- internals

    def _prepare_state_dir(self) -> None:
        state, root = self.state_dir, self.root
        root_real = root.resolve()
        if state.is_symlink() and not state.exists():
            raise LlmwikiError(
                f"{state} is a dangling symlink; refusing to lock",
                hint=f"make {state.name} a real folder inside {root}",
            )
        real = state.resolve()
        if real != root_real and root_real not in real.parents:
            raise LlmwikiError(
                f"{state} resolves to {real}, outside the project {root_real}; refusing to lock",
                hint=f"make {state.name} a real folder inside the project (not a symlink elsewhere)",
            )
        try:
            state.mkdir(exist_ok=True)
        except OSError as exc:
            raise LlmwikiError(f"cannot create {state}: {exc.strerror or exc}") from exc
        if not state.is_dir():
            raise LlmwikiError(f"{state} is not a folder; cannot lock the project")

    def _open(self) -> int:
        """Open (creating) the lock file, never following a symlink: one found there is removed."""
        for _ in range(10):
            try:
                fd = os.open(self.path, _FLAGS, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP and os.path.islink(self.path):
                    try:
                        os.unlink(self.path)  # removes the link itself, never its target
                    except FileNotFoundError:
                        pass
                    continue
                raise LlmwikiError(
                    f"cannot open the lock {self.path}: {exc.strerror or exc}",
                    hint=f"{self.path} must be a regular file (or absent)",
                ) from exc
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
            raise LlmwikiError(
                f"{self.path} is not a regular file; cannot lock the project",
                hint=f"move {self.path} out of the way",
            )
        raise LlmwikiError(f"{self.path} keeps turning into a symlink; refusing to lock")

    def _is_current(self, fd: int) -> bool:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)

    def _record(self) -> bytes:
        pid = os.getpid()
        start: int | float | None = process_start_time(pid)
        if start is None:
            start = time.time()
        data = {
            "pid": pid,
            "startTime": start,
            "host": socket.gethostname(),
            "command": self.command,
        }
        return (json.dumps(data) + "\n").encode("utf-8")


def _write_record(fd: int, record: bytes) -> None:
    os.ftruncate(fd, 0)
    view = memoryview(record)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)


def _read_owner(fd: int) -> LockOwner | None:
    try:
        raw = os.pread(fd, MAX_RECORD_BYTES + 1, 0)
        since = os.fstat(fd).st_mtime
    except OSError:
        return None
    return parse_owner(raw, since) if len(raw) <= MAX_RECORD_BYTES else None


def repository_lock(git: Git | None, state_dir: Path, timeout: float = 60.0) -> ProjectLock:
    """The one lock of a repository: ``<common git dir>/llmwiki/lock``, shared by every
    worktree, ``GIT_DIR`` setup and clone sharing that git dir; the project's state folder
    outside git."""
    if git is None:
        return ProjectLock(state_dir, timeout)
    common = git.common_dir()
    return ProjectLock(common / "llmwiki", timeout, root=common)
