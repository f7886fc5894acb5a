"""``llmwiki merge-pages --suggest``: pages that look like one concept written twice, each
group with the command that folds it into one page.

Three reasons, strongest first:

* ``duplicate-title``: two pages declare one title (the check's ``duplicate-title``, with its
  exception: pages whose titles only repeat their file names are told apart by their paths);
* ``alias-collision``: an alias of one page is another page's name or alias (the check's
  ``alias-collision``, for every page, not only those whose aliases resolve links);
* ``similar-title``: titles that differ only in case, punctuation, a leading article, a
  plural, or one typo (one letter added, dropped or changed in a word of five letters or
  more, or two words written as one).

Numbered, dated and lettered titles are never offered: two titles whose numbers or letters
differ (``Well 2`` and ``Well 3``, ``2024-01-02`` and ``2024-01-03``, ``World War I`` and
``World War II``, ``Plan A`` and ``Plan B``) name different things however alike they read,
and so do pages whose file names number or date them differently (a daily note whose title
was copied from the day before). In each group the page more links reach is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..wiki.model import Page, Resolution, Wiki
from ..wiki.slug import parse_target, slugify
from ..wiki.titles import stem_title
from .links import leaf_titled

REASONS = ("duplicate-title", "alias-collision", "similar-title")
_ARTICLES = frozenset({"the", "a", "an"})
_ROMAN = re.compile(r"(?=[ivxlcdm]+$)m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")
_MIN_FUZZY = 5  # a typo in a shorter word is another word (cat, car; list, lint)


def _title(page: Page) -> str:
    return page.scan.title or stem_title(page.stem)


def _labels(key: str) -> tuple[str, ...]:
    """The numbers and letters that label a title (digits, roman numerals, one-letter words),
    in order: what tells ``Well 2`` from ``Well 3`` and ``Plan A`` from ``Plan B``."""
    return tuple(
        token.lstrip("0") or "0" if token.isdigit() else token
        for token in re.findall(r"[0-9]+|[^\W\d_]+", key)
        if token.isdigit() or len(token) == 1 or _ROMAN.fullmatch(token)
    )


def _singular(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def concept_key(slug: str) -> str:
    """A title slug with a leading article dropped and each word made singular."""
    words = slug.split("-")
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    return "-".join(_singular(w) for w in words)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one inserted, deleted or changed character."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + (len(a) == len(b)) :] == b[i + 1 :]


def _typo(a: str, b: str) -> bool:
    """Whether the keys ``a`` and ``b`` are one typo apart: one edit, either joining or
    splitting words, or inside one word of five letters or more (``list`` and ``lint`` are
    two words, ``decent`` and ``descent`` one misspelt)."""
    if not _one_edit(a, b):
        return False
    if a.replace("-", "") == b.replace("-", ""):
        return True
    words = [(x, y) for x, y in zip(a.split("-"), b.split("-")) if x != y]
    return (
        a.count("-") == b.count("-") and len(words) == 1 and min(map(len, words[0])) >= _MIN_FUZZY
    )


@dataclass
class Group:
    """Pages that look like one concept: why, each page with the links that reach it, the page
    to keep, and the commands that fold the others into it."""

    reasons: list[str]
    pages: list[tuple[Page, int]]  # (page, inbound links), the one to keep first
    names: list[str] = field(default_factory=list)  # the shared titles or aliases, as written

    @property
    def keep(self) -> Page:
        return self.pages[0][0]

    def commands(self) -> list[str]:
        return [
            f"llmwiki merge-pages {_quoted(self.keep.path)} {_quoted(page.path)}"
            for page, _ in self.pages[1:]
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "reasons": self.reasons,
            "names": self.names,
            "keep": self.keep.path,
            "pages": [{"path": p.path, "title": _title(p), "inbound": n} for p, n in self.pages],
            "commands": self.commands(),
        }


def _quoted(path: str) -> str:
    import shlex

    return shlex.quote(path)


def inbound_links(wiki: Wiki) -> dict[str, int]:
    """How many links (wikilinks) of other pages reach each page, by path."""
    counts: dict[str, int] = {}
    resolved: dict[str, Resolution] = {}
    for page in wiki.pages:
        for _line, _col, _inner, text, _label, _embed in page.scan.raw_links:
            found = resolved.get(text)
            if found is None:
                found = resolved[text] = wiki.resolve(parse_target(text))
            if found.page is not None and found.page.path != page.path:
                counts[found.page.path] = counts.get(found.page.path, 0) + 1
    return counts


def _pairs(wiki: Wiki) -> Iterable[tuple[str, Page, Page, str]]:
    """(reason, page, page, name) for each pair of pages that look alike."""
    pages = wiki.pages
    titles: dict[str, list[Page]] = {}
    for page in pages:
        titles.setdefault(page.scan.title_slug or slugify(_title(page)), []).append(page)
    for slug, same in titles.items():
        for i, a in enumerate(same):
            for b in same[i + 1 :]:
                if slug and not (leaf_titled(a.id, slug) and leaf_titled(b.id, slug)):
                    yield "duplicate-title", a, b, _title(a)
    names: dict[str, list[Page]] = {}
    for page in pages:
        for alias in page.scan.alias_slugs:
            names.setdefault(alias, []).append(page)
    for page in pages:
        for name in {slugify(page.stem), page.scan.title_slug} - {""}:
            for other in names.get(name, ()):
                if other.path != page.path:
                    yield "alias-collision", other, page, name
    for alias, claimed in names.items():
        for i, a in enumerate(claimed):
            for b in claimed[i + 1 :]:
                yield "alias-collision", a, b, alias
    # similar titles: one concept key, or one typo apart (found through keys with one
    # character deleted, so the pairs come without comparing every page with every other)
    keys: dict[str, list[tuple[str, Page]]] = {}
    for slug, same in titles.items():
        if slug:
            keys.setdefault(concept_key(slug), []).extend((slug, p) for p in same)
    deleted: dict[str, list[str]] = {}
    for key in keys:
        if len(key) >= _MIN_FUZZY:
            for i in range(len(key)):
                deleted.setdefault(key[:i] + key[i + 1 :], []).append(key)
            deleted.setdefault(key, []).append(key)
    alike = {(k, k) for k in keys}
    for near in deleted.values():
        for i, one in enumerate(near):
            for two in near[i + 1 :]:
                if one != two and _typo(one, two):
                    alike.add((min(one, two), max(one, two)))
    for a_key, b_key in sorted(alike):
        members = keys[a_key] + (keys[b_key] if b_key != a_key else [])
        for i, (a_slug, a) in enumerate(members):
            for b_slug, b in members[i + 1 :]:
                if (
                    a_slug != b_slug
                    and _labels(concept_key(a_slug)) == _labels(concept_key(b_slug))
                    and not (
                        leaf_titled(a.id, a_slug)
                        and leaf_titled(b.id, b_slug)
                        and _place(a) != _place(b)
                    )
                ):
                    yield "similar-title", a, b, _title(a)


def _series(a: Page, b: Page) -> bool:
    """Whether two pages are items of a numbered or dated series by their file names (both
    names hold numbers, and not the same ones: ``2022.02.08`` and ``2022.02.22``), however
    alike their titles (one copied from the other and never changed)."""
    one, two = (
        _labels(slugify(a.stem.replace(".", "-"))),
        _labels(slugify(b.stem.replace(".", "-"))),
    )
    digits = [x for x in one if x.isdigit()], [x for x in two if x.isdigit()]
    return bool(digits[0]) and bool(digits[1]) and digits[0] != digits[1]


# A file name that dates or time-stamps its note: ``2020-07-17``, ``2022.02.08``, ``20200717``,
# a Zettelkasten id ``202007171053``, Dendron's ``journal.2020-07-17-105322``.
_DATED = re.compile(r"(?<![0-9])(?:[0-9]{4}[-._][0-9]{2}[-._][0-9]{2}|[0-9]{8,14})(?![0-9])")


def _dated(page: Page) -> bool:
    """Whether ``page`` is a dated or time-stamped note by its file name (a daily note, a
    journal entry, a Zettelkasten note): one moment's note, never a copy of another page,
    whatever its title (often a template's or the day before's)."""
    return _DATED.search(page.stem) is not None


def _place(page: Page) -> str:
    """Where a page sits: its folder, and the hierarchy of a dotted name (Dendron's
    ``tags.feature.images`` sits in ``tags.feature``)."""
    return (
        page.path[:-3].rsplit(".", 1)[0] if "." in page.stem else page.path.rsplit("/", 1)[0] + "/"
    )


def suggest(wiki: Wiki) -> list[Group]:
    """Groups of pages that look like one concept, most-linked page first in each; groups in
    the order of their strongest reason, then their kept page's path."""
    parent: dict[str, str] = {}

    def find(path: str) -> str:
        while parent.get(path, path) != path:
            path = parent[path]
        return path

    reasons: dict[frozenset[str], str] = {}
    names: dict[frozenset[str], str] = {}
    for reason, a, b, name in _pairs(wiki):
        if a.path == b.path or _series(a, b) or _dated(a) or _dated(b):
            continue
        if wiki.flavour.templates and (
            wiki.flavour.is_template(a.id) or wiki.flavour.is_template(b.id)
        ):
            continue
        pair = frozenset((a.path, b.path))
        if pair not in reasons or REASONS.index(reason) < REASONS.index(reasons[pair]):
            reasons[pair], names[pair] = reason, name
        parent[find(a.path)] = find(b.path)
    if not reasons:
        return []
    inbound = inbound_links(wiki)
    members: dict[str, list[str]] = {}
    for pair in reasons:
        for path in pair:
            members.setdefault(find(path), [])
    for path in {p for pair in reasons for p in pair}:
        members[find(path)].append(path)
    groups = []
    for paths in members.values():
        ranked = sorted(paths, key=lambda p: (-inbound.get(p, 0), p.count("/"), len(p), p))
        inside = [pair for pair in reasons if pair <= set(paths)]
        why = sorted({reasons[pair] for pair in inside}, key=REASONS.index)
        shown = sorted({names[pair] for pair in inside})
        groups.append(Group(why, [(wiki.by_path[p], inbound.get(p, 0)) for p in ranked], shown))
    groups.sort(key=lambda g: (REASONS.index(g.reasons[0]), g.keep.path))
    return groups
