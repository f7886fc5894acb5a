"""The wiki: its pages, the lookup tables of link resolution, and lazy heading anchors.

Resolution order for a normalized target (DESIGN §3): (1) exact concept page stem,
(2) exact query page stem, (3) concept alias, (4) query alias, (5) any page whose file
stem equals the target's name, case-insensitively, (6) only when no page has that exact
name: any page whose slugified stem equals the target (a name ending in ``.`` keeps its
dot: it is never matched by slug). A path-style target's folder hint filters every step
(the end of the page's folder path; all of it, from the wiki or repository root, for a
rooted ``[[/path]]``).
A target naming a non-markdown file (``diagram.png``) resolves to a file of that name.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from ..confine import hidden_part
from ..errors import PageReadError
from ..gitstore.git import blob_id
from .flavour import PLAIN, Flavour
from .includes import included_headings
from .pages import MAX_PAGE_BYTES, Issue, PageScan, ScanRecord, scan_page
from .parallel import read_and_scan
from .provenance import sources_dir
from .slug import LinkTarget, parse_target, slugify
from .snapshots import Snapshot, SourceFile


class ScanStore(Protocol):
    """Page scans by blob id, kept between runs (the checker's cache implements it)."""

    @property
    def records(self) -> dict[str, ScanRecord]: ...

    def touch(self, blobs: list[str]) -> None: ...

    def get(self, blob: str) -> PageScan | None: ...

    def put(self, blob: str, scan: PageScan) -> None: ...

    def put_record(self, blob: str, record: ScanRecord) -> None: ...


CONCEPTS = "concepts"
QUERIES = "queries"


def page_kind(page_id: str) -> str:
    """``concept`` under ``concepts/``, ``query`` under ``queries/``, else ``page``."""
    head = page_id.split("/", 1)[0] if "/" in page_id else ""
    return "concept" if head == CONCEPTS else "query" if head == QUERIES else "page"


class Page(NamedTuple):
    """A markdown page: ``path`` from the repository root, ``id`` from the wiki root
    without ``.md`` (``concepts/alpha``), ``kind`` concept, query or page. (A NamedTuple:
    the checker builds ten thousand of them per run.)"""

    path: str
    id: str
    stem: str
    kind: str
    blob: str | None
    scan: PageScan

    @property
    def folders(self) -> tuple[str, ...]:
        return _folder_slugs(self.path)


class Resolution(NamedTuple):
    """What a target resolved to (a NamedTuple: one is built per distinct target)."""

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


def _hint_matches(folders: tuple[str, ...], hint: tuple[str, ...]) -> bool:
    return len(hint) <= len(folders) and folders[len(folders) - len(hint) :] == hint


def _place_matches(folders: tuple[str, ...], target: LinkTarget, root: tuple[str, ...]) -> bool:
    """Whether a file in ``folders`` is where ``target`` points: its hint ends the folder
    path; or, rooted, is the whole path from the repository root or from the wiki root ``root``."""
    if target.rooted:
        return folders == target.hint or folders == root + target.hint
    return _hint_matches(folders, target.hint)


class Wiki:
    """The pages of one snapshot and everything needed to resolve links between them."""

    def __init__(
        self,
        root_dir: str,
        pages: list[Page],
        other_files: Iterable[str],
        issues: list[tuple[str, Issue]],
        snapshot: Snapshot | None = None,
        sources: dict[str, str | None] | None = None,
        flavour: Flavour = PLAIN,
    ) -> None:
        self.root_dir = root_dir
        self.flavour = flavour  # the vault's rules (wiki/flavour.py)
        # The files of the project's sources/ folder (path -> blob id; None: a work-tree
        # file git has no blob for yet), for the provenance check (checks/stale.py).
        self.sources: dict[str, str | None] = sources if sources is not None else {}
        self.pages = sorted(pages, key=lambda p: (p.path.count("/"), p.path))
        self.source_issues = issues  # files refused before reading (symlinks leaving the repo)
        self.other_files = list(other_files)
        self._snapshot = snapshot
        self.by_id = {p.id: p for p in self.pages}
        self.by_path = {p.path: p for p in self.pages}
        self._root_folders = _folder_slugs(f"{root_dir}/x") if root_dir else ()
        # Lookup tables are built on the first resolve(): a check served entirely from the
        # cache never needs them.
        self._steps: list[dict[str, list[Page]]] = []
        self._names: dict[str, list[Page]] = {}  # Logseq: namespaced pages by "a/b", lowered
        self._files: dict[str, list[str]] = {}

    def build_tables(self) -> None:
        """Build the lookup tables now (before forking workers that resolve links)."""
        if not self._steps:
            self._build_tables()

    def _build_tables(self) -> None:
        self._steps = [{}, {}, {}, {}, {}]
        names = self._names
        namespaces = self.flavour.namespaces
        for page in self.pages:
            self._index(page)
            if namespaces and ("___" in page.stem or "%2F" in page.stem.upper()):
                # Logseq stores the page "A/B" as A___B.md (or A%2FB.md): it answers to "A/B"
                spaced = page.stem.replace("___", "/").replace("%2F", "/").replace("%2f", "/")
                names.setdefault(name_key(spaced), []).append(page)
        for path in sorted(self.other_files, key=lambda p: (p.count("/"), p)):
            self._files.setdefault(path.rsplit("/", 1)[-1].lower(), []).append(path)

    def _index(self, page: Page) -> None:
        stem_exact, query_exact, concept_alias, query_alias, by_slug = self._steps
        if page.kind == "concept":
            stem_exact.setdefault(page.stem, []).append(page)
        elif page.kind == "query":
            query_exact.setdefault(page.stem, []).append(page)
        if page.kind in ("concept", "query") or (self.flavour.properties and page.scan.alias_slugs):
            table = query_alias if page.kind == "query" else concept_alias
            for alias in page.scan.alias_slugs:
                table.setdefault(alias, []).append(page)
        by_slug.setdefault(slugify(page.stem), []).append(page)

    def stem_slugs(self) -> dict[str, list[Page]]:
        """Pages by slugified file stem (resolution's last step; the table is not to be changed)."""
        if not self._steps:
            self._build_tables()
        return self._steps[4]

    def name_slugs(self) -> set[str]:
        """Every slug some page answers to (stems, slugified stems, aliases): a target whose
        slug is not here can only be a broken link or an attachment."""
        if not self._steps:
            self._build_tables()
        names: set[str] = set()
        for table in self._steps:
            names.update(table)
        return names

    def resolve(self, target: LinkTarget) -> Resolution:
        if not self._steps:
            self._build_tables()
        if target.file_name is not None:
            paths = self._files.get(target.file_name.lower(), [])
            paths = [
                p for p in paths if _place_matches(_folder_slugs(p), target, self._root_folders)
            ]
            if paths:
                return Resolution(file=paths[0], alternatives=tuple(paths[1:]))
        if not target.slug:
            return Resolution()
        steps = self._steps
        for index, table in enumerate(steps):
            if index == 4 and self.flavour.namespaces and target.hint:
                spaced = self._names.get(name_key(target.text.partition("#")[0].strip()))
                if spaced:
                    return Resolution(spaced[0], alternatives=tuple(p.id for p in spaced[1:]))
            found = table.get(target.slug)
            if not found:
                continue
            if target.hint or target.rooted:
                found = [p for p in found if _place_matches(p.folders, target, self._root_folders)]
                if not found:
                    continue
            if index == 4 and (len(found) > 1 or "." in target.text):
                # By name: a page whose file stem is the name exactly (case-insensitive) wins;
                # the slug rule only where none is. Such pages all have the target's slug, so
                # they are among ``found``: with one page there, it is the answer either way.
                name = target.name
                key = name_key(name)
                exact = [p for p in found if name_key(p.stem) == key]
                if exact:
                    found = exact
                elif name.endswith("."):
                    return Resolution()  # `[[Note.]]` names `Note..md`, never `Note.md`
            return Resolution(page=found[0], alternatives=tuple(p.id for p in found[1:]))
        return Resolution()

    def link_to(self, page: Page) -> str:
        """What to write inside ``[[...]]`` to cite ``page`` so that the link resolves to it
        and to no other page: its name when that is unique, else the shortest folder path
        that is (``user/index``), else its path from the wiki root (``/index``)."""
        parts = page.path[:-3].split("/")
        rooted = "/" + page.id
        for link in [*("/".join(parts[-k:]) for k in range(1, len(parts) + 1)), rooted]:
            found = self.resolve(parse_target(link))
            if found.page is not None and found.page.path == page.path and not found.alternatives:
                return link
        return rooted

    def read(self, files: list[SourceFile]) -> dict[str, bytes | PageReadError | OSError]:
        """Bytes of some files of the snapshot this wiki was loaded from."""
        if self._snapshot is None:
            return {}
        return self._snapshot.read(files)

    def with_page(self, path: str, text: str) -> Wiki:
        """This wiki as it will be after ``path`` is written with ``text`` (the page being
        replaced keeps its file name; its old aliases are gone)."""
        prefix = f"{self.root_dir}/" if self.root_dir else ""
        page_id = path[len(prefix) : -3]
        kind = page_kind(page_id)
        data = text.encode("utf-8")
        scan = scan_page(data, dialect=self.flavour.dialect)
        if self.flavour.raw_shortcodes and scan.includes:
            # Hugo: the page shows the headings of the files it includes, as load_wiki reads it
            scans = {p.path: p.scan for p in self.pages if p.path != path} | {path: scan}
            merged = included_headings(scans, self.root_dir, [path])
            scan = scan._replace(headings=merged.get(path, scan.headings))
        page = Page(path, page_id, page_id.rsplit("/", 1)[-1], kind, blob_id(data), scan)
        pages = [p for p in self.pages if p.path != path] + [page]
        return Wiki(
            self.root_dir,
            pages,
            self.other_files,
            self.source_issues,
            self._snapshot,
            self.sources,
            self.flavour,
        )

    def with_pages(self, pages: list[Page], other_files: Iterable[str]) -> Wiki:
        """Another set of pages and files read from the same snapshot (blob ids do not move:
        a moved page reads as before)."""
        return Wiki(
            self.root_dir,
            pages,
            other_files,
            self.source_issues,
            self._snapshot,
            flavour=self.flavour,
        )

    def without_page(self, path: str) -> Wiki:
        """This wiki as it will be after the page at ``path`` is deleted."""
        pages = [p for p in self.pages if p.path != path]
        return Wiki(
            self.root_dir,
            pages,
            self.other_files,
            self.source_issues,
            self._snapshot,
            self.sources,
            self.flavour,
        )


def name_key(name: str) -> str:
    """A file name as editors compare names: case-insensitive (and NFC, so that a name typed
    on macOS equals the same name typed elsewhere)."""
    if name.isascii():
        return name.lower()
    return unicodedata.normalize("NFC", name).lower()  # lower, as slugify: same-slug pages


def _folder_slugs(path: str) -> tuple[str, ...]:
    return tuple(slugify(part) for part in path.split("/")[:-1])


def names_wiki(root_dir: str, names_by_path: dict[str, str], other_files: list[str]) -> Wiki:
    """A wiki rebuilt from page names alone (alias slugs, headings, block ids, as
    `PageScan.names_key` joins them): enough to resolve links and check anchors, without
    reading or scanning a page (the staged delta of the checker)."""
    prefix = f"{root_dir}/" if root_dir else ""
    pages = []
    for path, key in names_by_path.items():
        aliases, headings, blocks = (
            tuple(p for p in part.split("\x02") if p) for part in key.split("\x01")[:3]
        )
        page_id = path[len(prefix) : -3]
        kind = page_kind(page_id)
        scan = PageScan(None, (), (), 0, (), headings, blocks, aliases)
        pages.append(Page(path, page_id, page_id.rsplit("/", 1)[-1], kind, None, scan))
    return Wiki(root_dir, pages, other_files, [], None)


def _link_leaves(item: SourceFile, prefix: str) -> str | None:
    """Why the symlinked page ``item`` may not be read (None: not a symlink, or its target
    stays inside the wiki root and outside hidden folders)."""
    target = item.link_target
    if target is None:
        return None
    hidden = hidden_part(target)
    if not target.startswith(prefix) or hidden is not None:
        where = f"into {hidden!r}" if hidden is not None else "outside the wiki root"
        return f"symlink leads {where} ({target}); not read"
    return None


def detect_root(paths: Iterable[str], project_prefix: str = "") -> str:
    """``<project_prefix>/wiki`` when the snapshot has that folder, else ``project_prefix`` (the folder holding
    ``.llmwiki/``, or the repository root)."""
    wiki = f"{project_prefix}/wiki" if project_prefix else "wiki"
    return wiki if any(p.startswith(wiki + "/") for p in paths) else project_prefix


def _select_pages(
    files: list[SourceFile], wiki_dir: str | None, project_prefix: str
) -> tuple[str, list[SourceFile], list[str], list[tuple[str, str]]]:
    """The wiki root, its page files, every other file of a snapshot's listing, and the
    symlinked pages that leave the wiki (path, why: never read, reported)."""
    if wiki_dir is not None:
        root = "/".join(p for p in (project_prefix, wiki_dir.strip("/")) if p)
    else:
        root = detect_root((f.path for f in files), project_prefix)
    prefix = f"{root}/" if root else ""
    raw = sources_dir(project_prefix) + "/"  # the user's raw material: never pages (DESIGN §6.1)
    page_files: list[SourceFile] = []
    others: list[str] = []
    escapes: list[tuple[str, str]] = []
    for item in files:
        path = item.path
        if path[:1] == "." or "/." in path:
            continue  # folders and files starting with "." are never pages
        if path.startswith(prefix) and path[-3:].lower() == ".md" and not path.startswith(raw):
            leaves = _link_leaves(item, prefix)
            if leaves:
                escapes.append((path, leaves))
                continue
            page_files.append(item)
        else:
            others.append(path)
    return root, page_files, others, escapes


def page_blobs(
    snapshot: Snapshot, *, wiki_dir: str | None = None, project_prefix: str = ""
) -> dict[str, str]:
    """Path -> blob id of every page, without scanning any: blob ids git already knows,
    others hashed from the bytes (modified and untracked files). The cheap listing that
    tells whether the search index still matches the wiki."""
    files, _ = snapshot.files()
    _, page_files, _, _ = _select_pages(files, wiki_dir, project_prefix)
    out = {f.path: f.blob for f in page_files if f.blob}
    unknown = [f for f in page_files if not f.blob]
    for path, data in snapshot.read(unknown).items():
        if isinstance(data, bytes):
            out[path] = blob_id(data)
    return out


class ScanTally:
    """How many pages `load_wiki` read and scanned in this process (a page whose scan came
    from the scan cache is not counted): what shows a path meant to be served from the cache
    (one page read at 10,000 pages) scanning nothing."""

    pages = 0
    listed = 0  # pages of every wiki `load_wiki` built, scanned or from the cache


def load_wiki(
    snapshot: Snapshot,
    *,
    wiki_dir: str | None = None,
    project_prefix: str = "",
    cache: ScanStore | None = None,
    max_page_bytes: int = MAX_PAGE_BYTES,
    flavour: Flavour = PLAIN,
) -> Wiki:
    """Read every page of ``snapshot`` (through ``cache`` where the blob is known).

    ``project_prefix`` is the project folder (holding ``.llmwiki/``) relative to the repository root;
    ``wiki_dir`` is relative to it. ``flavour``: the vault's rules (wiki/flavour.py); a page
    scanned by other rules than the common ones is cached under its blob id plus the
    flavour's dialect.
    """
    dialect = flavour.dialect
    files, source_issues = snapshot.files()
    root, page_files, others, escapes = _select_pages(files, wiki_dir, project_prefix)
    prefix = f"{root}/" if root else ""
    issues: list[tuple[str, Issue]] = [(i.path, Issue(i.code, i.message)) for i in source_issues]
    issues += [(path, Issue("symlink-escape", why)) for path, why in escapes]
    scans = _scans(snapshot, page_files, cache, max_page_bytes, dialect)
    ScanTally.listed += len(page_files)
    merged = (  # Hugo: a page shows the headings of the files it includes
        included_headings({path: scan for path, (_, scan) in scans.items()}, root)
        if flavour.raw_shortcodes and any(scan.includes for _, scan in scans.values())
        else {}
    )
    pages: list[Page] = []
    cut = len(prefix)
    for item in page_files:
        known_blob, scan = scans[item.path]
        if merged and item.path in merged:
            scan = scan._replace(headings=merged[item.path])
        page_id = item.path[cut:-3]
        pages.append(
            Page(
                item.path, page_id, page_id.rsplit("/", 1)[-1], page_kind(page_id), known_blob, scan
            )
        )
    raw = sources_dir(project_prefix) + "/"
    sources = {f.path: f.blob for f in files if f.path.startswith(raw) and "/." not in f.path}
    return Wiki(root, pages, others, issues, snapshot, sources, flavour)


def _scans(
    snapshot: Snapshot,
    page_files: list[SourceFile],
    cache: ScanStore | None,
    max_page_bytes: int,
    dialect: str,
) -> dict[str, tuple[str | None, PageScan]]:
    """Each page's blob and scan: from ``cache`` where its blob is known, else read and
    scanned (and put in the cache); the cache's records in use are touched."""
    records = cache.records if cache is not None else {}
    scans: dict[str, tuple[str | None, PageScan]] = {}
    to_read: list[SourceFile] = []
    for item in page_files:
        record = records.get(item.blob + dialect) if item.blob else None
        if record is not None:
            scans[item.path] = (item.blob, PageScan._make(record))
        else:
            to_read.append(item)
    found: list[str] = [blob + dialect for blob, _ in scans.values() if blob]
    for path, blob, record, fresh in read_and_scan(
        snapshot, to_read, max_page_bytes, records, dialect
    ):
        if fresh:
            ScanTally.pages += 1
        if cache is not None and blob is not None:
            if fresh:
                cache.put_record(blob + dialect, record)
            else:
                found.append(blob + dialect)
        scans[path] = (blob, PageScan._make(record))
    if cache is not None:
        cache.touch(found)
    return scans
