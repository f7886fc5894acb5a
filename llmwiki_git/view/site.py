"""What the view reads, computed per request from the repository as it is now (never a
snapshot taken at start-up) and kept only while the state it came from is unchanged: the
branch tip's sha plus the work tree's pages (path and blob of each). One long-lived
workspace, as the MCP server keeps; one lock, so two requests never use it at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from ..checks.result import CheckResult
from ..publication.candidates import pending_index
from ..wiki.citations import AMBIGUOUS, BROKEN, PENDING, RESOLVED, Citation, citation_report
from ..wiki.model import Page, Wiki, page_blobs
from ..wiki.provenance import sources_dir
from ..wiki.slug import parse_target
from ..workspace import Workspace
from .html import url
from .render import Link, Renderer
from .security import Guard

T = TypeVar("T")
STALE_CODES = ("stale-page", "source-missing")


@dataclass(frozen=True)
class Edge:
    source: str  # page path
    target: str  # page path
    line: int  # where the link is, in the source page's file (1-based)


class Site:
    """The workspace, the guard and the per-state caches of one `llmwiki view`."""

    def __init__(self, ws: Workspace, guard: Guard, *, read_only: bool = False) -> None:
        self.ws = ws
        self.guard = guard
        self.read_only = read_only
        self.lock = threading.RLock()
        self._memo: dict[str, tuple[object, object]] = {}
        self._state: tuple[object, ...] | None = None

    @contextmanager
    def scope(self) -> Iterator[None]:
        """One request's use of the workspace: under the lock, the repository's state read
        once (at its first use), so each request sees the repository as it is now."""
        with self.lock:
            self._state = None
            try:
                yield
            finally:
                self._state = None

    def wiki(self) -> Wiki:
        """The work tree's wiki, its pages scanned through the checker's scan cache (only
        what changed is scanned again), kept while the state is unchanged."""
        return self.memo("wiki", self.state(), lambda: self.ws.cached_wiki("worktree"))

    def state(self) -> tuple[object, ...]:
        """What every cached value depends on: the tip, the candidates, and the work tree's
        pages (path and blob of each: git's listing, no page is read); read once a request."""
        if self._state is None:
            self._state = self._read_state()
        return self._state

    def forget_state(self) -> None:
        """The repository changed within this request (an approval): read it again."""
        self._state = None

    def _read_state(self) -> tuple[object, ...]:
        git = self.ws.git
        pages = page_blobs(
            self.ws.snapshot("worktree"),
            wiki_dir=self.ws.settings.wiki_dir,
            project_prefix=self.ws.project_prefix,
        )
        tip = git.rev_parse("HEAD") if git is not None else None
        refs = (
            tuple(tuple(r) for r in git.for_each_ref("refs/heads/llmwiki/review/", ("objectname",)))
            if git is not None
            else ()
        )
        return (tip, refs, hash(tuple(sorted(pages.items()))))

    def memo(self, name: str, key: object, compute: Callable[[], T]) -> T:
        held = self._memo.get(name)
        if held is not None and held[0] == key:
            return held[1]  # type: ignore[return-value]
        value = compute()
        self._memo[name] = (key, value)
        return value

    def check(self, wiki: Wiki) -> CheckResult:
        return self.memo("check", self.state(), lambda: self.ws.check("worktree"))

    def edges(self, wiki: Wiki) -> list[Edge]:
        """Every wikilink between two pages, resolved by the checker's resolver."""
        return self.memo("edges", self.state(), lambda: _edges(wiki))

    def renderer(self, wiki: Wiki, text: str, stale: dict[str, str] | None = None) -> Renderer:
        """A renderer whose wikilinks are classified as `llmwiki links` classifies them
        (resolved, ambiguous, pending with its candidate, broken) and whose citations open
        the cited lines of their source, marked when ``stale`` (source path -> why) names it."""
        pending = pending_index(self.ws.git) if self.ws.git is not None else None
        report = {c.target: c for c in citation_report(text, wiki, pending)}
        folder = sources_dir(self.ws.project_prefix)
        marks = stale or {}

        def wikilink(raw: str) -> Link:
            found = report.get(parse_target(raw).key)
            return _wikilink(wiki, found, raw)

        def citation(name: str, start: int, end: int) -> Link:
            path = f"{folder}/{name}"
            query = {"lines": f"{start}-{end}"} if start else {}
            href = url("/source/", path, **query) + (f"#L{start}" if start else "")
            if path in marks:
                return Link("cite stale", href, f"stale: {marks[path]}")
            return Link("cite", href, f"open {name} at lines {start}-{end}" if start else name)

        return Renderer(wikilink, citation)


def _wikilink(wiki: Wiki, found: Citation | None, raw: str) -> Link:
    if found is None or found.status == BROKEN:
        return Link("link broken", None, f"broken link: no page answers to {raw}")
    if found.status == PENDING:
        first = found.candidate_ids[0]
        return Link(
            "link pending",
            url("/review/", first),
            f"pending: candidate {', '.join(found.candidate_ids)} would create it",
        )
    page = wiki.by_id.get(found.page_id or "")
    href = url("/page/", page.path) if page is not None else None
    if found.status == AMBIGUOUS:
        return Link(
            "link ambiguous",
            href,
            f"ambiguous: {found.page_id}, also {', '.join(found.alternatives)}",
        )
    assert found.status == RESOLVED
    return Link("link", href, found.page_id or raw)


def _edges(wiki: Wiki) -> list[Edge]:
    resolved: dict[str, Page | None] = {}
    out = []
    for page in wiki.pages:
        for raw in page.scan.raw_links:  # Occurrence fields: line, col, inner, target, ...
            target = raw[3]
            if target not in resolved:
                parsed = parse_target(target)
                resolved[target] = None if parsed.is_self_anchor else wiki.resolve(parsed).page
            hit = resolved[target]
            if hit is not None and hit.path != page.path:
                out.append(Edge(page.path, hit.path, int(raw[0])))
    return out


def stale_marks(result: CheckResult, path: str) -> dict[str, str]:
    """Source path -> the checker's message, for the stale-page and source-missing
    problems of the page at ``path``."""
    return {
        p.target: p.message
        for p in result.problems
        if p.path == path and p.code in STALE_CODES and p.target
    }


def jsonable_rows(rows: list[Any]) -> list[dict[str, Any]]:
    return [r.to_json() for r in rows]
