"""The part of a committed tree's wiki that a move touches, from the checker's facts instead
of every page (issue 39: ``llmwiki mv`` loaded all 100,000 pages to rewrite the links of a few).

After a check, the checker's cache holds, per git tree, the facts its staged delta reads
(delta.py): every page's names, and which pages use each link target text, listed under the
slug or file name the text depends on. A tree never changes, so facts kept under a tree id
are exact for it: a page edited since is another tree, for which there are no facts (the
caller then loads the whole wiki, as without a cache).

`Neighbourhood.wiki` builds a `Wiki` of the pages a move reads: the moved pages, every page
with a link whose slug or file name is a moved file's (old) or a new path's (new), read from
git and scanned; and, from their names alone, every page answering to one of those slugs, so
that each such link resolves (and is ambiguous) exactly as in the whole wiki. Other links of
the pages read may resolve to nothing there; `wiki.rewrite.plan_links` acts only on links
that reach a moved file or name a new one, so the plan is the whole wiki's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..gitstore.git import Git
from ..wiki.flavour import Flavour
from ..wiki.model import Page, ScanTally, Wiki, names_wiki, page_kind
from ..wiki.pages import PageScan, ScanRecord
from ..wiki.slug import slugify
from ..wiki.snapshots import Snapshot
from .cache import ScanCache
from .delta import FILE, Facts, _answers_to, _title_of, claimant_paths, page_of
from .duplicates import Group, _pairs, _title, suggest
from .engine import tree_key

_MANY = 500  # pages read at once beyond which one whole `ls-tree` is cheaper (~10 s for 5,000)
ALIAS = "alias-collision"  # the one reason whose pairs are named by a shared alias


def tree_facts(
    cache: ScanCache,
    tree: str,
    *,
    wiki_dir: str | None,
    project_prefix: str,
    limit: int,
    flavour: Flavour,
) -> Facts | None:
    """The facts the checker keeps for ``tree``, or None: no check saw that tree, its facts
    are gone or damaged, or the vault has a flavour (its facts lack the flavour's link rules:
    the caller reads the whole wiki)."""
    if not flavour.plain:
        return None
    record = cache.tree_get(tree_key(tree, project_prefix, wiki_dir, limit, flavour))
    if (
        record is None
        or len(record) != 4
        or not isinstance(record[2], str)
        or not Facts.valid_extras(record[3])
    ):
        return None
    try:
        facts = Facts.from_record(cache.facts_get(record[2]))
        return None if facts is None else facts.with_extras(record[3])
    except ValueError:  # a damaged part (checks/parts.py): read the whole wiki instead
        return None


@dataclass
class Neighbourhood:
    """The pages of one committed tree as its facts list them, read only where asked."""

    git: Git
    tree: str
    facts: Facts
    snapshot: Snapshot
    limit: int
    cache: ScanCache | None = None  # page scans by blob id, for many pages read at once
    _stubs: list[Page] | None = field(default=None, init=False, repr=False)

    @property
    def root_dir(self) -> str:
        return self.facts.root_dir

    def wiki(self, moves: Mapping[str, str]) -> Wiki:
        """The pages that moving the files of ``moves`` (old path -> new path) reads: see the
        module's docstring. Raises ValueError when the facts cannot tell (a damaged part)."""
        names = self._names(moves)
        facts = self.facts
        read = {path for path in moves if path in facts.names_by_path} | self._users(names)
        claimants = {
            path
            for name in names
            if name[:1] != FILE
            for path in claimant_paths(facts.by_slug, facts.names_by_path, name)
            if path in facts.names_by_path and path not in read
        }
        stubs = names_wiki(facts.root_dir, {p: facts.names_by_path[p] for p in claimants}, []).pages
        return Wiki(
            facts.root_dir,
            [*self._read(sorted(read)), *stubs],
            facts.other_files,
            [],
            self.snapshot,
        )

    def _users(self, names: Iterable[str]) -> set[str]:
        """The pages with a link whose target text depends on one of ``names``."""
        facts = self.facts
        found: set[str] = set()
        for name in names:
            for text in facts.texts_named(name):
                found.update(p for p in facts.users_of(text) if p in facts.names_by_path)
        return found

    def names_only(self, real: Iterable[Page] = ()) -> Wiki:
        """Every page of the tree from its names alone (alias and title slugs, headings,
        block ids; no title as written, no links), ``real`` pages in place of theirs."""
        facts = self.facts
        if self._stubs is None:
            prefix = f"{facts.root_dir}/" if facts.root_dir else ""
            self._stubs = [
                _stub(path, path[len(prefix) : -3], key)
                for path, key in facts.names_by_path.items()
            ]
        given = {page.path: page for page in real}
        pages = [given.get(stub.path, stub) for stub in self._stubs] if given else self._stubs
        return Wiki(facts.root_dir, pages, facts.other_files, [], self.snapshot)

    def suggest(self) -> list[Group] | None:
        """`merge-pages --suggest` from the facts: the pairs are found among every page's
        names (all the pairing reads: title and alias slugs, file names); then the paired
        pages are read for their titles as written, and the pages linking to them for the
        links that rank them. The same groups as from every page read."""
        pairs = list(_pairs(self.names_only()))
        members = {page.path for _, a, b, _ in pairs for page in (a, b)}
        if not members:
            return []
        facts = self.facts
        names = {n for p in members for n in _answers_to(p, facts.names_by_path[p])}
        names |= {FILE + p.rsplit("/", 1)[-1].lower() for p in members}
        wiki = self.names_only(self._read(sorted(members | self._users(names))))
        real = wiki.by_path
        return suggest(
            wiki,
            [
                # a pair's name is the first page's title, or the alias two pages share
                (why, real[a.path], real[b.path], name if why == ALIAS else _title(real[a.path]))
                for why, a, b, name in pairs
            ],
        )

    def _names(self, moves: Mapping[str, str]) -> set[str]:
        """The slugs and file names (FILE + name) whose links a move may rewrite or refuse:
        those a moved file answers to today, and those of its new path."""
        facts = self.facts
        found: set[str] = set()
        for old, new in moves.items():
            key = facts.names_by_path.get(old)
            if key is not None:
                found |= _answers_to(old, key)
                found.add(slugify(new.rsplit("/", 1)[-1][:-3]))
            found.add(FILE + old.rsplit("/", 1)[-1].lower())
            found.add(FILE + new.rsplit("/", 1)[-1].lower())
        return found

    def _read(self, paths: Iterable[str]) -> list[Page]:
        """The pages at ``paths`` of the revision, read from git and scanned; many of them
        (`--suggest`) with their scans from the scan cache where it has them."""
        wanted = list(paths)
        if not wanted:
            return []
        cached: dict[str, ScanRecord] = {}
        if len(wanted) > _MANY:  # git matches each pathspec against every entry: list them all
            listed = set(wanted)
            blobs = {e.path: e.blob for e in self.git.ls_tree(self.tree) if e.path in listed}
            if self.cache is not None:
                cached = self.cache.records  # loading it costs what scanning ~1/8 of them does
        else:
            blobs = self.git.blob_ids(self.tree, wanted)
        data = self.git.read_blobs(b for p, b in blobs.items() if b not in cached)
        prefix = f"{self.root_dir}/" if self.root_dir else ""
        pages = []
        for path in wanted:
            blob = blobs.get(path)
            record = cached.get(blob or "")
            if blob is not None and record is not None:
                page_id = path[len(prefix) : -3]
                scan = PageScan._make(record)
                pages.append(
                    Page(path, page_id, page_id.rsplit("/", 1)[-1], page_kind(page_id), blob, scan)
                )
                continue
            body = data.get(blob or "")
            if blob is None or body is None:
                raise ValueError(f"{path} is in the facts but not readable in {self.tree}")
            pages.append(page_of(path, prefix, blob, body, self.limit))
            ScanTally.pages += 1
        return pages


def _stub(path: str, page_id: str, key: str) -> Page:
    """A page rebuilt from its (compact) names key: what resolving links and pairing names
    read, no title as written and no links."""
    aliases, headings, blocks = (
        tuple(p for p in part.split("\x02") if p) for part in key.split("\x01")[:3]
    )
    scan = PageScan(None, (), (), 0, (), headings, blocks, aliases, title_slug=_title_of(path, key))
    return Page(path, page_id, page_id.rsplit("/", 1)[-1], page_kind(page_id), None, scan)
