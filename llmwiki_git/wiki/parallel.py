"""Scanning many pages on every core: the cold first check of a large wiki.

Scanning is pure Python (~0.5 ms a page), so threads do not help; worker processes forked
from this one (no re-import, nothing to set up) each scan a share of the pages and send back
plain tuples. Used only where it pays: at least `MIN_PAGES` pages to scan, more than one
usable core, and a platform where fork is the safe default (Linux); anything that goes
wrong falls back to scanning here, so results never depend on it.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from .pages import MAX_PAGE_BYTES, PageScan, scan_page

MIN_PAGES = 400  # below this, starting workers costs more than it saves


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def die_with_parent(parent: int) -> None:
    """Worker initializer: end this worker when the process that forked it dies (a writer
    killed with -9 would otherwise leave its workers blocked on their queue for good)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def _scan_share(args: tuple[list[bytes], int]) -> list[tuple[Any, ...]]:
    pages, max_bytes = args
    return [tuple(scan_page(data, max_bytes=max_bytes)) for data in pages]


def scan_pages(pages: list[bytes], max_bytes: int = MAX_PAGE_BYTES) -> list[PageScan]:
    """``scan_page`` of each of ``pages``, in order, on as many cores as are usable."""
    workers = min(usable_cores(), 8)
    if workers < 2 or len(pages) < MIN_PAGES or not sys.platform.startswith("linux") \
            or os.environ.get("LLMWIKI_SERIAL_SCAN"):
        return [scan_page(data, max_bytes=max_bytes) for data in pages]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    size = -(-len(pages) // (workers * 4))  # a few shares per worker evens out big pages
    shares = [(pages[i:i + size], max_bytes) for i in range(0, len(pages), size)]
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            records = [record for share in pool.map(_scan_share, shares) for record in share]
    except (OSError, RuntimeError, ImportError):  # no workers (sandbox, limits, a broken pool): scan here instead
        return [scan_page(data, max_bytes=max_bytes) for data in pages]
    return [PageScan._make(record) for record in records]
