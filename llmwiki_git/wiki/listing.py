"""The live page listing: path -> blob id of every page, no page scanned. How retrieval
notices pages added, changed or deleted since `llmwiki index` (retrieval/refresh.py).

A one-shot command may start the listing in a thread (`PageListing.prefetch`: git does the
work in its own process) while it imports and loads the rest; the next call takes the result.
A long-running process (the MCP server) lists with ``reuse``: the same dict (not to be
modified) comes back while nothing changed, which a kernel watch on the work tree's folders
says in one system call (`stamp.WorktreeWatch`), else a stat of every file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..errors import DATA_ERRORS
from ..gitstore.git import Git
from .stamp import Stamp, WorktreeWatch, worktree_stamp

Listing = dict[str, str]


class PageListing:
    """``list_pages()`` made cheap to call again. ``root``: the work tree; ``git``: its
    repository (git's index file is watched too: staging changes what the listing says)."""

    def __init__(
        self, list_pages: Callable[[], Listing], root: Path, git: Git | None, *, reuse: bool = False
    ) -> None:
        self._list_pages = list_pages
        self._root = root
        self._git = git
        self.reuse = reuse
        self._listing: tuple[object, Listing] | None = None  # (stamp, listing) last made
        self._extra: list[Path] | None = None  # git's index file, found once
        self._watch: WorktreeWatch | None = None
        self._watching: bool | None = None  # None: not tried yet; False: no watch can be had
        self._prefetched: tuple[threading.Thread, dict[str, object]] | None = None

    def prefetch(self) -> None:
        """Start the listing in a thread; the next call takes its result (or its error)."""
        box: dict[str, object] = {}

        def list_pages() -> None:
            try:
                box["pages"] = self._make()
            except DATA_ERRORS as exc:  # handed to the caller
                box["error"] = exc

        thread = threading.Thread(target=list_pages, name="llmwiki-listing", daemon=True)
        thread.start()
        self._prefetched = (thread, box)

    def __call__(self) -> Listing:
        if self._prefetched is not None:
            (thread, box), self._prefetched = self._prefetched, None
            thread.join()
            error = box.get("error")
            if isinstance(error, BaseException):
                raise error
            pages = box.get("pages")
            if isinstance(pages, dict):
                return pages
        return self._make()  # not prefetched (or the thread died: list here, where errors surface)

    @property
    def watched(self) -> bool:
        """Whether a kernel watch tells this listing what changed."""
        return self._watch is not None

    def _make(self) -> Listing:
        stamp: Stamp | str | None = None
        if self.reuse:
            if self._extra is None:
                self._extra = [self._git.git_path("index")] if self._git is not None else []
            if self._watching is None:
                self._watch = WorktreeWatch.create(self._root, self._extra)
                self._watching = self._watch is not None
                # A new watch starts now: the listing made next is its reference.
                stamp = "watched" if self._watch else worktree_stamp(self._root, self._extra)
            elif self._watch is not None:
                stamp = "watched"
                if self._listing is not None and not self._watch.changed():
                    return self._listing[1]
                # The events are consumed now: if the listing below fails, the next call must
                # not find an empty queue and serve the listing from before the change.
                self._listing = None
            else:
                stamp = worktree_stamp(self._root, self._extra)
                if self._listing is not None and self._listing[0] == stamp:
                    return self._listing[1]
        blobs = self._list_pages()
        if stamp is not None:
            self._listing = (stamp, blobs)
        return blobs
