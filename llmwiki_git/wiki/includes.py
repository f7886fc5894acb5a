"""Hugo's include shortcode, for headings only: a page that includes a file shows that file's
headings, so a link to one of them through the including page names a heading it has.

``{{% include "path" %}}`` (or ``{{< … >}}``) is read as the Hugo docs' own shortcode finds
its file: a path starting with ``/`` from the wiki root (Hugo's content folder), any other
first beside the including page, then from the wiki root; the path may leave out ``.md``
or name a page bundle's folder (``index.md``, ``_index.md``). Bounded, never an error:

* only pages of the wiki are followed (a path leaving the wiki root names nothing, so no
  file outside the repository is read: the pages were read already);
* an include naming no page adds no heading;
* includes are followed ``MAX_DEPTH`` deep, and a cycle is followed once.

The page's own headings and those it includes become its ``headings``; its ``names_key``
(the checker's fingerprint) changes with them, so a changed included file re-checks the
links to the pages including it. Only the Hugo flavour follows includes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Container, Iterable, Mapping

from .pages import PageScan

MAX_DEPTH = 8


def resolve_include(
    page_path: str, include: str, root_dir: str, pages: Container[str]
) -> str | None:
    """The path (from the repository root) of the page ``include``, written on the page at
    ``page_path``, names; None when it names none among ``pages`` (paths)."""
    prefix = f"{root_dir}/" if root_dir else ""
    include = include.strip().replace("\\", "/")
    if not include or "\0" in include:
        return None
    bases = [""] if include.startswith("/") else [posixpath.dirname(page_path[len(prefix) :]), ""]
    for base in bases:
        joined = posixpath.normpath(posixpath.join(base, include.lstrip("/")))
        if joined == "." or joined == ".." or joined.startswith("../") or joined.startswith("/"):
            continue  # leaves the wiki root
        for candidate in (joined, f"{joined}.md", f"{joined}/index.md", f"{joined}/_index.md"):
            if candidate.lower().endswith(".md") and f"{prefix}{candidate}" in pages:
                return f"{prefix}{candidate}"
    return None


def included_headings(
    scans: Mapping[str, PageScan], root_dir: str, paths: Iterable[str] | None = None
) -> dict[str, tuple[str, ...]]:
    """Path -> headings (sorted) of each page of ``scans`` (path -> scan), or of ``paths``
    only, whose includes add headings to its own."""
    done: dict[str, frozenset[str]] = {}

    def headings(path: str, depth: int, seen: frozenset[str]) -> tuple[frozenset[str], bool]:
        """(the headings of ``path`` and what it includes, whether that is all of them)."""
        if path in done:
            return done[path], True
        scan = scans[path]
        found = set(scan.headings)
        whole = True
        for include in scan.includes:
            target = resolve_include(path, include, root_dir, scans)
            if target is None:
                continue
            if target in seen or depth >= MAX_DEPTH:
                whole = False  # a cycle or too deep: followed as far as allowed
                continue
            more, complete = headings(target, depth + 1, seen | {target})
            found |= more
            whole = whole and complete
        result = frozenset(found)
        if whole:
            done[path] = result
        return result, whole

    out = {}
    for path in scans if paths is None else paths:
        scan = scans[path]
        if scan.includes:
            merged = tuple(sorted(headings(path, 0, frozenset({path}))[0]))
            if merged != scan.headings:
                out[path] = merged
    return out
