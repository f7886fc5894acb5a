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
files) returns None and the caller runs the full check. tests/test_check_cli.py compares
every path here with an uncached full check.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .checks import Checker, CheckResult, Outcome, result_from_record
from .git import Git
from .problems import Problem
from .wiki.model import Page, detect_root, names_wiki, page_kind
from .wiki.pages import scan_page
from .wiki.slug import parse_target, slugify

FILE = "\x01"  # prefix of a file-name key in Facts.texts
_PLAIN_OK: Outcome = ("ok", "", None, (), None, None)  # resolved, unambiguous, anchor fine
MAX_CHANGES = 2000  # beyond this a full check (scan cache) is cheaper than reading blobs
_ODD_MODES = ("120000", "160000")  # symlinks and submodules: the full check handles them


@dataclass
class Facts:
    """What a derivation needs about one wiki state (stored per names fingerprint)."""

    root_dir: str
    fingerprint: str
    names: set[str]  # every slug some page answers to (a superset is fine: only a filter)
    other_files: list[str]
    outcomes: dict[str, Outcome]
    names_by_path: dict[str, str]  # page path -> PageScan.names_key
    # Which pages use each link target text (a superset: stale entries only cost a recheck),
    # as space-separated indexes into ``paths`` (append-only): strings load ~10x faster
    # than 125,000 list items, and only the few affected texts are ever decoded.
    paths: list[str]
    users: dict[str, str]
    # Link target texts by the slug (or FILE + file name) their outcome depends on,
    # NUL-joined: which outcomes a changed name invalidates, without parsing every text.
    texts: dict[str, str]

    def to_record(self) -> tuple:
        # A link that resolves cleanly reports nothing, whatever it resolves to: those
        # outcomes (most of them) share one tuple, which marshal writes and loads once.
        plain = _PLAIN_OK
        outcomes = {text: plain if (o[0] == "ok" and not o[3] and not o[5]) else o for text, o in self.outcomes.items()}
        return (3, self.root_dir, self.fingerprint, sorted(self.names), sorted(self.other_files),
                outcomes, self.names_by_path, self.paths, self.users, self.texts)

    @classmethod
    def from_record(cls, record: tuple | None) -> Facts | None:
        if not isinstance(record, tuple) or len(record) != 10 or record[0] != 3:
            return None  # older layout: rebuilt by the next full check
        _, root_dir, fingerprint, names, other_files, outcomes, names_by_path, paths, users, texts = record
        return cls(root_dir, fingerprint, set(names), other_files, outcomes, names_by_path, paths, users, texts)

    @classmethod
    def build(cls, root_dir: str, fingerprint: str, names: set[str], other_files: list[str],
              outcomes: dict[str, Outcome], pages: list[tuple[str, str, tuple]]) -> Facts:
        """From a full check: ``pages`` are (path, names key, raw links) of every page."""
        users: dict[str, list[str]] = {}
        for index, (_path, _key, links) in enumerate(pages):
            mark = str(index)
            for link in links:
                users.setdefault(link[3], []).append(mark)
        facts = cls(root_dir, fingerprint, names, list(other_files), outcomes,
                    {path: key for path, key, _ in pages}, [path for path, _, _ in pages],
                    {text: " ".join(dict.fromkeys(marks)) for text, marks in users.items()}, {})
        facts.add_texts(users)
        return facts

    def add_texts(self, texts: object) -> None:
        """List new link target texts under their names (copy ``self.texts`` first when
        it is shared)."""
        for text in texts:  # type: ignore[attr-defined]
            for name in _names_of(text):
                listed = self.texts.get(name)
                self.texts[name] = f"{listed}\x00{text}" if listed else text

    def texts_named(self, name: str) -> list[str]:
        listed = self.texts.get(name)
        return listed.split("\x00") if listed else []

    def users_of(self, text: str) -> list[str]:
        return [self.paths[int(i)] for i in self.users.get(text, "").split()]


def fingerprint_of(root_dir: str, names_by_path: dict[str, str], other_files: list[str], max_page_bytes: int) -> str:
    """`checks.names_fingerprint` computed from page names alone (same digest)."""
    parts = [root_dir, str(max_page_bytes)]
    ordered = sorted(names_by_path, key=lambda p: (p.count("/"), p))
    parts.extend(f"{path}\x01{names_by_path[path]}" for path in ordered)
    parts.extend(sorted(other_files))
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def page_of(path: str, prefix: str, blob: str | None, data: bytes, limit: int) -> Page:
    page_id = path[len(prefix):-3]
    return Page(path, page_id, page_id.rsplit("/", 1)[-1], page_kind(page_id), blob, scan_page(data, max_bytes=limit))


def _answers_to(path: str, names_key: str) -> set[str]:
    """The slugs a page answers to: its slugified stem and its alias slugs."""
    aliases = names_key.split("\x01", 1)[0]
    return {slugify(path.rsplit("/", 1)[-1][:-3]), *(a for a in aliases.split("\x02") if a)}


def _names_of(text: str) -> tuple[str, ...]:
    """The keys under which ``texts`` lists a target text: its slug, and its file name."""
    target = parse_target(text)
    if target.is_self_anchor or target.is_empty:
        return ()
    return (target.slug, FILE + target.file_name.lower()) if target.file_name else (target.slug,)


class _Resolver:
    """Outcomes of link targets the facts do not know, resolved against the pages that
    answer to the target's slug (rebuilt from their names alone)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.files = {path.rsplit("/", 1)[-1].lower() for path in facts.other_files}
        self._by_slug: dict[str, list[str]] | None = None

    def _pages_answering(self, slug: str) -> dict[str, str]:
        if self._by_slug is None:
            self._by_slug = {}
            for path, key in self.facts.names_by_path.items():
                for name in _answers_to(path, key):
                    self._by_slug.setdefault(name, []).append(path)
        return {path: self.facts.names_by_path[path] for path in self._by_slug.get(slug, ())}

    def __call__(self, text: str) -> Outcome | None:
        target = parse_target(text)
        if target.is_self_anchor:
            return ("self",)
        if target.is_empty:
            return ("empty",)
        if target.slug not in self.facts.names and not (target.file_name and target.file_name.lower() in self.files):
            return ("broken", target.key)
        relevant = self._pages_answering(target.slug)
        known = Checker(names_wiki(self.facts.root_dir, relevant, self.facts.other_files)).outcome(text)
        if known is not None:
            self.facts.outcomes[text] = known  # the derived facts keep it for the next run
        return known


def derive(git: Git, base_rows: tuple, facts: Facts, *, diff: bytes, read_prefix: str, wiki_dir: str | None,
           base: str, limit: int) -> tuple[CheckResult, Facts] | None:
    """The check result of the tree ``diff`` leads to from the tree ``base_rows`` and
    ``facts`` describe. ``diff`` is ``git diff-index``/``diff-tree -z --no-renames`` output;
    ``read_prefix`` names the new tree for `git cat-file` (``":"`` for the index,
    ``"<tree>:"`` for a tree)."""
    fields = diff.split(b"\0")
    changes: list[tuple[str, str, str, str]] = []  # (status, path, old names key or "", new blob)
    for meta, raw in zip(fields[0::2], fields[1::2]):
        if not meta:
            continue
        parts = meta.decode().lstrip(":").split(" ")
        if len(parts) != 5 or parts[4] not in ("M", "A", "D") or parts[0] in _ODD_MODES or parts[1] in _ODD_MODES:
            return None
        path = raw.decode("utf-8", "surrogateescape")
        if "\n" in path:
            return None
        changes.append((parts[4], path, parts[2], parts[3]))
    if len(changes) > MAX_CHANGES:
        return None
    root_dir = facts.root_dir
    if wiki_dir is None:
        wiki_root = f"{base}/wiki/" if base else "wiki/"
        if root_dir == base and any(status == "A" and path.startswith(wiki_root) for status, path, _, _ in changes):
            return None  # a wiki/ folder appears: the wiki root moves
    prefix = f"{root_dir}/" if root_dir else ""

    names_by_path = dict(facts.names_by_path)
    other_files = set(facts.other_files)
    affected_slugs: set[str] = set()
    affected_files: set[str] = set()
    to_read: list[str] = []
    removed: set[str] = set()
    for status, path, _old, new_blob in changes:
        if path[:1] == "." or "/." in path:
            continue
        is_page = path.startswith(prefix) and path[-3:].lower() == ".md"
        if not is_page:
            affected_files.add(path.rsplit("/", 1)[-1].lower())
            if status == "D":
                other_files.discard(path)
            else:
                other_files.add(path)
            continue
        if status == "D":
            old_key = names_by_path.pop(path, None)
            if old_key is None:
                return None  # the facts do not describe the base tree
            affected_slugs |= _answers_to(path, old_key)
            removed.add(path)
        else:
            to_read.append(path)
    if wiki_dir is None and detect_root(list(names_by_path) + sorted(other_files) + to_read, base) != root_dir:
        return None

    blobs = git.read_blobs(read_prefix + path for path in to_read) if to_read else {}
    fresh: dict[str, Page] = {}
    for path in to_read:
        data = blobs.get(read_prefix + path)
        if data is None:
            return None
        page = page_of(path, prefix, None, data, limit)
        new_key = page.scan.names_key
        old_key = names_by_path.get(path)
        if old_key != new_key:
            affected_slugs |= _answers_to(path, new_key)
            if old_key is not None:
                affected_slugs |= _answers_to(path, old_key)
        names_by_path[path] = new_key
        fresh[path] = page

    outcomes = dict(facts.outcomes)  # a copy: the base's facts stay as they were
    rechecked: set[str] = set()
    for name in [*affected_slugs, *(FILE + f for f in affected_files)]:
        for text in facts.texts_named(name):
            if outcomes.pop(text, None) is not None:
                rechecked.update(facts.users_of(text))
    rechecked -= removed
    rechecked -= set(fresh)
    rechecked = {p for p in rechecked if p in names_by_path}
    if rechecked:
        extra = git.read_blobs(read_prefix + path for path in rechecked)
        for path in rechecked:
            data = extra.get(read_prefix + path)
            if data is None:
                return None
            fresh[path] = page_of(path, prefix, None, data, limit)

    names = set(facts.names)
    for path in fresh:
        names |= _answers_to(path, names_by_path[path])
        names.add(path.rsplit("/", 1)[-1][:-3])
    same_names = names_by_path == facts.names_by_path and other_files == set(facts.other_files)
    fingerprint = facts.fingerprint if same_names else fingerprint_of(root_dir, names_by_path, sorted(other_files), limit)
    new_facts = Facts(root_dir, fingerprint, names,
                      sorted(other_files), outcomes, names_by_path, facts.paths, facts.users, facts.texts)
    resolver = _Resolver(new_facts)
    checker = Checker(None, outcomes)
    found: list[Problem] = []
    new_users = facts.users
    new_paths = facts.paths
    if fresh:
        new_users, new_paths = dict(new_users), list(new_paths)
        position = {path: i for i, path in enumerate(new_paths)}
    for path in sorted(fresh):
        page = fresh[path]
        problems = checker.page_problems(page, fallback=resolver)
        if problems is None:
            return None
        found.extend(problems)
        index = position.get(path)
        if index is None:
            index = position[path] = len(new_paths)
            new_paths.append(path)
        mark = str(index)
        for text in dict.fromkeys(link[3] for link in page.scan.raw_links):
            listed = new_users.get(text, "")
            if mark not in listed.split():
                new_users[text] = f"{listed} {mark}" if listed else mark
    new_facts.users, new_facts.paths = new_users, new_paths
    unknown = [text for text in checker.outcomes if text not in facts.outcomes]
    if unknown:
        new_facts.texts = dict(facts.texts)
        new_facts.add_texts(unknown)
    gone = removed | set(fresh)
    kept = result_from_record((0, tuple(r for r in base_rows if r[0] not in gone))).problems
    problems = sorted(kept + found, key=lambda p: (p.path, p.line, p.col, p.code))
    return CheckResult(len(names_by_path), problems), new_facts
