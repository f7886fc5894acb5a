"""The wiki: its pages, the lookup tables of link resolution, and lazy heading anchors.

Resolution order for a normalized target (DESIGN §3): (1) exact concept page stem,
(2) exact query page stem, (3) concept alias, (4) query alias, (5) any page whose
slugified stem equals the target. A path-style target's folder hint filters every step.
A target naming a non-markdown file (``diagram.png``) resolves to a file of that name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..git import blob_id
from .pages import MAX_PAGE_BYTES, Issue, PageScan, page_anchors, scan_page
from .scancache import ScanCache
from .scanner import Anchors
from .slug import LinkTarget, slugify
from .sources import Snapshot, SourceFile

CONCEPTS = "concepts"
QUERIES = "queries"


@dataclass(frozen=True)
class Page:
    """A markdown page: ``path`` from the repository root, ``id`` from the wiki root
    without ``.md`` (``concepts/alpha``), ``kind`` concept, query or page."""

    path: str
    id: str
    stem: str
    kind: str
    blob: str | None
    scan: PageScan
    folders: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Resolution:
    page: Page | None = None
    file: str | None = None
    alternatives: tuple[str, ...] = ()

    @property
    def resolved(self) -> bool:
        return self.page is not None or self.file is not None

    @property
    def ref(self) -> str | None:
        """What the target resolved to: a page id, or a file path."""
        return self.page.id if self.page is not None else self.file


def _is_hidden(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/"))


def _hint_matches(folders: tuple[str, ...], hint: tuple[str, ...]) -> bool:
    return len(hint) <= len(folders) and folders[len(folders) - len(hint) :] == hint


class Wiki:
    """The pages of one snapshot and everything needed to resolve links between them."""

    def __init__(
        self,
        root_dir: str,
        pages: list[Page],
        other_files: Iterable[str],
        issues: list[tuple[str, Issue]],
        snapshot: Snapshot | None = None,
    ) -> None:
        self.root_dir = root_dir
        self.pages = sorted(pages, key=lambda p: (p.path.count("/"), p.path))
        self.issues = issues
        self._snapshot = snapshot
        self._anchors: dict[str, Anchors] = {}
        self.by_id = {p.id: p for p in self.pages}
        self.by_path = {p.path: p for p in self.pages}
        self._steps: list[dict[str, list[Page]]] = [{}, {}, {}, {}, {}]
        for page in self.pages:
            self._index(page)
        self._files: dict[str, list[str]] = {}
        for path in sorted(other_files, key=lambda p: (p.count("/"), p)):
            self._files.setdefault(path.rsplit("/", 1)[-1].lower(), []).append(path)

    def _index(self, page: Page) -> None:
        stem_exact, query_exact, concept_alias, query_alias, by_slug = self._steps
        if page.kind == "concept":
            stem_exact.setdefault(page.stem, []).append(page)
        elif page.kind == "query":
            query_exact.setdefault(page.stem, []).append(page)
        if page.kind in ("concept", "query"):
            table = concept_alias if page.kind == "concept" else query_alias
            for alias in dict.fromkeys(slugify(a) for a in page.scan.aliases):
                if alias:
                    table.setdefault(alias, []).append(page)
        by_slug.setdefault(slugify(page.stem), []).append(page)

    def resolve(self, target: LinkTarget) -> Resolution:
        if target.file_name is not None:
            paths = self._files.get(target.file_name.lower(), [])
            paths = [p for p in paths if _hint_matches(_folder_slugs(p), target.hint)]
            if paths:
                return Resolution(file=paths[0], alternatives=tuple(paths[1:]))
        if not target.slug:
            return Resolution()
        for table in self._steps:
            found = table.get(target.slug)
            if not found:
                continue
            if target.hint:
                found = [p for p in found if _hint_matches(p.folders, target.hint)]
                if not found:
                    continue
            return Resolution(page=found[0], alternatives=tuple(p.id for p in found[1:]))
        return Resolution()

    def anchors(self, page: Page) -> Anchors:
        """Heading slugs and block ids of ``page``, read on first use."""
        cached = self._anchors.get(page.path)
        if cached is None:
            cached = Anchors(frozenset(), frozenset())
            if self._snapshot is not None:
                data = self._snapshot.read([SourceFile(page.path, page.blob)]).get(page.path)
                if isinstance(data, bytes):
                    cached = page_anchors(data, page.scan.body_line)
            self._anchors[page.path] = cached
        return cached


def _folder_slugs(path: str) -> tuple[str, ...]:
    return tuple(slugify(part) for part in path.split("/")[:-1])


def _page_kind(rel: str) -> str:
    if rel.startswith(CONCEPTS + "/"):
        return "concept"
    if rel.startswith(QUERIES + "/"):
        return "query"
    return "page"


def detect_root(paths: Iterable[str], base: str = "") -> str:
    """``<base>/wiki`` when the snapshot has that folder, else ``base`` (the folder holding
    ``.llmwiki/``, or the repository root)."""
    wiki = f"{base}/wiki" if base else "wiki"
    return wiki if any(p.startswith(wiki + "/") for p in paths) else base


def load_wiki(
    snapshot: Snapshot,
    *,
    wiki_dir: str | None = None,
    base: str = "",
    cache: ScanCache | None = None,
    max_page_bytes: int = MAX_PAGE_BYTES,
) -> Wiki:
    """Read every page of ``snapshot`` (through ``cache`` where the blob is known).

    ``base`` is the project folder (holding ``.llmwiki/``) relative to the repository root;
    ``wiki_dir`` is relative to it.
    """
    files, source_issues = snapshot.files()
    if wiki_dir is not None:
        root = "/".join(p for p in (base, wiki_dir.strip("/")) if p)
    else:
        root = detect_root((f.path for f in files), base)
    prefix = f"{root}/" if root else ""
    issues: list[tuple[str, Issue]] = [(i.path, Issue(i.code, i.message)) for i in source_issues]
    page_files: list[SourceFile] = []
    others: list[str] = []
    for item in files:
        if _is_hidden(item.path):
            continue
        if item.path.startswith(prefix) and item.path.lower().endswith(".md"):
            page_files.append(item)
        else:
            others.append(item.path)
    scans: dict[str, tuple[str | None, PageScan]] = {}
    to_read: list[SourceFile] = []
    for item in page_files:
        hit = cache.get(item.blob) if (cache is not None and item.blob) else None
        if hit is not None:
            scans[item.path] = (item.blob, hit)
        else:
            to_read.append(item)
    for path, data in snapshot.read(to_read).items():
        if isinstance(data, OSError):
            scans[path] = (None, PageScan(None, (), (), 0, (Issue("unreadable-page", f"cannot read: {data}"),)))
            continue
        blob = blob_id(data)
        scan = cache.get(blob) if cache is not None else None
        if scan is None:
            scan = scan_page(data, max_bytes=max_page_bytes)
            if cache is not None:
                cache.put(blob, scan)
        scans[path] = (blob, scan)
    pages: list[Page] = []
    for item in page_files:
        blob, scan = scans[item.path]
        rel = item.path[len(prefix) :]
        page_id = rel[:-3]
        pages.append(
            Page(
                path=item.path,
                id=page_id,
                stem=page_id.rsplit("/", 1)[-1],
                kind=_page_kind(rel),
                blob=blob,
                scan=scan,
                folders=_folder_slugs(item.path),
            )
        )
        issues.extend((item.path, issue) for issue in scan.issues)
    if cache is not None:
        cache.save()
    return Wiki(root, pages, others, issues, snapshot)
