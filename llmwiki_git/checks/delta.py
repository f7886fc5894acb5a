"""A git tree's check result derived from another tree's cached result plus their diff.

The pre-commit hook checks the index and HEAD. Both are usually a few files away from a
tree checked before (the previous commit, the other branch before a switch, the index of
the last hook run), so instead of loading every page's scan (8 MB on 10,000 pages) the
checker starts from that tree's problems and the wiki's *facts* (every page's names, every
link target's outcome, and which pages use which target) and re-checks only:

* the pages the diff adds or modifies (read from git and scanned);
* the unchanged pages whose links name a slug or attachment whose meaning the diff may
  change (a page added, deleted, renamed, or whose aliases/headings/block ids changed).

A link's outcome depends only on the pages answering to its slug (by stem or alias) and
the attachments of its file name, so every other outcome stays valid. Anything this
cannot reason about (symlinks, submodules, a change of the wiki root, thousands of changed
files) returns None and the caller runs the full check. tests/cli/test_check_cli.py compares
every path here with an uncached full check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..problems import Problem
from ..wiki.model import Page, detect_root, names_wiki, page_kind
from ..wiki.pages import scan_page
from ..wiki.provenance import in_sources
from ..wiki.slug import parse_target, slugify
from .extras import NO_EXTRAS, Extras, chained_fingerprint
from .links import (
    MD,
    PLAIN_OK,
    TITLE,
    Checker,
    Outcome,
    anchor_problem,
    link_keys,
    names_of_key,
    split_md_key,
)
from .parts import PartedMap
from .result import CheckResult, ResultRow, result_from_record, sort_problems
from .stale import CODES as SOURCING_CODES

FILE = "\x01"  # prefix of a file-name key in Facts.texts
MAX_CHANGES = 2000  # beyond this a full check (scan cache) is cheaper than reading blobs
ReadBlobs = Callable[[Iterable[str]], dict[str, bytes]]  # `git cat-file` names -> contents
Locate = Callable[
    [list[str]], dict[str, str]
]  # paths -> their `git cat-file` names in the new tree
_ODD_MODES = ("120000", "160000")  # symlinks and submodules: the full check handles them


@dataclass
class Facts:
    """What a derivation needs about one wiki state (stored per names fingerprint)."""

    root_dir: str
    fingerprint: str
    names: set[str]  # every slug some page answers to (a superset is fine: only a filter)
    other_files: list[str]
    outcomes: dict[str, Outcome]
    names_by_path: dict[str, str]  # page path -> PageScan.names_key (`compact_key`)
    # Which pages use each link target text (a superset: stale entries only cost a recheck),
    # as space-separated indexes into ``paths`` (append-only): strings load ~10x faster
    # than 125,000 list items, and only the few affected texts are ever decoded.
    paths: list[str]
    users: PartedMap  # text -> indexes into paths (decoded part by part: a hook reads a few)
    # Link target texts by the slug (or FILE + file name) their outcome depends on,
    # NUL-joined: which outcomes a changed name invalidates, without parsing every text.
    texts: PartedMap
    # The pages answering to each slug (by stem or alias), NUL-joined: a link whose page
    # was renamed is re-resolved against those pages, without a pass over all 10,000. Also
    # the pages claiming each title (key TITLE + slug): who else a duplicate title concerns.
    by_slug: PartedMap
    # What a derivation changed in the facts it started from (an `Extras`); the tree's
    # record stores it beside the facts file it started from.
    added: Extras = field(default_factory=lambda: NO_EXTRAS)

    def with_extras(self, extras: Extras) -> Facts:
        """These facts plus a tree's ``extras`` (a copy where they change anything)."""
        users_add, outcomes_add, names_add, files_add, dropped, fingerprint = extras
        if not (users_add or outcomes_add or names_add or files_add or dropped) and fingerprint in (
            "",
            self.fingerprint,
        ):
            return self
        new_texts = [
            text
            for text in {**users_add, **outcomes_add}
            if text not in self.users and text not in self.outcomes
        ]
        outcomes = self.outcomes
        if dropped or outcomes_add:
            outcomes = dict(outcomes)
            for text in dropped:
                outcomes.pop(text, None)
            outcomes.update(outcomes_add)
        names, names_by_path, by_slug = self._with_names(names_add)
        other_files = self.other_files
        if files_add:
            files = set(other_files)
            files.update(path for path, present in files_add.items() if present)
            files.difference_update(path for path, present in files_add.items() if not present)
            other_files = sorted(files)
        users, paths = self._with_users(users_add)
        merged = Facts(
            self.root_dir,
            fingerprint or self.fingerprint,
            names,
            other_files,
            outcomes,
            names_by_path,
            paths,
            users,
            self.texts.copy() if new_texts else self.texts,
            by_slug,
        )
        merged.add_texts(new_texts)
        return merged

    def _with_names(
        self, names_add: dict[str, str | None]
    ) -> tuple[set[str], dict[str, str], PartedMap]:
        """``names``, ``names_by_path`` and ``by_slug`` with the pages of ``names_add`` (path
        -> names key; None: gone): copies where they change."""
        if not names_add:
            return self.names, self.names_by_path, self.by_slug
        names, names_by_path = set(self.names), dict(self.names_by_path)
        by_slug = self.by_slug.copy()
        for path, key in names_add.items():
            move_names(by_slug, path, names_by_path.get(path), key)
            if key is None:
                names_by_path.pop(path, None)
            else:
                names_by_path[path] = key
                names |= _page_names(path, key)
        return names, names_by_path, by_slug

    def _with_users(self, users_add: dict[str, tuple[str, ...]]) -> tuple[PartedMap, list[str]]:
        """``users`` and ``paths`` with the link usage of ``users_add`` (text -> pages):
        copies where they change."""
        if not users_add:
            return self.users, self.paths
        users, paths = self.users.copy(), list(self.paths)
        position = {path: i for i, path in enumerate(paths)}
        for text, using in users_add.items():
            listed = users.get(text, "")
            marks = set(listed.split())
            for path in using:
                index = position.get(path)
                if index is None:
                    index = position[path] = len(paths)
                    paths.append(path)
                if str(index) not in marks:
                    marks.add(str(index))
                    listed = f"{listed} {index}" if listed else str(index)
            users[text] = listed
        return users, paths

    def to_record(self) -> tuple[Any, ...]:
        # Clean outcomes are one shared tuple (links.PLAIN_OK): marshal writes it once.
        return (
            self.root_dir,
            self.fingerprint,
            sorted(self.names),
            sorted(self.other_files),
            self.outcomes,
            self.names_by_path,
            self.paths,
            self.users.to_record(),
            self.texts.to_record(),
            self.by_slug.to_record(),
        )

    @classmethod
    def from_record(cls, record: tuple[Any, ...] | None) -> Facts | None:
        if not isinstance(record, tuple) or len(record) != 10:
            return None  # none stored (the cache's version covers this layout)
        root_dir, fingerprint, names, other_files, outcomes, names_by_path, paths, *parted = record
        users, texts, by_slug = (PartedMap.from_record(part) for part in parted)
        if users is None or texts is None or by_slug is None:
            return None
        return cls(
            root_dir,
            fingerprint,
            set(names),
            other_files,
            outcomes,
            names_by_path,
            paths,
            users,
            texts,
            by_slug,
        )

    @staticmethod
    def valid_extras(extras: object) -> bool:
        """Whether a tree record's extras have the shape `with_extras` reads."""
        return (
            isinstance(extras, tuple)
            and len(extras) == 6
            and all(isinstance(part, dict) for part in extras[:4])
            and isinstance(extras[4], tuple)
            and isinstance(extras[5], str)
        )

    @classmethod
    def build(
        cls,
        root_dir: str,
        fingerprint: str,
        names: set[str],
        other_files: list[str],
        outcomes: dict[str, Outcome],
        pages: list[tuple[str, str, list[str]]],
    ) -> Facts:
        """From a full check: ``pages`` are (path, names key, `links.link_keys`) of every page."""
        users: dict[str, list[str]] = {}
        by_slug: dict[str, list[str]] = {}
        keys = {}
        for index, (path, key, texts) in enumerate(pages):
            mark = str(index)
            for text in texts:
                using = users.get(text)
                if using is None:
                    users[text] = [mark]
                elif using[-1] is not mark:  # a page's marks are consecutive: each once, in order
                    using.append(mark)
            key = keys[path] = compact_key(path, key)
            for slug in _stored_claims(path, key):
                by_slug.setdefault(slug, []).append(path)
        named: dict[
            str, list[str]
        ] = {}  # what add_texts(users) lists, built as one dict (~3x faster)
        for text in users:
            for name in _names_of(text):
                named.setdefault(name, []).append(text)
        return cls(
            root_dir,
            fingerprint,
            names,
            list(other_files),
            outcomes,
            keys,
            [path for path, _, _ in pages],
            PartedMap.from_dict({text: " ".join(marks) for text, marks in users.items()}),
            PartedMap.from_dict({name: "\x00".join(listed) for name, listed in named.items()}),
            PartedMap.from_dict({slug: "\x00".join(paths) for slug, paths in by_slug.items()}),
        )

    def add_texts(self, texts: object) -> None:
        """List new link target texts under their names (`PartedMap.copy` ``self.texts``
        first when it is shared)."""
        for text in texts:  # type: ignore[attr-defined]
            for name in _names_of(text):
                listed = self.texts.get(name)
                self.texts[name] = f"{listed}\x00{text}" if listed else text

    def texts_named(self, name: str) -> list[str]:
        listed = self.texts.get(name)
        return listed.split("\x00") if listed else []

    def users_of(self, text: str) -> list[str]:
        return [self.paths[int(i)] for i in self.users.get(text, "").split()]


def page_of(path: str, prefix: str, blob: str | None, data: bytes, limit: int) -> Page:
    page_id = path[len(prefix) : -3]
    return Page(
        path,
        page_id,
        page_id.rsplit("/", 1)[-1],
        page_kind(page_id),
        blob,
        scan_page(data, max_bytes=limit),
    )


_SLUG_ALREADY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # what slugify leaves as it is


def _stem_slug(path: str) -> str:
    stem = path.rsplit("/", 1)[-1][:-3]
    return stem if _SLUG_ALREADY.fullmatch(stem) else slugify(stem)


def _answers_to(path: str, names_key: str) -> set[str]:
    """The slugs a page answers to: its slugified stem and its alias slugs."""
    aliases = names_key.split("\x01", 1)[0]
    if not aliases:
        return {_stem_slug(path)}
    return {_stem_slug(path), *(a for a in aliases.split("\x02") if a)}


#: A names key's title part when the title's slug is the page's file stem (most pages):
#: the facts of 10,000 pages are ~0.8 MB smaller, and the hook reads them on every commit.
SAME_AS_STEM = "="


def compact_key(path: str, names_key: str) -> str:
    """``names_key`` as facts store it (`SAME_AS_STEM` for a title that is the file stem)."""
    head, sep, title = names_key.rpartition("\x01")
    return f"{head}\x01{SAME_AS_STEM}" if sep and title and title == _stem_slug(path) else names_key


def _title_of(path: str, names_key: str) -> str:
    """The title slug in a (compact) names key ("" when none)."""
    parts = names_key.split("\x01")
    title = parts[3] if len(parts) > 3 else ""
    return _stem_slug(path) if title == SAME_AS_STEM else title


def _link_names(names_key: str) -> str:
    """The part of a names key links depend on (aliases, headings, block ids: not the title)."""
    return names_key.rsplit("\x01", 1)[0] if names_key.count("\x01") > 2 else names_key


def _claims_of(path: str, names_key: str) -> set[str]:
    """What a page claims (`links.Claims`): the slugs it answers to and TITLE + its title."""
    title = _title_of(path, names_key)
    return _answers_to(path, names_key) | {TITLE + title} if title else _answers_to(path, names_key)


def _stored_claims(path: str, names_key: str) -> set[str]:
    """The claims `Facts.by_slug` lists for a page: a title that is the file stem is found
    through the stem's entry instead (`claimant_paths`)."""
    if names_key.endswith(f"\x01{SAME_AS_STEM}"):
        return _answers_to(path, names_key)
    return _claims_of(path, names_key)


def claimant_paths(by_slug: PartedMap, names_by_path: dict[str, str], name: str) -> list[str]:
    """The pages claiming ``name`` (a slug, or TITLE + a title slug)."""
    listed = [p for p in by_slug.get(name).split("\x00") if p]
    if name[:1] == TITLE:
        title = name[1:]
        listed += [
            p
            for p in by_slug.get(title).split("\x00")
            if p
            and _stem_slug(p) == title
            and names_by_path.get(p, "").endswith(f"\x01{SAME_AS_STEM}")
        ]
    return listed


def move_names(by_slug: PartedMap, path: str, old_key: str | None, new_key: str | None) -> None:
    """Update the claims table for a page whose names went from ``old_key`` to ``new_key``
    (None: the page did not exist, or no longer does)."""
    old = _stored_claims(path, old_key) if old_key is not None else set()
    new = _stored_claims(path, new_key) if new_key is not None else set()
    for slug in old - new:
        by_slug[slug] = "\x00".join(p for p in by_slug.get(slug).split("\x00") if p and p != path)
    for slug in new - old:
        listed = by_slug.get(slug)
        if path not in listed.split("\x00"):
            by_slug[slug] = f"{listed}\x00{path}" if listed else path


def _page_names(path: str, names_key: str) -> set[str]:
    """What `Facts.names` lists for a page: the slugs it answers to and its bare stem."""
    return {*_answers_to(path, names_key), path.rsplit("/", 1)[-1][:-3]}


def _names_of(text: str) -> tuple[str, ...]:
    """The keys under which ``texts`` lists a target text: its slug, and its file name."""
    if text[:1] == MD:
        names = names_of_key(text)
        if names is None:
            return ()
        slug, file_name = names
        return (slug, FILE + file_name) if slug else (FILE + file_name,)
    target = parse_target(text)
    if target.is_self_anchor or target.is_empty:
        return ()
    return (target.slug, FILE + target.file_name.lower()) if target.file_name else (target.slug,)


class FactsClaims:
    """`links.Claims` read from facts: who claims a name, from the claims table and the
    claimants' names keys."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.cut = len(facts.root_dir) + 1 if facts.root_dir else 0

    def claimants(self, name: str) -> list[tuple[str, str]]:
        names_by_path = self.facts.names_by_path
        found = []
        for path in dict.fromkeys(claimant_paths(self.facts.by_slug, names_by_path, name)):
            key = names_by_path.get(path)
            if key is None:
                continue
            page_id = path[self.cut : -3]
            if name[:1] == TITLE:
                if _title_of(path, key) == name[1:]:
                    found.append((page_id, "title"))
                continue
            if _stem_slug(path) == name:
                found.append((page_id, "stem"))
            if page_kind(page_id) != "page" and name in key.split("\x01", 1)[0].split("\x02"):
                found.append((page_id, "alias"))  # only concept and query aliases resolve links
        return found


class _Resolver:
    """Outcomes of link targets the facts do not know, resolved against the pages that
    answer to the target's slug (rebuilt from their names alone)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.files = {path.rsplit("/", 1)[-1].lower() for path in facts.other_files}
        self.resolved: list[str] = []  # texts resolved here, in order
        self._file_paths: set[str] | None = None

    def _markdown(self, text: str) -> Outcome:
        """A markdown link's outcome: the page at its path (and its headings), a file, or none."""
        path, anchor = split_md_key(text)
        if not path:
            return ("self",)
        key = self.facts.names_by_path.get(path)
        if key is not None:
            _aliases, headings, blocks = (part.split("\x02") for part in key.split("\x01")[:3])
            what = (
                anchor_problem(frozenset(headings), frozenset(blocks), anchor, markdown=True)
                if anchor
                else None
            )
            page_id = path[len(self.facts.root_dir) + 1 if self.facts.root_dir else 0 : -3]
            return ("ok", path, page_id, (), page_id, what) if what else PLAIN_OK
        if self._file_paths is None:
            self._file_paths = set(self.facts.other_files)
        return PLAIN_OK if path in self._file_paths else ("nofile", path)

    def _pages_answering(self, slug: str) -> dict[str, str]:
        names_by_path = self.facts.names_by_path
        return {
            path: names_by_path[path]
            for path in self.facts.by_slug.get(slug).split("\x00")
            if path in names_by_path
        }

    def __call__(self, text: str) -> Outcome | None:
        if text[:1] == MD:
            markdown = self._markdown(text)
            self.facts.outcomes[text] = markdown
            self.resolved.append(text)
            return markdown
        target = parse_target(text)
        if target.is_self_anchor:
            return ("self",)
        if target.is_empty:
            return ("empty",)
        if target.slug not in self.facts.names and not (
            target.file_name and target.file_name.lower() in self.files
        ):
            return ("broken", target.key)
        relevant = self._pages_answering(target.slug)
        known = Checker(names_wiki(self.facts.root_dir, relevant, self.facts.other_files)).outcome(
            text
        )
        if known is not None:
            self.facts.outcomes[text] = known  # the derived facts keep it for the next run
            self.resolved.append(text)
        return known


Change = tuple[str, str, str, str]  # (status M, A or D, path, old blob id, new blob id)


def derive(
    read_blobs: ReadBlobs,
    locate: Locate,
    base_rows: tuple[ResultRow, ...],
    facts: Facts,
    *,
    diff: bytes,
    wiki_dir: str | None,
    base: str,
    limit: int,
) -> tuple[CheckResult, Facts] | None:
    """The check result of the tree ``diff`` leads to from the tree ``base_rows`` and
    ``facts`` describe. ``diff`` is ``git diff-index``/``diff-tree -z --no-renames`` output
    (its blob ids name the changed pages); ``locate`` names the unchanged pages to re-read
    in the new tree, ``read_blobs`` reads them (`git cat-file` names). None whenever the
    delta cannot tell (the full check then runs): each step below says when."""
    changes = _parse_diff(diff)
    if changes is None or (wiki_dir is None and _root_appears(changes, facts, base)):
        return None
    root_dir = facts.root_dir
    delta = _Delta(
        facts, f"{root_dir}/" if root_dir else "", dict(facts.names_by_path), set(facts.other_files)
    )
    if not _sort_changes(delta, changes, base):
        return None
    if wiki_dir is None and detect_root(delta.all_paths(), base) != root_dir:
        return None
    if not _read_changed(delta, read_blobs, limit):
        return None
    outcomes, dropped, rechecked = _drop_outcomes(delta)
    if rechecked and not _read_unchanged(delta, rechecked, locate, read_blobs, limit):
        return None
    new_facts, names_changed, files_changed = _derived_facts(delta, outcomes)
    checked = _check_pages(delta, new_facts, outcomes)
    if checked is None:
        return None
    found, resolver, added_users = checked
    unknown = [text for text in resolver.resolved if text not in facts.outcomes]
    if unknown:
        new_facts.texts = facts.texts.copy()
        new_facts.add_texts(unknown)
    new_facts.added = (
        {text: tuple(paths) for text, paths in added_users.items()},
        {text: outcomes[text] for text in resolver.resolved},
        names_changed,
        files_changed,
        tuple(dropped),
        new_facts.fingerprint,
    )
    kept = _kept_problems(base_rows, delta)
    return CheckResult(len(delta.names_by_path), sort_problems(kept + found)), new_facts


@dataclass
class _Delta:
    """A derivation's view of the new tree, built step by step from the base's facts."""

    facts: Facts  # the base's: never changed
    prefix: str  # the wiki root, as a path prefix ("" at the repository root)
    names_by_path: dict[str, str]  # every page of the new tree -> its names key
    other_files: set[str]  # every file of the new tree that is not a page
    affected_slugs: set[str] = field(default_factory=set)  # names some change adds or drops
    affected_files: set[str] = field(default_factory=set)  # file names of changed attachments
    to_read: dict[str, str] = field(default_factory=dict)  # changed page -> its new blob id
    removed: set[str] = field(default_factory=set)  # deleted pages
    fresh: dict[str, Page] = field(default_factory=dict)  # pages read and checked again

    def all_paths(self) -> list[str]:
        return list(self.names_by_path) + sorted(self.other_files) + list(self.to_read)


def _parse_diff(diff: bytes) -> list[Change] | None:
    """The changes ``diff`` lists; None when one is no plain change of a file (a symlink or
    submodule, a rename, a path with a newline) or when there are over MAX_CHANGES."""
    fields = diff.split(b"\0")
    changes: list[Change] = []
    for meta, raw in zip(fields[0::2], fields[1::2]):
        if not meta:
            continue
        parts = meta.decode().lstrip(":").split(" ")
        if (
            len(parts) != 5
            or parts[4] not in ("M", "A", "D")
            or parts[0] in _ODD_MODES
            or parts[1] in _ODD_MODES
        ):
            return None
        path = raw.decode("utf-8", "surrogateescape")
        if "\n" in path:
            return None
        changes.append((parts[4], path, parts[2], parts[3]))
    return changes if len(changes) <= MAX_CHANGES else None


def _root_appears(changes: list[Change], facts: Facts, base: str) -> bool:
    """Whether a ``wiki/`` folder appears where the pages were at the project root: the
    wiki root moves (only when it is detected, not configured)."""
    wiki_root = f"{base}/wiki/" if base else "wiki/"
    return facts.root_dir == base and any(
        status == "A" and path.startswith(wiki_root) for status, path, _, _ in changes
    )


def _sort_changes(delta: _Delta, changes: list[Change], base: str) -> bool:
    """Apply ``changes`` to the pages and files of ``delta``: the pages to read, the ones
    removed, the names and file names affected. False when a deleted page is one the facts
    do not know (they do not describe the base tree)."""
    for status, path, _old, new_blob in changes:
        if path[:1] == "." or "/." in path:
            continue
        is_page = (
            path.startswith(delta.prefix)
            and path[-3:].lower() == ".md"
            and not in_sources(path, base)
        )
        if not is_page:
            delta.affected_files.add(path.rsplit("/", 1)[-1].lower())
            if status == "D":
                delta.other_files.discard(path)
            else:
                delta.other_files.add(path)
            continue
        if status == "D":
            old_key = delta.names_by_path.pop(path, None)
            if old_key is None:
                return False
            delta.affected_slugs |= _answers_to(path, old_key)
            delta.removed.add(path)
        else:
            delta.to_read[path] = new_blob
    return True


def _read_changed(delta: _Delta, read_blobs: ReadBlobs, limit: int) -> bool:
    """Read and scan the changed pages; a page whose names changed affects them, before and
    after. False when a blob id is missing (not a diff of two trees or of the index) or a
    blob cannot be read."""
    if any(not blob.strip("0") for blob in delta.to_read.values()):
        return False
    blobs = read_blobs(delta.to_read.values()) if delta.to_read else {}
    for path, blob in delta.to_read.items():
        data = blobs.get(blob)
        if data is None:
            return False
        page = page_of(path, delta.prefix, None, data, limit)
        new_key = compact_key(path, page.scan.names_key)
        old_key = delta.names_by_path.get(path)
        if old_key is None or _link_names(old_key) != _link_names(new_key):
            delta.affected_slugs |= _answers_to(path, new_key)
            if old_key is not None:
                delta.affected_slugs |= _answers_to(path, old_key)
        delta.names_by_path[path] = new_key
        delta.fresh[path] = page
    return True


def _drop_outcomes(delta: _Delta) -> tuple[dict[str, Outcome], dict[str, None], set[str]]:
    """The base's outcomes without those an affected name or file name may change (a copy:
    the base's facts stay as they were), the texts dropped, and the unchanged pages to
    check again: those using a dropped text, and the co-claimants of a changed page's names."""
    facts = delta.facts
    outcomes = dict(facts.outcomes)
    rechecked: set[str] = set()
    dropped: dict[str, None] = {}
    for name in [*delta.affected_slugs, *(FILE + f for f in delta.affected_files)]:
        for text in facts.texts_named(name):
            if outcomes.pop(text, None) is not None:
                dropped[text] = None
            rechecked.update(facts.users_of(text))
    rechecked |= _co_claimants(facts, delta.names_by_path, [*delta.to_read, *delta.removed])
    rechecked -= delta.removed
    rechecked -= set(delta.fresh)
    return outcomes, dropped, {p for p in rechecked if p in delta.names_by_path}


def _read_unchanged(
    delta: _Delta, paths: set[str], locate: Locate, read_blobs: ReadBlobs, limit: int
) -> bool:
    """Read the unchanged pages at ``paths`` from the new tree, to check them again; False
    when one cannot be read."""
    where = locate(sorted(paths))
    extra = read_blobs(where.values())
    for path in paths:
        data = extra.get(where.get(path, ""))
        if data is None:
            return False
        delta.fresh[path] = page_of(path, delta.prefix, None, data, limit)
    return True


def _derived_facts(
    delta: _Delta, outcomes: dict[str, Outcome]
) -> tuple[Facts, dict[str, str | None], dict[str, bool]]:
    """The facts of the new tree (link usage still the base's: `_check_pages` adds to it),
    with the pages whose names changed (None: deleted) and the files added (True) or
    removed (False)."""
    facts = delta.facts
    names_by_path = delta.names_by_path
    names = set(facts.names)
    for path in delta.fresh:
        names |= _page_names(path, names_by_path[path])
    names_changed: dict[str, str | None] = {
        path: names_by_path[path]
        for path in delta.fresh
        if facts.names_by_path.get(path) != names_by_path[path]
    }
    names_changed.update(dict.fromkeys(delta.removed))
    files_changed = {path: True for path in delta.other_files.difference(facts.other_files)}
    files_changed.update(dict.fromkeys(set(facts.other_files).difference(delta.other_files), False))
    same_names = not names_changed and not files_changed
    fingerprint = (
        facts.fingerprint
        if same_names
        else chained_fingerprint(facts.fingerprint, names_changed, files_changed)
    )
    by_slug = facts.by_slug
    if names_changed:
        by_slug = by_slug.copy()
        for path, key in names_changed.items():
            move_names(by_slug, path, facts.names_by_path.get(path), key)
    new_facts = Facts(
        facts.root_dir,
        fingerprint,
        names,
        sorted(delta.other_files),
        outcomes,
        names_by_path,
        facts.paths,
        facts.users,
        facts.texts,
        by_slug,
    )
    return new_facts, names_changed, files_changed


def _check_pages(
    delta: _Delta, new_facts: Facts, outcomes: dict[str, Outcome]
) -> tuple[list[Problem], _Resolver, dict[str, list[str]]] | None:
    """Check the pages read again, in path order, and list the links of the changed ones in
    ``new_facts``: their problems, the resolver that found the outcomes the facts lacked,
    and the link usage the base's facts did not list. None when an outcome is unknown."""
    facts = delta.facts
    resolver = _Resolver(new_facts)
    checker = Checker(None, outcomes, FactsClaims(new_facts))
    found: list[Problem] = []
    added_users: dict[str, list[str]] = {}
    new_users = facts.users
    new_paths = facts.paths
    position: dict[str, int] = {}
    if delta.to_read:  # re-checked pages did not change: the base's facts list their links
        new_users, new_paths = new_users.copy(), list(new_paths)
        position = {path: i for i, path in enumerate(new_paths)}
    for path in sorted(delta.fresh):
        page = delta.fresh[path]
        problems = checker.page_problems(page, fallback=resolver)
        if problems is None:
            return None
        found.extend(problems)
        if path not in delta.to_read:
            continue
        index = position.get(path)
        if index is None:
            index = position[path] = len(new_paths)
            new_paths.append(path)
        mark = str(index)
        for text in dict.fromkeys(link_keys(page)):
            listed = new_users.get(text, "")
            if mark not in listed.split():
                new_users[text] = f"{listed} {mark}" if listed else mark
                added_users.setdefault(text, []).append(path)
    new_facts.users, new_facts.paths = new_users, new_paths
    return found, resolver, added_users


def _kept_problems(base_rows: tuple[ResultRow, ...], delta: _Delta) -> list[Problem]:
    """The base's problems that still stand: not of a removed page, nor of a page checked
    again -- except its provenance problems (sourcing.derived_sourcing judges again those
    of pages whose record or sources changed)."""
    fresh, removed = delta.fresh, delta.removed
    return result_from_record(
        (
            0,
            tuple(
                r
                for r in base_rows
                if r[0] not in removed and (r[0] not in fresh or r[3] in SOURCING_CODES)
            ),
        )
    ).problems


def _co_claimants(facts: Facts, names_by_path: dict[str, str], changed: list[str]) -> set[str]:
    """Pages whose name problems (duplicate title, alias collision) the ``changed`` pages'
    names may change: those claiming a name one of them gained or gave up (a title, an
    alias; a file name only where another page has it as an alias)."""
    found: set[str] = set()
    for path in changed:
        old_key, new_key = facts.names_by_path.get(path), names_by_path.get(path)
        if old_key == new_key:
            continue
        old = _claims_of(path, old_key) if old_key is not None else set()
        new = _claims_of(path, new_key) if new_key is not None else set()
        stem = _stem_slug(path)
        for name in old ^ new:
            for other in claimant_paths(facts.by_slug, facts.names_by_path, name):
                if other == path:
                    continue
                if name == stem and name[:1] != TITLE:
                    other_key = facts.names_by_path.get(other, "")
                    if name not in other_key.split("\x01", 1)[0].split("\x02"):
                        continue  # a page of the same file name elsewhere: no name problem
                found.add(other)
    return found
