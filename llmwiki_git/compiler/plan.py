"""What a compile run has to do: the sources whose blob at the compiled commit is not what
the pages they feed record, less those an open candidate already stages at that blob.

A source is up to date when some page it feeds records its current blob (the provenance
lookup of ``wiki.provenance``); pages of it that still record an older blob are stale, which
`review show`, `context --json` and a staleness check see from the same lookup.

``compile --stale`` plans by page instead: each page recording a blob of a source that is not
the source's blob now, whatever the other pages of that source record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..gitstore.git import Git
from ..publication.candidates import list_candidates
from ..wiki.frontmatter import parse
from ..wiki.model import Wiki
from ..wiki.pages import decode
from ..wiki.provenance import Fed, Provenance, provenance
from .sources import Source, list_sources, read_sources


@dataclass
class Plan:
    base: str
    wiki: Wiki  # at base
    texts: dict[str, str]  # page path -> its text at base
    provenance: Provenance
    sources: list[Source]  # every readable source at base
    todo: list[Source] = field(default_factory=list)  # to compile
    up_to_date: list[Source] = field(default_factory=list)
    staged: dict[str, str] = field(
        default_factory=dict
    )  # source path -> the open candidate staging its blob
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    project_prefix: str = ""
    stale: list[Fed] = field(
        default_factory=list
    )  # --stale: each (page, source) recording an older blob, by page

    def stale_pages(self) -> list[str]:
        """The pages ``--stale`` rewrites, in order."""
        return list(dict.fromkeys(f.page for f in self.stale))

    def kind_of(self, path: str) -> str | None:
        """A page's frontmatter ``kind`` (``source-note`` for the offline notes)."""
        text = self.texts.get(path)
        kind = parse(text).data.get("kind") if text else None
        return kind if isinstance(kind, str) else None


@dataclass
class Repairs:
    """What the run changed in a page after it was written, so nobody meets it silently:
    citations of files or lines the run did not show (dropped), links to no page (made plain
    text), source text left out of a quote (images, links that cannot resolve, control
    characters); and whether the page has no citation left (a warning)."""

    citations_dropped: list[str] = field(default_factory=list)
    links_unlinked: list[str] = field(default_factory=list)
    text_stripped: int = 0
    uncited: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.citations_dropped or self.links_unlinked or self.text_stripped or self.uncited
        )

    def line(self) -> str:
        """One line: ``2 citations dropped (a.md:9-9, b.md:1-2); 1 link unlinked (x)…``."""
        parts = []
        if self.citations_dropped:
            parts.append(
                f"{len(self.citations_dropped)} citation(s) dropped "
                f"({', '.join(self.citations_dropped[:5])})"
            )
        if self.links_unlinked:
            parts.append(
                f"{len(self.links_unlinked)} link(s) unlinked ({', '.join(self.links_unlinked[:5])})"
            )
        if self.text_stripped:
            parts.append(f"{self.text_stripped} image(s) or link(s) of quoted text made plain")
        if self.uncited:
            parts.append("warning: no citation left")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "citationsDropped": self.citations_dropped,
            "linksUnlinked": self.links_unlinked,
            "textStripped": self.text_stripped,
            "uncited": self.uncited,
        }


@dataclass
class Written:
    """One page of the run: where, from which sources, whether it is new, and what was
    repaired in it."""

    target: str
    sources: list[str]
    change: str  # add | replace
    repairs: Repairs = field(default_factory=Repairs)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "sources": self.sources,
            "change": self.change,
            "repairs": self.repairs.to_json(),
        }


def page_path(wiki: Wiki, slug: str, taken: set[str]) -> str:
    """A new page ``<wiki root>/concepts/<slug>.md`` whose name no page answers to yet (a
    new page must never take over an existing link), with ``-2``, ``-3``… when needed."""
    names = wiki.name_slugs() | taken
    base = slug or "source"
    candidate, number = base, 1
    while candidate in names:
        number += 1
        candidate = f"{base}-{number}"
    taken.add(candidate)
    return "/".join(p for p in (wiki.root_dir, "concepts", f"{candidate}.md") if p)


def staged_sources(git: Git) -> dict[tuple[str, str], str]:
    """(source path, blob) -> the id of an open, well-formed candidate whose trailers record
    it (the first by age): a source staged there needs no second run."""
    found: dict[tuple[str, str], str] = {}
    for candidate in list_candidates(git):
        if candidate.trailers is None or candidate.notes:
            continue
        for pair in candidate.trailers.sources:
            found.setdefault(pair, candidate.id)
    return found


def page_texts(git: Git, wiki: Wiki) -> dict[str, str]:
    """Every page's text at the wiki's revision (one ``cat-file --batch``)."""
    blobs = git.read_blobs(p.blob for p in wiki.pages if p.blob)
    texts = {}
    for page in wiki.pages:
        data = blobs.get(page.blob or "")
        if data is not None:
            text, _ = decode(data)
            if text is not None:
                texts[page.path] = text
    return texts


def make_plan(git: Git, wiki: Wiki, base: str, project_prefix: str, *, stale: bool = False) -> Plan:
    """What to compile at ``base``: the sources no page records at their blob; with
    ``stale``, the sources some page records at another blob, and those pages."""
    texts = page_texts(git, wiki)
    found = provenance(git, texts, base, project_prefix, wiki.root_dir)
    sources, unreadable = read_sources(git, list_sources(git, base, project_prefix), project_prefix)
    plan = Plan(
        base, wiki, texts, found, sources, unreadable=unreadable, project_prefix=project_prefix
    )
    open_runs = staged_sources(git)
    if stale:
        pairs = found.stale({s.path: s.blob for s in sources})
        changed = {f.source for f in pairs}
        for source in sources:
            if source.path not in changed:
                if found.feeds(source.path):
                    plan.up_to_date.append(source)
            elif (source.path, source.blob) in open_runs:
                plan.staged[source.path] = open_runs[(source.path, source.blob)]
            else:
                plan.todo.append(source)
        todo = {s.path for s in plan.todo}
        plan.stale = [f for f in pairs if f.source in todo]
        return plan
    for source in sources:
        if any(fed.recorded == source.blob for fed in found.feeds(source.path)):
            plan.up_to_date.append(source)
        elif (source.path, source.blob) in open_runs:
            plan.staged[source.path] = open_runs[(source.path, source.blob)]
        else:
            plan.todo.append(source)
    return plan


def still_to_do(
    git: Git, plan: Plan, wiki: Wiki, head: str, project_prefix: str, pairs: list[tuple[str, str]]
) -> list[str]:
    """Of ``pairs`` ((source path, blob) a run compiled), the paths neither recorded by the
    pages at ``head`` (``wiki``) nor staged by an open candidate: what another compile did
    not do while this one was working. Run under the repository lock, just before staging;
    when the tip is still the plan's base, its provenance is the plan's."""
    open_runs = staged_sources(git)
    found = (
        plan.provenance
        if head == plan.base
        else provenance(git, page_texts(git, wiki), head, project_prefix, wiki.root_dir)
    )
    return [
        path
        for path, blob in pairs
        if (path, blob) not in open_runs and not any(f.recorded == blob for f in found.feeds(path))
    ]


def still_stale(git: Git, plan: Plan, wiki: Wiki, head: str, project_prefix: str) -> list[Fed]:
    """Of the plan's stale (page, source) pairs, those still stale at ``head`` and staged by
    no open candidate (run under the lock, just before staging a ``--stale`` run)."""
    open_runs = staged_sources(git)
    if head == plan.base:
        found, blobs = plan.provenance, {s.path: s.blob for s in plan.sources}
    else:
        found = provenance(git, page_texts(git, wiki), head, project_prefix, wiki.root_dir)
        blobs = dict(list_sources(git, head, project_prefix))
    now = {(f.page, f.source) for f in found.stale(blobs)}
    return [
        f
        for f in plan.stale
        if (f.page, f.source) in now and (f.source, blobs.get(f.source)) not in open_runs
    ]
