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
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
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


#: A member for `_linked`: (group, page, place, numbers); a place or numbers of None agrees
#: with every other.
_Member = tuple[Hashable, Page, Hashable, Hashable]


def _pairs(wiki: Wiki) -> Iterable[tuple[str, Page, Page, str]]:
    """(reason, page, page, name) for pairs of pages that look alike: not every such pair, but
    enough of them to join the same pages into groups (`_linked`), so that a thousand pages
    sharing one title cost a thousand steps, not half a million pairs."""
    # a dated or time-stamped note, or a template, is never offered (filtered before pairing:
    # the pairs below join groups through a few members, so none may be dropped after)
    pages = [
        p
        for p in wiki.pages
        if not _dated(p) and not (wiki.flavour.templates and wiki.flavour.is_template(p.id))
    ]
    numbers: dict[str, tuple[str, ...] | None] = {}

    def digits(page: Page) -> tuple[str, ...] | None:
        if page.path not in numbers:
            numbers[page.path] = _digits(page)
        return numbers[page.path]

    titles: dict[str, list[Page]] = {}
    for page in pages:
        titles.setdefault(page.scan.title_slug or slugify(_title(page)), []).append(page)
    yield from _title_pairs(titles, digits)
    yield from _alias_pairs(pages, digits)
    yield from _similar_pairs(titles, digits)


def _title_pairs(
    titles: dict[str, list[Page]], digits: Callable[[Page], tuple[str, ...] | None]
) -> Iterator[tuple[str, Page, Page, str]]:
    """``duplicate-title`` pairs: pages sharing a title slug (``titles``: slug -> pages)."""
    for slug, same in titles.items():
        if len(same) > 1:  # two pages whose titles repeat their file names are told apart
            members: list[_Member] = [
                (0, p, ("leaf", p.path) if slug and leaf_titled(p.id, slug) else None, digits(p))
                for p in same
            ]
            for a, b in _linked(members, differ=False):
                yield "duplicate-title", a, b, _title(a)


def _alias_pairs(
    pages: list[Page], digits: Callable[[Page], tuple[str, ...] | None]
) -> Iterator[tuple[str, Page, Page, str]]:
    """``alias-collision`` pairs: an alias two pages claim, or one that is another page's
    name (its file name or title)."""
    names: dict[str, dict[str, Page]] = {}
    for page in pages:
        for alias in page.scan.alias_slugs:
            names.setdefault(alias, {})[page.path] = page
    holders: dict[str, list[Page]] = {}
    for page in pages:
        for name in {slugify(page.stem), page.scan.title_slug} - {""}:
            if name in names and page.path not in names[name]:
                holders.setdefault(name, []).append(page)
    for alias, claimed in names.items():
        claimers: list[_Member] = [(0, p, None, digits(p)) for p in claimed.values()]
        for a, b in _linked(claimers, differ=False):  # an alias two pages claim
            yield "alias-collision", a, b, alias
        held: list[_Member] = [(1, p, None, digits(p)) for p in holders.get(alias, ())]
        for a, b in _linked(claimers + held, differ=True) if held else ():
            yield "alias-collision", a, b, alias  # an alias that is another page's name


def _similar_pairs(
    titles: dict[str, list[Page]], digits: Callable[[Page], tuple[str, ...] | None]
) -> Iterator[tuple[str, Page, Page, str]]:
    """``similar-title`` pairs: titles with one concept key, or keys one typo apart, whose
    labels (numbers, letters) agree."""
    keys: dict[str, list[tuple[str, Page]]] = {}
    for slug, same in titles.items():
        if slug:
            keys.setdefault(concept_key(slug), []).extend((slug, p) for p in same)
    for a_key, b_key in sorted(_alike_keys(keys)):
        if a_key != b_key and _labels(a_key) != _labels(b_key):
            continue  # Well 2 and Well 3
        alike_pages = keys[a_key] + (keys[b_key] if b_key != a_key else [])
        if len(alike_pages) > 1:  # titles told apart by their folders when both repeat file names
            for a, b in _linked(
                [
                    (s, p, _place(p) if leaf_titled(p.id, s) else None, digits(p))
                    for s, p in alike_pages
                ],
                differ=True,
            ):
                yield "similar-title", a, b, _title(a)


def _alike_keys(keys: Iterable[str]) -> set[tuple[str, str]]:
    """Pairs (lesser first) of concept keys that are one typo apart, and each key with
    itself: found through the keys with one character deleted, so the pairs come without
    comparing every key with every other."""
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
    return alike


def _linked(members: Sequence[_Member], *, differ: bool) -> Iterator[tuple[Page, Page]]:
    """Pairs of ``members`` that may be offered together -- their places agree (or either is
    None), their numbers agree (or either is None) and, with ``differ``, their groups differ
    -- but only as many as join the same members as all such pairs would: about one pair per
    member, however many pairs there are.

    Members with one (group, place, numbers) form a class; a class's first member is paired
    with the first member of each class it agrees with, found through a few buckets (the
    classes of a group, of a group and place, of a group and numbers, or four exact classes);
    a bucket met a second time is already one group, so one pair into it is enough. Every
    other member of a class is paired with the class's first partner (or, where its group
    may pair with itself, with the member before it). Written here: a graph library's
    connected components would need every pair first, which is the quadratic part."""
    classes: dict[tuple[Hashable, Hashable, Hashable], list[Page]] = {}
    for group, page, place, numbers in members:
        classes.setdefault((group, place, numbers), []).append(page)
    if len(classes) < 2 and (differ or len(members) < 2):
        return
    buckets: dict[tuple[Hashable, ...], list[tuple[Hashable, Hashable, Hashable]]] = {}
    groups: dict[Hashable, None] = {}
    for key in classes:
        group, place, numbers = key
        groups[group] = None
        for kind in (("all", group), ("place", group, place), ("numbers", group, numbers)):
            buckets.setdefault(kind, []).append(key)
    joined: set[tuple[Hashable, ...]] = set()
    for key, pages in classes.items():
        group, place, numbers = key
        first = pages[0]
        partner: Page | None = None
        for other_group in [g for g in groups if g != group] if differ else [group]:
            for bucket in _agreeing(other_group, place, numbers):
                if bucket[0] == "one":
                    inside = [bucket[1]] if bucket[1] in classes else []
                else:
                    inside = buckets.get(bucket, [])
                for other in inside:
                    if other == key:
                        continue
                    if partner is None:
                        partner = classes[other][0]
                    yield first, classes[other][0]
                    if bucket in joined:
                        break  # one group already: one pair into it joins them all
                joined.add(bucket)
        for before, page in zip(pages, pages[1:]):
            if differ:
                if partner is not None:
                    yield page, partner
            else:
                yield before, page


def _agreeing(group: Hashable, place: Hashable, numbers: Hashable) -> list[tuple[Hashable, ...]]:
    """The buckets of `_linked` that hold the classes of ``group`` agreeing with a class of
    this ``place`` and ``numbers`` (None agrees with every other)."""
    if place is None and numbers is None:
        return [("all", group)]
    if place is None:
        return [("numbers", group, numbers), ("numbers", group, None)]
    if numbers is None:
        return [("place", group, place), ("place", group, None)]
    return [("one", (group, p, n)) for p in (place, None) for n in (numbers, None)]


def _digits(page: Page) -> tuple[str, ...] | None:
    """The numbers of a page's file name, if it holds any: two pages whose names hold
    different ones are items of a numbered or dated series (``2022.02.08`` and
    ``2022.02.22``), however alike their titles (one copied from the other and never
    changed)."""
    labels = _labels(slugify(page.stem.replace(".", "-")))
    return tuple(x for x in labels if x.isdigit()) or None


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


def suggest(wiki: Wiki, pairs: Iterable[tuple[str, Page, Page, str]] | None = None) -> list[Group]:
    """Groups of pages that look like one concept, most-linked page first in each; groups in
    the order of their strongest reason, then their kept page's path. ``pairs``: what
    `_pairs` yields for ``wiki``, when the caller has it (checks/neighbours.py)."""
    parent: dict[str, str] = {}

    def find(path: str) -> str:
        while parent.get(path, path) != path:
            parent[path] = path = parent.get(parent[path], parent[path])  # path halving
        return path

    reasons: dict[frozenset[str], str] = {}
    names: dict[frozenset[str], str] = {}
    for reason, a, b, name in _pairs(wiki) if pairs is None else pairs:
        if a.path == b.path:
            continue
        pair = frozenset((a.path, b.path))
        if pair not in reasons or REASONS.index(reason) < REASONS.index(reasons[pair]):
            reasons[pair], names[pair] = reason, name
        one, two = find(a.path), find(b.path)
        if one != two:
            parent[one] = two
    if not reasons:
        return []
    inbound = inbound_links(wiki)
    members: dict[str, list[str]] = {}
    for path in {p for pair in reasons for p in pair}:
        members.setdefault(find(path), []).append(path)
    inside: dict[str, list[frozenset[str]]] = {}
    for pair in reasons:
        inside.setdefault(find(next(iter(pair))), []).append(pair)
    groups = []
    for root, paths in members.items():
        ranked = sorted(paths, key=lambda p: (-inbound.get(p, 0), p.count("/"), len(p), p))
        why = sorted({reasons[pair] for pair in inside[root]}, key=REASONS.index)
        shown = sorted({names[pair] for pair in inside[root]})
        groups.append(Group(why, [(wiki.by_path[p], inbound.get(p, 0)) for p in ranked], shown))
    groups.sort(key=lambda g: (REASONS.index(g.reasons[0]), g.keep.path))
    return groups
