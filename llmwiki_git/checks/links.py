"""Link classification, the one copy: what a link's target text means in one wiki (an
`Outcome`), and the problems a page's links and names have given those outcomes.

Three kinds of target text share one table of outcomes:

* a wikilink's target as written (``alpha#Intro``);
* a local markdown link, keyed ``MD + <repository path it names>[#anchor]`` (`md_key`): its
  meaning depends on the page it stands in only through that path;
* nothing else: a page's names (title, aliases) are checked against `Claims`, the names
  every page claims.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Literal, Protocol
from urllib.parse import unquote

from ..controls import name_problem
from ..problems import Problem
from ..problems import make as make_problem
from ..wiki.destinations import destination
from ..wiki.model import Page, Wiki
from ..wiki.pages import PageScan
from ..wiki.scanner import MdLink
from ..wiki.slug import LinkTarget, parse_target, slugify

# What a link's target text means in one wiki, independent of where the link stands: one of
# these records, told apart by their first field (mypy narrows `Outcome` on it). Plain
# tuples, not NamedTuples: the facts file and the check's workers carry them with `marshal`,
# which takes exact tuples only, and most of them are the one shared `PLAIN_OK`.
SelfOutcome = tuple[Literal["self"]]  # an anchor of the page the link stands in
EmptyOutcome = tuple[Literal["empty"]]  # ``[[]]``: names no page
BrokenOutcome = tuple[Literal["broken"], str]  # ("broken", target key): resolves to no page
# ("ok", target key or path, ref, alternatives, page id, anchor problem or None): resolves
OkOutcome = tuple[Literal["ok"], str, str | None, tuple[str, ...], str | None, str | None]
NoFileOutcome = tuple[Literal["nofile"], str]  # a markdown link to a path that does not exist
Outcome = SelfOutcome | EmptyOutcome | BrokenOutcome | OkOutcome | NoFileOutcome
# A link that resolves cleanly reports nothing, whatever it resolves to: those outcomes (most
# of them) are this one tuple, which the facts file writes and loads once.
PLAIN_OK: OkOutcome = ("ok", "", None, (), None, None)
MD = "\x03"  # prefix of a markdown link's key: MD + repository path [+ "#" + anchor]
TITLE = "\x04"  # prefix of a title among the names pages claim (`Claims`)
# A destination whose last component names a file (``page.md``, ``diagram.png``): checked.
# Folders and extensionless site URLs (``../guide/``) name no file of the repository.
_FILE_NAME = re.compile(r"[^/]\.[A-Za-z0-9]{1,8}$")
_DUPLICATE_SUFFIX = re.compile(r"(.+)-[0-9]{1,3}$")  # GitHub's `#intro-1` for a second "Intro"


def _source_text(inner: str, embed: bool) -> str:
    return f"{'!' if embed else ''}[[{inner}]]"


def md_key(page_path: str, url: str) -> str | None:
    """The outcome key of the markdown link ``url`` in the page at ``page_path``, or None
    when it names no file (a folder, a site URL): ``MD + path[#anchor]``, the path from the
    repository root (`wiki.destinations.destination`; ``MD + "#anchor"`` for a heading of the
    same page, ``MD + "../…"`` for a path leaving the repository)."""
    if not _FILE_NAME.search(url.partition("#")[0].split("?", 1)[0]) and url[:1] != "#":
        return None
    path, anchor = destination(page_path, url)
    if not path and not anchor:
        return None
    return f"{MD}{path}#{anchor}" if anchor else f"{MD}{path}"


_KEYS: dict[tuple[str, str], str | None] = {}  # (folder, destination) -> md_key, memoized


def md_keys(page: Page) -> Iterator[tuple[MdLink, str]]:
    """(markdown link, its key) for each checked markdown link of ``page``."""
    folder = page.path.rsplit("/", 1)[0] if "/" in page.path else ""
    for link in page.scan.md_links:
        _line, _col, _url_col, url = link
        if url[:1] == "#":
            yield link, f"{MD}{unquote(url) if '%' in url else url}"
            continue
        known = _KEYS.get((folder, url), MD)
        if known == MD:
            if len(_KEYS) > 65536:
                _KEYS.clear()
            known = _KEYS[(folder, url)] = md_key(page.path, url)
        if known is not None:
            yield link, known


def link_keys(page: Page) -> list[str]:
    """Every outcome key ``page`` uses: its wikilink targets, then its markdown links'."""
    keys = [target for _line, _col, _inner, target, _label, _embed in page.scan.raw_links]
    if page.scan.md_links:
        keys.extend(key for _, key in md_keys(page))
    return keys


def split_md_key(key: str) -> tuple[str, str | None]:
    """(path, anchor or None) of a markdown link's key."""
    path, sep, anchor = key[1:].partition("#")
    return path, (anchor if sep else None)


def anchor_problem(
    headings: tuple[str, ...] | frozenset[str],
    blocks: tuple[str, ...] | frozenset[str],
    anchor: str,
    markdown: bool = False,
) -> str | None:
    """Why ``anchor`` (a heading's text or slug, or ``^id``) names nothing on a page with
    those heading slugs and block ids (None when it does). Headings compare slugified, as
    Obsidian and the reference tool match them; a markdown link's ``#intro-1`` (GitHub's name
    for the second "Intro") counts too."""
    anchor = anchor.split("#")[-1].strip()
    if not anchor:
        return None
    if anchor.startswith("^"):
        return None if anchor[1:] in blocks else f"no block ^{anchor[1:]}"
    slug = slugify(anchor)
    if slug in headings:
        return None
    if markdown:
        twin = _DUPLICATE_SUFFIX.fullmatch(slug)
        if twin and twin.group(1) in headings:
            return None
    return f'no heading "{anchor}"'


def _anchor_what(scan: PageScan, target: LinkTarget) -> str | None:
    """Why ``target``'s anchor is missing from the page scanned as ``scan`` (None if present)."""
    return anchor_problem(scan.headings, scan.blocks, target.anchor or "")


def anchor_code(what: str) -> str:
    return "missing-block" if what.startswith("no block") else "missing-heading"


class Claims(Protocol):
    """The names pages claim: for a slug, who claims it by file name ("stem") or by an alias
    links resolve ("alias": a concept or query page's); for ``TITLE + slug``, whose title it
    is ("title")."""

    def claimants(self, name: str) -> list[tuple[str, str]]: ...  # (page id, how)


class WikiClaims:
    """`Claims` of a loaded wiki (the whole-wiki check). ``flagged``: the pages claiming a
    name another page claims too; any other page has no name problem (most pages)."""

    def __init__(self, wiki: Wiki) -> None:
        self.stems = wiki.stem_slugs()
        titles: dict[str, list[str]] = {}
        aliases: dict[str, list[str]] = {}
        flavour = wiki.flavour
        for page in wiki.pages:
            scan = page.scan
            if scan.title_slug and not (flavour.templates and flavour.is_template(page.id)):
                titles.setdefault(scan.title_slug, []).append(page.id)
            if (
                scan.alias_slugs and page.kind != "page"
            ):  # only concept and query aliases resolve links
                for alias in scan.alias_slugs:
                    aliases.setdefault(alias, []).append(page.id)
        self.titles, self.aliases = titles, aliases
        stems = self.stems
        flagged = {page_id for ids in titles.values() if len(ids) > 1 for page_id in ids}
        for alias, ids in aliases.items():
            others = stems.get(alias)
            if len(ids) > 1 or (others and (len(others) > 1 or others[0].id != ids[0])):
                flagged.update(ids)
        self.flagged: set[str] | None = flagged

    def claimants(self, name: str) -> list[tuple[str, str]]:
        if name[:1] == TITLE:
            return [(page_id, "title") for page_id in self.titles.get(name[1:], ())]
        found = [(page.id, "stem") for page in self.stems.get(name, ())]
        return found + [(page_id, "alias") for page_id in self.aliases.get(name, ())]


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:3])
    return shown + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")


def leaf_titled(page_id: str, title: str) -> bool:
    """Whether the title slug ``title`` only repeats the page's file name (or the last part of
    a dotted one: Dendron's ``dendron.ref.commands`` titled "Commands"): the path tells such
    pages apart, so they are no duplicates of each other."""
    stem = page_id.rsplit("/", 1)[-1]
    return title == slugify(stem) or title == slugify(stem.rsplit(".", 1)[-1])


def name_problems(page: Page, claims: Claims) -> list[Problem]:
    """``duplicate-title`` and ``alias-collision`` of ``page``: a title another page has too
    (unless both titles only repeat their file names), an alias another page answers to (by
    its file name or an alias of its own)."""
    scan = page.scan
    out = []
    title_line, aliases_line = scan.meta_lines if len(scan.meta_lines) == 2 else (0, 0)
    if scan.title:
        title = scan.title_slug
        mine = leaf_titled(page.id, title)
        others = (
            sorted(
                {
                    pid
                    for pid, _ in claims.claimants(TITLE + title)
                    if pid != page.id and not (mine and leaf_titled(pid, title))
                }
            )
            if title
            else []
        )
        if others:
            out.append(
                make_problem(
                    page.path,
                    title_line or 1,
                    1,
                    "duplicate-title",
                    f'duplicate title "{scan.title}": {_listed(others)} '
                    f"{'has' if len(others) == 1 else 'have'} it too; merge the pages "
                    "(`llmwiki merge-pages` keeps links whole) or give each its own title",
                    title,
                )
            )
    for alias, raw in zip(scan.alias_slugs if page.kind != "page" else (), _alias_texts(scan)):
        hits = sorted({(pid, how) for pid, how in claims.claimants(alias) if pid != page.id})
        if hits:
            what = "; ".join(
                f"{pid} ({'its file name' if how == 'stem' else 'an alias'})"
                for pid, how in hits[:3]
            )
            out.append(
                make_problem(
                    page.path,
                    aliases_line or 1,
                    1,
                    "alias-collision",
                    f'alias collision: "{raw}" also names {what}; a link [[{raw}]] reaches only '
                    "one of them: drop the alias from one page or merge them (`llmwiki merge-pages`)",
                    alias,
                )
            )
    return out


def _alias_texts(scan: PageScan) -> list[str]:
    """The alias as written for each of ``scan.alias_slugs`` (same order)."""
    by_slug: dict[str, str] = {}
    for alias in scan.aliases:
        by_slug.setdefault(slugify(alias), alias)
    return [by_slug.get(slug, slug) for slug in scan.alias_slugs]


class Checker:
    """Resolves each distinct target text once and renders a page's problems from that."""

    def __init__(
        self,
        wiki: Wiki | None,
        outcomes: dict[str, Outcome] | None = None,
        claims: Claims | None = None,
    ) -> None:
        self.wiki = wiki
        self.outcomes: dict[str, Outcome] = outcomes if outcomes is not None else {}
        self.claims = claims
        self._files: set[str] | None = None

    def prepare(self) -> None:
        """Build what checking pages needs (before forking workers that check them)."""
        if self.wiki is not None:
            self.wiki.build_tables()
            if self.claims is None:
                self.claims = WikiClaims(self.wiki)

    def outcome(self, text: str) -> Outcome | None:
        known = self.outcomes.get(text)
        if known is None:
            if self.wiki is None:
                return None
            if text[:1] == MD:
                known = self._md_outcome(self.wiki, text)
            else:
                known = self._outcome(self.wiki, text)
            self.outcomes[text] = known
        return known

    @staticmethod
    def _outcome(wiki: Wiki, text: str) -> Outcome:
        target = parse_target(
            wiki.flavour.link_text(text) if wiki.flavour.dendron_targets else text
        )
        if target.is_self_anchor:
            return ("self",)
        if target.is_empty:
            return PLAIN_OK if (wiki.flavour.empty_is_text and not text.strip()) else ("empty",)
        found = wiki.resolve(target)
        if not found.resolved:
            return ("broken", target.key)
        what = (
            _anchor_what(found.page.scan, target)
            if (found.page is not None and target.anchor)
            else None
        )
        if what or found.alternatives:
            return (
                "ok",
                target.key,
                found.ref,
                tuple(found.alternatives),
                found.page.id if found.page is not None else None,
                what,
            )
        return PLAIN_OK

    def _md_outcome(self, wiki: Wiki, key: str) -> Outcome:
        path, anchor = split_md_key(key)
        if not path:
            return ("self",)
        page = wiki.by_path.get(path)
        if page is not None:
            what = (
                anchor_problem(page.scan.headings, page.scan.blocks, anchor, markdown=True)
                if anchor
                else None
            )
            return ("ok", path, page.id, (), page.id, what) if what else PLAIN_OK
        if self._files is None:
            self._files = set(wiki.other_files)
        if path in self._files:
            return PLAIN_OK
        if wiki.flavour.md_links_by_name and not path.startswith("../"):
            return self._by_name(wiki, path, anchor)
        return ("nofile", path)

    @staticmethod
    def _by_name(wiki: Wiki, path: str, anchor: str | None) -> Outcome:
        """A markdown link whose relative path names no file, in a flavour that looks its
        file name up anywhere in the wiki, as it looks up a wikilink's (Obsidian)."""
        found = wiki.resolve(parse_target(path.rsplit("/", 1)[-1]))
        if found.page is not None:
            scan = found.page.scan
            what = (
                anchor_problem(scan.headings, scan.blocks, anchor, markdown=True)
                if anchor
                else None
            )
            return ("ok", path, found.page.id, (), found.page.id, what) if what else PLAIN_OK
        return PLAIN_OK if found.file is not None else ("nofile", path)

    def page_problems(
        self, page: Page, fallback: Callable[[str], Outcome | None] | None = None
    ) -> list[Problem] | None:
        """The problems of ``page``; None when a target's outcome is unknown (fast path only)."""
        out = [
            make_problem(page.path, issue.line, 1, issue.code, issue.message)
            for issue in page.scan.issues
        ]
        bad_name = name_problem(page.path)  # the one name rule (controls.py), as approval has it
        if bad_name is not None:
            out.append(make_problem(page.path, 1, 1, "control-character-name", bad_name))
        if not self._wikilink_problems(page, out, fallback):
            return None
        if page.scan.md_links and not self._md_problems(page, out, fallback):
            return None
        if page.scan.title or page.scan.alias_slugs:
            return self._with_name_problems(page, out)
        return out

    def _wikilink_problems(
        self, page: Page, out: list[Problem], fallback: Callable[[str], Outcome | None] | None
    ) -> bool:
        """Add the problems of ``page``'s wikilinks to ``out``; False when an outcome is
        unknown."""
        outcomes = self.outcomes
        for line, col, inner, target_text, _label, embed in page.scan.raw_links:
            known = outcomes.get(target_text) or self.outcome(target_text)
            if known is PLAIN_OK:
                continue  # most links: resolved, nothing to report
            if known is None and fallback is not None:
                known = fallback(target_text)
            if known is None:
                return False
            source = _source_text(inner, embed)
            _wikilink_problem(page, line, col, source, target_text, known, out)
        return True

    def _md_problems(
        self, page: Page, out: list[Problem], fallback: Callable[[str], Outcome | None] | None
    ) -> bool:
        """Add the problems of ``page``'s markdown links to ``out``; False when an outcome
        is unknown."""
        for (line, col, _url_col, url), key in md_keys(page):
            known = self.outcomes.get(key) or self.outcome(key)
            if known is PLAIN_OK:
                continue
            if known is None and fallback is not None:
                known = fallback(key)
            if known is None:
                return False
            _md_problem(page, line, col, f"[…]({url})", key, known, out)
        return True

    def _with_name_problems(self, page: Page, out: list[Problem]) -> list[Problem] | None:
        """``out`` and the name problems of ``page`` (None without any `Claims`)."""
        claims = self.claims
        if claims is None and self.wiki is not None:
            claims = self.claims = WikiClaims(self.wiki)
        if claims is None:
            return None
        flagged = getattr(claims, "flagged", None)
        if flagged is None or page.id in flagged:
            out.extend(name_problems(page, claims))
        return out


def _missing_anchor(
    page: Page, line: int, col: int, source: str, what: str, page_id: str | None, key: str
) -> Problem:
    """A ``missing-heading`` or ``missing-block`` problem: the link ``source`` names an
    anchor (``what`` says which) that page ``page_id`` lacks."""
    code = anchor_code(what)
    where = "this page" if page_id == page.id else page_id
    message = f"{code.replace('-', ' ')} {source}: {what} in {where}"
    return make_problem(page.path, line, col, code, message, key)


def _wikilink_problem(
    page: Page,
    line: int,
    col: int,
    source: str,
    target_text: str,
    known: Outcome,
    out: list[Problem],
) -> None:
    """Add the problems of one wikilink (``source`` as written) whose target has the outcome
    ``known`` to ``out``."""
    if known[0] == "self":
        target = parse_target(target_text)
        what = _anchor_what(page.scan, target)
        if what:
            out.append(_missing_anchor(page, line, col, source, what, page.id, target.key))
    elif known[0] == "empty":
        message = f"empty link {source}: it names no page"
        out.append(make_problem(page.path, line, col, "empty-link", message, ""))
    elif known[0] == "broken":
        _, broken_key = known
        message = f"broken link {source}"
        out.append(make_problem(page.path, line, col, "broken-link", message, broken_key))
    elif known[0] == "ok":  # "nofile" is a markdown link's only
        _, key, ref, alternatives, page_id, what = known
        if alternatives:
            fix = (
                f"use a path like [[{ref}]]"
                if "/" in (ref or "")
                else f"use [[/{ref}]] (its path from the wiki root)"
            )
            message = (
                f"ambiguous link {source}: resolved to {ref}, also matches "
                f"{', '.join(alternatives)}; {fix}"
            )
            out.append(make_problem(page.path, line, col, "ambiguous-link", message, key))
        if what:
            out.append(_missing_anchor(page, line, col, source, what, page_id, key))


def _md_problem(
    page: Page, line: int, col: int, source: str, key: str, known: Outcome, out: list[Problem]
) -> None:
    """Add the problems of one markdown link (``source``, keyed ``key``) whose target has
    the outcome ``known`` to ``out``."""
    if known[0] == "self":
        _, anchor = split_md_key(key)
        scan = page.scan
        what = anchor_problem(scan.headings, scan.blocks, anchor or "", markdown=True)
        if what:  # keyed "" as a wikilink's [[#anchor]]
            out.append(_missing_anchor(page, line, col, source, what, page.id, ""))
    elif known[0] == "nofile":
        _, path = known
        why = "it leaves the repository" if path.startswith("..") else f"no file {path}"
        message = f"broken relative link {source}: {why}"
        out.append(make_problem(page.path, line, col, "broken-relative-link", message, path))
    elif known[0] == "ok":  # "empty" and "broken" are a wikilink's only
        _, path, _ref, _alternatives, page_id, what = known
        if what:
            out.append(_missing_anchor(page, line, col, source, what, page_id, path))


def names_of_key(key: str) -> tuple[str, str] | None:
    """What a markdown link key's outcome depends on (None: its own page only): the slug of
    the page stem it names ("" when it names no page) and its file name, lowercased (an
    attachment, or a markdown file outside the wiki root)."""
    path, _ = split_md_key(key)
    if not path:
        return None
    name = path.rsplit("/", 1)[-1]
    return (slugify(name[:-3]) if name.lower().endswith(".md") else "", name.lower())
