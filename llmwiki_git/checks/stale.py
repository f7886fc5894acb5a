"""Stale pages and missing sources: the provenance rule of the checker.

A page written from sources names them (``sources:``) with the blob of each it was written
from (``sourceBlobs:``), and may cite their lines (``^[paper.md:12-18]``). At the checked
revision:

* ``stale-page`` -- a recorded blob is not the source's blob now; a citation's line range runs
  past the end of the source (it changed under the page); or the page drew on a source that
  was retracted since (``retracted:``, written by an offline ``llmwiki retract``);
* ``source-missing`` -- a source the page names or cites does not exist.

Everything here reads the tree being checked (the page's own record, not the history), so a
result is a function of the tree: cached with it, derived for the hook (delta.py), the same
in a shallow clone in CI. Only sources under the project's ``sources/`` folder are claims
this rule checks. With ``--base``, :func:`scoped` turns what a change newly made stale into
one problem on each source the change touched, naming the pages it left behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..gitstore.git import blob_id
from ..problems import Problem, make
from ..wiki.provenance import Finding, Sourcing, judge, line_count, sources_dir

CODES = frozenset(
    {"stale-page", "source-missing"}
)  # computed here, never by a page's own scan (links.py)
ReadPaths = Callable[
    [list[str]], Mapping[str, bytes]
]  # source paths -> their bytes at the checked scope


class SourceTable:
    """The sources at one scope: path -> blob (None: a work-tree file to hash), and the
    number of lines of each, read only for sources cited with a line range. ``lines_cache``
    (blob -> lines, kept between runs by the checker's cache) spares reading them again."""

    def __init__(
        self,
        blobs: Mapping[str, str | None],
        read: ReadPaths,
        lines_cache: dict[str, int] | None = None,
    ) -> None:
        self.blobs = dict(blobs)
        self.read = read
        self.lines_cache = lines_cache if lines_cache is not None else {}
        self._data: dict[str, bytes] = {}

    def _load(self, paths: Iterable[str]) -> None:
        wanted = [p for p in dict.fromkeys(paths) if p in self.blobs and p not in self._data]
        if wanted:
            self._data.update(self.read(wanted))

    def prepare(self, items: Iterable[tuple[str, Sourcing]], project_prefix: str) -> None:
        """Read, at once, what checking ``items`` needs: sources without a blob id, and
        cited sources whose line count is not cached."""
        folder = sources_dir(project_prefix)
        needed = [p for p, blob in self.blobs.items() if blob is None]
        for _, sourcing in items:
            for item in sourcing:
                if item[0] == "c" and item[5]:
                    path = f"{folder}/{item[1]}"
                    blob = self.blobs.get(path)
                    if path in self.blobs and (blob is None or blob not in self.lines_cache):
                        needed.append(path)
        self._load(needed)

    def blob(self, path: str) -> str | None:
        """The source's blob id; None when it does not exist (or cannot be read)."""
        if path not in self.blobs:
            return None
        blob = self.blobs[path]
        if blob is None:
            self._load([path])
            data = self._data.get(path)
            blob = self.blobs[path] = blob_id(data) if data is not None else None
        return blob

    def lines(self, path: str) -> int | None:
        """How many lines the source has (as citations count them), None when unknown."""
        blob = self.blob(path)
        if blob is None:
            return None
        known = self.lines_cache.get(blob)
        if known is None:
            self._load([path])
            data = self._data.get(path)
            if data is None:
                return None
            known = self.lines_cache[blob] = line_count(data)
        return known


def page_problems(
    path: str, sourcing: Sourcing, table: SourceTable, project_prefix: str
) -> list[Problem]:
    """The provenance problems of one page (its ``sourcing`` record, see provenance.Sourcing),
    as the rule judges it (provenance.judge)."""
    return [_problem(path, f) for f in judge(sourcing, project_prefix, table.blob, table.lines)]


def _problem(path: str, f: Finding) -> Problem:
    source = f.source
    if f.reason == "missing" and f.cite is not None:
        message = (
            f"source missing: {f.cite} cites {source}, which does not exist; restore it, or remove the "
            f"citation (`llmwiki retract {source}` cleans up after a removed source)"
        )
    elif f.reason == "missing":
        message = (
            f"source missing: the page names {source} in `sources:`, which does not exist; restore it, or "
            f"run `llmwiki retract {source}` to remove what it fed"
        )
    elif f.reason == "past-end":
        message = (
            f"stale page: {f.cite} cites lines up to {f.last} of {source}, which has {f.lines} now (it "
            "changed since); recompile with `llmwiki compile --stale`"
        )
    elif f.reason == "retracted":
        message = (
            f"stale page: it drew on {source}, which was retracted; review what it still says, then remove "
            "the `retracted:` entry (or recompile it with a model)"
        )
    else:
        message = (
            f"stale page: written from {source} at blob {f.recorded}, which is blob {f.now} now; recompile "
            "with `llmwiki compile --stale` (or, if the page still holds, record the new blob in "
            "`sourceBlobs:`)"
        )
    return make(
        path,
        f.line,
        f.col,
        "source-missing" if f.reason == "missing" else "stale-page",
        message,
        source,
    )


def problems(
    items: Iterable[tuple[str, Sourcing]], table: SourceTable, project_prefix: str
) -> list[Problem]:
    """The provenance problems of ``items`` ((page path, sourcing) of the pages that have any)."""
    items = [(path, sourcing) for path, sourcing in items if sourcing]
    if not items:
        return []
    table.prepare(items, project_prefix)
    return [
        p for path, sourcing in items for p in page_problems(path, sourcing, table, project_prefix)
    ]


def mentions(sourcing: Sourcing, project_prefix: str) -> set[str]:
    """The source paths (from the repository root) a page's record names, retracts or cites."""
    folder = sources_dir(project_prefix)
    lead = f"{project_prefix}/" if project_prefix else ""
    return {f"{folder}/{item[1]}" if item[0] == "c" else lead + item[1] for item in sourcing}


def scoped(
    problems_new: list[Problem],
    changed: Mapping[str, tuple[str | None, str | None]],
    touched: set[str],
) -> list[Problem]:
    """The provenance problems a change newly made (``problems_new``), as the gate reports
    them: a source the change touched (``changed``: source path -> (old blob, new blob),
    None for absent) without touching the pages it feeds gets ONE problem on the source
    naming those pages; pages the change touched too are quiet (it updated both); a
    problem whose source the change did not touch (the page's own edit made it) stays on
    the page."""
    out: list[Problem] = []
    left: dict[str, list[str]] = {}
    for p in problems_new:
        if p.code not in CODES:
            out.append(p)
            continue
        source = p.target or ""
        if source not in changed:
            out.append(p)
        elif p.path not in touched:
            left.setdefault(source, [])
            if p.path not in left[source]:
                left[source].append(p.path)
    for source, pages in left.items():
        old, new = changed[source]
        shown = ", ".join(pages[:20]) + (f" and {len(pages) - 20} more" if len(pages) > 20 else "")
        if new is None:
            message = (
                f"{source} is deleted, but {len(pages)} page(s) still cite it: {shown}; "
                f"run `llmwiki retract {source}` to remove or mark what it fed"
            )
            code = "source-missing"
        else:
            change = f"blob {old} -> {new}" if old and new else "changed" if old else "added"
            message = (
                f"{source} changed ({change}) without the pages it feeds: {shown}; run `llmwiki compile "
                "--stale` (or update them in this change)"
            )
            code = "stale-page"
        out.append(make(source, 1, 1, code, message, source))
    return out
