"""The repository lock: one llmwiki writer at a time (saving, staging, approving, indexing).

``repository_lock`` places it at ``<git common dir>/llmwiki/lock``, so every worktree, ``GIT_DIR``
setup and clone sharing one git dir serializes; outside git it is ``.llmwiki/lock``.

The lock is a file created exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW``) holding a JSON owner
record ``{"pid", "startTime", "host", "command"}``. ``startTime`` is field 22 of
``/proc/<pid>/stat`` (clock ticks since boot) where /proc exists, so a reused pid is told
apart from the original owner; elsewhere it is the time of acquisition (a float) and only
the pid is checked. A bare integer (the reference tool's legacy format) is read as a pid.

A lock is stale when its content is unreadable or oversized, when it is a symlink or not a
regular file, when its pid is dead (or a zombie), or when its pid is alive but started at a
different time. Locks written on another host are never judged stale: we cannot see its
processes.

Races. Creating, reclaiming and releasing all happen inside a short critical section guarded
by ``flock`` on ``.llmwiki/lock.guard`` (a file that is never deleted; the kernel drops the
flock when its holder dies, so the guard itself can never go stale). Inside it a reclaimer
re-reads the lock and only moves it aside if it is still the very file (same inode, same
bytes) it judged stale; a creator writes its whole record before leaving the guard, so no
reader that holds the guard ever sees a half-written live lock. The stale file is moved with
an atomic rename to a unique name, checked again, and only then deleted; if what was moved
turns out not to be the stale file it is linked back (no clobbering) instead. Where ``flock``
does not exist an empty lock file younger than a grace period counts as being written.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import socket
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..errors import LlmwikiError
from ..git import Git

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = "lock"
GUARD_NAME = "lock.guard"
MAX_RECORD_BYTES = 4096
EMPTY_GRACE_SECONDS = 2.0
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class LockBusy(LlmwikiError):
    """The project lock is held by a live process and waiting for it timed out."""

    def __init__(self, path: Path, owner: LockOwner | None, waited: float) -> None:
        if owner is None:
            who = "another process (its owner record is still being written)"
        else:
            who = f"pid {owner.pid}"
            if owner.command:
                who += f" ({owner.command})"
            if owner.host and owner.host != socket.gethostname():
                who += f" on host {owner.host}"
            if owner.since is not None:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owner.since))
                who += f", since {stamp} ({_age(time.time() - owner.since)} ago)"
        super().__init__(
            f"the project lock {path} is held by {who}; gave up after {waited:.1f}s",
            hint=f"wait, or if that process is gone delete {path}",
        )
        self.path = path
        self.owner = owner


@dataclass(frozen=True)
class LockOwner:
    """Who holds a lock, as its record says; ``since`` is when the lock file was written."""

    pid: int
    start_time: int | float | None
    host: str
    command: str
    since: float | None = None


@dataclass(frozen=True)
class _Seen:
    """One observation of the lock path: identity, kind, bytes and the parsed owner."""

    dev: int
    ino: int
    kind: str  # "file" | "symlink" | "other"
    raw: bytes | None  # None: not read (symlink, other, oversized)
    mtime: float
    owner: LockOwner | None

    def same_file(self, other: _Seen) -> bool:
        return (self.dev, self.ino, self.kind, self.raw) == (other.dev, other.ino, other.kind, other.raw)


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


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


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
    return LockOwner(pid, start, host if isinstance(host, str) else "",
                     command if isinstance(command, str) else "", since)


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
        self._mine: _Seen | None = None

    # -- public API

    @property
    def held(self) -> bool:
        return self._mine is not None

    def owner(self) -> LockOwner | None:
        """The current holder as its record says (None when unlocked or unreadable)."""
        seen = self._observe()
        return seen.owner if seen is not None else None

    def acquire(self) -> ProjectLock:
        if self._mine is not None:
            raise LlmwikiError(f"{self.path} is already held by this ProjectLock")
        self._prepare_state_dir()
        started = time.monotonic()
        deadline = started + self.timeout
        record = self._record()
        last: _Seen | None = None
        while True:
            if self._try_create(record, deadline):
                return self
            seen = self._observe()
            if seen is None:
                continue  # released between our attempt and our look: try again at once
            if self._stale_reason(seen) is not None:
                self._reclaim(seen, deadline)
                continue
            last = seen
            now = time.monotonic()
            if now >= deadline:
                raise LockBusy(self.path, last.owner, now - started)
            time.sleep(min(self.poll, max(0.0, deadline - now)))

    def release(self) -> None:
        """Delete the lock only if it is still the file we created with our record."""
        mine, self._mine = self._mine, None
        if mine is None:
            return
        with self._guard(time.monotonic() + max(self.timeout, 5.0), required=False):
            seen = self._observe()
            if seen is not None and seen.same_file(mine):
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass

    def __enter__(self) -> ProjectLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    # -- internals

    def _prepare_state_dir(self) -> None:
        state, root = self.state_dir, self.root
        root_real = root.resolve()
        if state.is_symlink() and not state.exists():
            raise LlmwikiError(f"{state} is a dangling symlink; refusing to lock",
                               hint=f"make {state.name} a real folder inside {root}")
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

    def _record(self) -> bytes:
        pid = os.getpid()
        start: int | float | None = process_start_time(pid)
        if start is None:
            start = time.time()
        data = {"pid": pid, "startTime": start, "host": socket.gethostname(), "command": self.command}
        return (json.dumps(data) + "\n").encode("utf-8")

    @contextmanager
    def _guard(self, deadline: float, *, required: bool = True) -> Iterator[None]:
        """The short critical section around create / reclaim / release (flock)."""
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        path = self.state_dir / GUARD_NAME
        deadline = max(deadline, time.monotonic() + 2.0)  # the guard is held for microseconds
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LlmwikiError(f"{path} is a symlink; refusing to lock",
                                   hint=f"delete {path} (it holds no data)") from exc
            raise LlmwikiError(f"cannot open {path}: {exc.strerror or exc}") from exc
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        if not required:
                            break  # release: better an unguarded check than a leaked lock
                        raise LockBusy(self.path, self.owner(), self.timeout) from None
                    time.sleep(0.002)
            yield
        finally:
            os.close(fd)  # drops the flock

    def _try_create(self, record: bytes, deadline: float) -> bool:
        with self._guard(deadline):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
            except FileExistsError:
                return False
            except OSError as exc:
                raise LlmwikiError(f"cannot create {self.path}: {exc.strerror or exc}") from exc
            try:
                view = memoryview(record)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
                st = os.fstat(fd)
            except BaseException:
                os.close(fd)
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
                raise
            os.close(fd)
            self._mine = _Seen(st.st_dev, st.st_ino, "file", record, st.st_mtime, parse_owner(record, st.st_mtime))
            return True

    def _observe(self) -> _Seen | None:
        """What is at the lock path now (None: nothing)."""
        for _ in range(5):
            try:
                st = os.lstat(self.path)
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(st.st_mode):
                return _Seen(st.st_dev, st.st_ino, "symlink", None, st.st_mtime, None)
            if not stat.S_ISREG(st.st_mode):
                return _Seen(st.st_dev, st.st_ino, "other", None, st.st_mtime, None)
            try:
                fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    continue  # swapped for a symlink under us: look again
                return _Seen(st.st_dev, st.st_ino, "file", None, st.st_mtime, None)
            try:
                fst = os.fstat(fd)
                if not stat.S_ISREG(fst.st_mode):
                    return _Seen(fst.st_dev, fst.st_ino, "other", None, fst.st_mtime, None)
                raw = os.read(fd, MAX_RECORD_BYTES + 1)
            finally:
                os.close(fd)
            if len(raw) > MAX_RECORD_BYTES:
                return _Seen(fst.st_dev, fst.st_ino, "file", None, fst.st_mtime, None)
            return _Seen(fst.st_dev, fst.st_ino, "file", raw, fst.st_mtime, parse_owner(raw, fst.st_mtime))
        return None

    def _stale_reason(self, seen: _Seen) -> str | None:
        if seen.kind == "symlink":
            return "it is a symlink"
        if seen.kind == "other":
            return "it is not a regular file"
        owner = seen.owner
        if owner is None:
            if seen.raw == b"" and fcntl is None and time.time() - seen.mtime < EMPTY_GRACE_SECONDS:
                return None  # pragma: no cover - a creator without flock may still be writing
            return "its content is not an owner record"
        if owner.host and owner.host != socket.gethostname():
            return None  # another machine's process: we cannot tell, so it is live
        if not pid_alive(owner.pid):
            return f"pid {owner.pid} is not running"
        if isinstance(owner.start_time, int):
            current = process_start_time(owner.pid)
            if current is not None and current != owner.start_time:
                return f"pid {owner.pid} now belongs to a different process"
        return None

    def _reclaim(self, seen: _Seen, deadline: float) -> None:
        """Move a stale lock out of the way, only if it is still exactly the file judged stale."""
        with self._guard(deadline):
            now = self._observe()
            if now is None or not now.same_file(seen) or self._stale_reason(now) is None:
                return  # changed meanwhile: the caller looks again
            aside = self.state_dir / f"{LOCK_NAME}.stale.{os.getpid()}.{secrets.token_hex(4)}"
            try:
                os.rename(self.path, aside)
            except FileNotFoundError:
                return
            except OSError as exc:
                raise LlmwikiError(f"cannot reclaim the stale lock {self.path}: {exc.strerror or exc}",
                                   hint=f"delete {self.path} by hand") from exc
            try:
                moved = os.lstat(aside)
            except FileNotFoundError:
                return
            if (moved.st_dev, moved.st_ino) != (seen.dev, seen.ino):
                # Not the file we judged stale (only possible without flock): put it back
                # unless someone created a new lock meanwhile, then drop our copy.
                try:
                    os.link(aside, self.path, follow_symlinks=False)
                except OSError:
                    pass
            if stat.S_ISDIR(moved.st_mode):
                return  # a folder named lock: leave it aside, never delete user data
            try:
                os.unlink(aside)
            except OSError:
                pass


def read_owner(state_dir: Path) -> LockOwner | None:
    """Who holds ``<state_dir>/lock`` right now, as its record says (None: free or unreadable)."""
    return ProjectLock(state_dir).owner()


def repository_lock(git: Git | None, state_dir: Path, timeout: float = 60.0) -> ProjectLock:
    """The one lock of a repository: ``<common git dir>/llmwiki/lock``, shared by every
    worktree, ``GIT_DIR`` setup and clone sharing that git dir; the project's state folder
    outside git."""
    if git is None:
        return ProjectLock(state_dir, timeout)
    common = git.common_dir()
    return ProjectLock(common / "llmwiki", timeout, root=common)
