"""Where a markdown link's destination points: ``[text](../other.md#anchor)`` read from the
page it stands in (the checker checks it, ``llmwiki mv`` rewrites it)."""

from __future__ import annotations

import posixpath
from urllib.parse import unquote


def destination(page_path: str, url: str) -> tuple[str, str | None]:
    """(repository path, anchor or None) that ``url`` names from the page at ``page_path``:
    query dropped, percent-escapes decoded, ``.`` and ``..`` resolved ("" for ``#anchor``
    alone; a path starting with ``..`` leaves the repository)."""
    path, sep, anchor = url.partition("#")
    path = path.split("?", 1)[0]
    if "%" in anchor:
        anchor = unquote(anchor)
    if not path:
        return "", (anchor if sep else None)
    if "%" in path:
        path = unquote(path)
    folder = page_path.rsplit("/", 1)[0] if "/" in page_path else ""
    return posixpath.normpath(posixpath.join(folder, path)), (anchor if sep else None)
