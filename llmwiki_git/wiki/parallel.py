"""Reading and scanning many pages on every core: the cold first check of a large wiki.

Scanning is pure Python, so threads do not help. This process forks a worker per extra
usable core (no re-import, nothing to set up) and scans a share itself; each worker reads
its own share of the files (the snapshot is inherited), scans them, and sends back plain
records with `marshal` (the scan cache's own format: no pickling, no objects to rebuild).
Used only where it pays: at least `MIN_PAGES` pages, more than one usable core, Linux
(where fork is the safe default), and no other thread running (a fork copies only the
calling thread, so a lock held by another one would stay held in the child). Anything that
goes wrong in a worker falls back to scanning its share here, so results never depend on
it. Workers die with this process and never hold the repository lock (gitstore/lock.py
closes held lock descriptors in every forked child).
"""

from __future__ import annotations

import gc
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import PageReadError
from ..gitstore.git import blob_id
from .pages import MAX_PAGE_BYTES, PageScan, ScanRecord, only_issue_record, scan_record
from .snapshots import Snapshot, SourceFile

MIN_PAGES = 400  # below this, starting workers costs more than it saves
T = TypeVar("T")
R = TypeVar("R")

# One file read and scanned: (path, blob id or None when unreadable, the scan as a plain
# record, whether it was scanned now rather than found in ``known``).
Scanned = tuple[str, "str | None", ScanRecord, bool]


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def die_with_parent(parent: int) -> None:
    """In a worker: end it when the process that forked it dies (a writer killed with -9
    would otherwise leave its workers running on)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def _workers(count: int) -> int:
    """How many processes (this one included) should share ``count`` pages."""
    if (
        count < MIN_PAGES
        or not sys.platform.startswith("linux")
        or os.environ.get("LLMWIKI_SERIAL_SCAN")
    ):
        return 1
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return 1
    return max(1, min(usable_cores(), 8))


def _read_and_scan(
    snapshot: Snapshot,
    items: list[SourceFile],
    max_bytes: int,
    known: Mapping[str, ScanRecord],
    dialect: str = "",
) -> list[Scanned]:
    out: list[Scanned] = []
    for path, data in snapshot.read(items).items():
        if isinstance(data, PageReadError):
            out.append((path, None, only_issue_record(data.code, data.reason), False))
        elif isinstance(data, OSError):
            out.append(
                (path, None, only_issue_record("unreadable-page", f"cannot read: {data}"), False)
            )
        else:
            blob = blob_id(data)
            record = known.get(blob + dialect)
            if record is not None and len(record) == len(PageScan._fields):
                out.append((path, blob, record, False))
            else:
                record = scan_record(data, max_bytes=max_bytes, dialect=dialect)
                out.append((path, blob, record, True))
    return out


def _fork_share(work: Any, parent: int) -> tuple[int, int]:
    """Start a worker that runs ``work()`` and writes its marshalled result to a pipe;
    returns (pid, read end)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns
        code = 1
        try:
            os.close(read_end)
            die_with_parent(parent)
            payload = marshal.dumps(work())
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
            code = 0
        finally:  # whatever happened, the worker ends here (a failed share is redone by the parent)
            os._exit(code)
    os.close(write_end)
    return pid, read_end


_FAILED = object()


def _collect(pid: int, read_end: int) -> Any:
    """A worker's result, or `_FAILED`."""
    try:
        with os.fdopen(read_end, "rb") as handle:
            payload = handle.read()
    finally:
        _, status = os.waitpid(pid, 0)
    if status != 0 or not payload:
        return _FAILED
    try:
        return marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return _FAILED


def in_shares(work: Callable[[list[T]], R], items: list[T], workers: int | None = None) -> list[R]:
    """``work`` of consecutive shares of ``items`` on as many cores as are usable, this
    process taking the first share: one result per share, in order. ``work`` must return
    plain data `marshal` can carry (str, bytes, numbers, None, tuples, lists, dicts) and
    give the same result wherever it runs; a share whose worker fails is redone here.
    ``workers`` (processes, this one included) defaults to what `_workers` finds usable."""
    workers = _workers(len(items)) if workers is None else workers
    paused = gc.isenabled()  # the work builds records by the hundred thousand and frees
    gc.disable()  # none of them: cycle collection would only walk them over and over
    try:
        return _in_shares(work, items, workers)
    finally:
        if paused:
            gc.enable()


def _in_shares(work: Callable[[list[T]], R], items: list[T], workers: int) -> list[R]:
    if workers < 2:
        return [work(items)]
    size = -(-len(items) // workers)
    shares = [items[i : i + size] for i in range(0, len(items), size)]
    parent = os.getpid()
    started: dict[int, tuple[int, int]] = {}  # share index -> (worker pid, read end)
    try:
        for index in range(1, len(shares)):
            try:
                started[index] = _fork_share(lambda share=shares[index]: work(share), parent)
            except OSError:  # no more processes (limits, a sandbox): this one does that share
                break
        done: dict[int, R] = {0: work(shares[0])}
        for index in range(1, len(shares)):
            if index in started:
                got = _collect(*started.pop(index))
                if got is not _FAILED:
                    done[index] = got
                    continue
            done[index] = work(shares[index])
    finally:
        for pid, read_end in started.values():  # interrupted: end and reap the workers left
            try:
                os.kill(pid, signal.SIGKILL)
                os.close(read_end)
                os.waitpid(pid, 0)
            except OSError:
                pass
    return [done[index] for index in range(len(shares))]


def read_and_scan(
    snapshot: Snapshot,
    items: list[SourceFile],
    max_bytes: int = MAX_PAGE_BYTES,
    known: Mapping[str, ScanRecord] | None = None,
    dialect: str = "",
) -> list[Scanned]:
    """Read ``items`` from ``snapshot`` and scan each, in order, on as many cores as are
    usable; a page whose blob has a record in ``known`` (the scan cache, by blob id plus
    ``dialect``, the flavour's scanning rules) is not scanned."""
    found = known if known is not None else {}
    shares = in_shares(
        lambda share: _read_and_scan(snapshot, share, max_bytes, found, dialect), items
    )
    return [scanned for share in shares for scanned in share]
