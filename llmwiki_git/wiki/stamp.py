"""A cheap fingerprint of the work tree, so that a long-running process (the MCP server)
can reuse its last page listing when no file changed.

The stamp is every file's (path, mtime, size, inode) under the root, folders starting with
``.`` left out like everywhere else, plus the same for the extra files given (git's index:
``git add`` and commits change it): a few ``stat`` calls per file, far cheaper than the
listing itself (three git processes).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

_SKIP = {"node_modules", "__pycache__"}

Stamp = tuple[tuple[str, int, int, int], ...]


def _entry(path: str) -> tuple[str, int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (path, st.st_mtime_ns, st.st_size, st.st_ino)


def worktree_stamp(root: Path, extra: Iterable[Path] = ()) -> Stamp:
    found: list[tuple[str, int, int, int]] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name in _SKIP:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((entry.path, st.st_mtime_ns, st.st_size, st.st_ino))
    for path in extra:
        item = _entry(str(path))
        if item is not None:
            found.append(item)
    return tuple(sorted(found))
