"""The link check: every wikilink of every page resolved, problems returned as data.

Speed (docs/benchmarks.md): a page's problems depend only on its own bytes and on the
names the wiki offers (paths, aliases, headings, block ids, attachment names). Those
names are summarized in one fingerprint; with a `ScanCache`, a page whose blob and the
fingerprint are unchanged reuses its problems from the last run, so a commit that edits one
page re-checks one page.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .problems import CODES, ERROR, UNCHECKABLE, WARNING, make as make_problem
from .problems import Problem
from .wiki.model import Page, Wiki
from .wiki.pages import PageScan
from .wiki.scancache import ScanCache
from .wiki.slug import LinkTarget, parse_target, slugify


@dataclass(frozen=True)
class CheckResult:
    checked: int
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == WARNING]


def names_fingerprint(wiki: Wiki, max_page_bytes: int = 0) -> str:
    """A digest of everything a link elsewhere can resolve against."""
    # Plain string joins: marshal's bytes depend on string interning, so equal values can
    # serialize differently (that once made every run miss the cache).
    parts = [wiki.root_dir, str(max_page_bytes)]
    parts.extend(f"{page.path}\x01{page.scan.names_key}" for page in wiki.pages)
    parts.extend(sorted(wiki.other_files))
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _source_text(inner: str, embed: bool) -> str:
    return f"{'!' if embed else ''}[[{inner}]]"


def _anchor_what(scan: PageScan, target: LinkTarget) -> str | None:
    """Why ``target``'s anchor is missing from the page scanned as ``scan`` (None if present)."""
    anchor = (target.anchor or "").split("#")[-1].strip()
    if not anchor:
        return None
    if anchor.startswith("^"):
        return None if anchor[1:] in scan.blocks else f"no block ^{anchor[1:]}"
    return None if slugify(anchor) in scan.headings else f'no heading "{anchor}"'


# What a link's target text means in one wiki, independent of where the link stands:
#   ("self",) | ("empty",) | ("broken", key) | ("ok", key, ref, alternatives, page_id, anchor_problem)
Outcome = tuple


class Checker:
    """Resolves each distinct target text once and renders a page's problems from that."""

    def __init__(self, wiki: Wiki | None, outcomes: dict[str, Outcome] | None = None) -> None:
        self.wiki = wiki
        self.outcomes: dict[str, Outcome] = outcomes if outcomes is not None else {}

    def outcome(self, text: str) -> Outcome | None:
        known = self.outcomes.get(text)
        if known is None:
            if self.wiki is None:
                return None
            target = parse_target(text)
            if target.is_self_anchor:
                known = ("self",)
            elif target.is_empty:
                known = ("empty",)
            else:
                found = self.wiki.resolve(target)
                if not found.resolved:
                    known = ("broken", target.key)
                else:
                    what = _anchor_what(found.page.scan, target) if (found.page is not None and target.anchor) else None
                    known = ("ok", target.key, found.ref, tuple(found.alternatives),
                             found.page.id if found.page is not None else None, what)
            self.outcomes[text] = known
        return known

    def page_problems(self, page: Page, fallback: Any = None) -> list[Problem] | None:
        """The problems of ``page``; None when a target's outcome is unknown (fast path only)."""
        out = [make_problem(page.path, issue.line, 1, issue.code, issue.message) for issue in page.scan.issues]
        for line, col, inner, target_text, _label, embed in page.scan.raw_links:
            known = self.outcome(target_text)
            if known is None and fallback is not None:
                known = fallback(target_text)
            if known is None:
                return None
            source = _source_text(inner, embed)
            kind = known[0]
            if kind == "self":
                target = parse_target(target_text)
                what = _anchor_what(page.scan, target)
                if what:
                    out.append(make_problem(page.path, line, col, "broken-anchor", f"broken anchor {source}: {what} in this page", target.key))
            elif kind == "empty":
                out.append(make_problem(page.path, line, col, "empty-link", f"empty link {source}: it names no page", ""))
            elif kind == "broken":
                out.append(make_problem(page.path, line, col, "broken-link", f"broken link {source}", known[1]))
            else:
                _, key, ref, alternatives, page_id, what = known
                if alternatives:
                    fix = f"use a path like [[{ref}]]" if "/" in (ref or "") else "rename one of the pages"
                    out.append(make_problem(page.path, line, col, "ambiguous-link",
                                      f"ambiguous link {source}: resolved to {ref}, also matches {', '.join(alternatives)}; {fix}",
                                      key))
                if what:
                    where = "this page" if page_id == page.id else page_id
                    out.append(make_problem(page.path, line, col, "broken-anchor", f"broken anchor {source}: {what} in {where}", key))
        return out


def _to_record(problems: list[Problem]) -> tuple:
    return tuple((p.line, p.col, p.code, p.target, p.message) for p in problems)


def _from_record(path: str, record: tuple) -> list[Problem]:
    return [Problem(path, line, col, code, CODES[code], target, message) for line, col, code, target, message in record]


def check_wiki(wiki: Wiki, cache: ScanCache | None = None, max_page_bytes: int = 0) -> CheckResult:
    """All problems of ``wiki``: unreadable files, then each page's link problems."""
    return check_wiki_with(wiki, Checker(wiki), cache, max_page_bytes)


def check_wiki_with(wiki: Wiki, checker: Checker, cache: ScanCache | None, max_page_bytes: int) -> CheckResult:
    found = [make_problem(path, issue.line, 1, issue.code, issue.message) for path, issue in wiki.source_issues]
    fingerprint = names_fingerprint(wiki, max_page_bytes) if cache is not None else ""
    for page in wiki.pages:
        key = f"{page.path}\0{page.blob}\0{fingerprint}" if (cache is not None and page.blob) else None
        record = cache.problems_get(key) if key is not None else None  # type: ignore[union-attr]
        if record is not None:
            found.extend(_from_record(page.path, record))
            continue
        problems = checker.page_problems(page) or []
        if key is not None:
            cache.problems_put(key, _to_record(problems))  # type: ignore[union-attr]
        found.extend(problems)
    found.sort(key=lambda p: (p.path, p.line, p.col, p.code))
    return CheckResult(len(wiki.pages), found)


def result_to_record(result: CheckResult) -> tuple:
    return (result.checked, tuple((p.path, p.line, p.col, p.code, p.target, p.message) for p in result.problems))


def result_from_record(record: tuple) -> CheckResult:
    checked, rows = record
    return CheckResult(checked, [Problem(path, line, col, code, CODES[code], target, message)
                                 for path, line, col, code, target, message in rows])


def fail_closed(head: CheckResult, result: CheckResult, changed: set[str]) -> CheckResult:
    """``result`` plus an ``unchecked-page`` error for each page of ``changed`` that ``head``
    could not fully check (NUL bytes, undecodable, oversize, unreadable): a gate that only
    warned would let links hidden in such a page through."""
    extra = [make_problem(p.path, p.line, p.col, "unchecked-page",
                    f"{p.message}: a page this change adds or modifies must be fully checkable; "
                    "fix its encoding or size, or keep it out of the wiki")
             for p in head.problems if p.code in UNCHECKABLE and p.path in changed]
    if not extra:
        return result
    merged = sorted(result.problems + extra, key=lambda p: (p.path, p.line, p.col, p.code))
    return CheckResult(result.checked, merged)


def _key(problem: Problem) -> tuple[str, str, str | None]:
    return (problem.path, problem.code, problem.target)


def new_problems(base: CheckResult, head: CheckResult) -> CheckResult:
    """The problems of ``head`` that ``base`` did not have.

    Problems are matched by (file, code, target), not by line, so edits that move a known
    broken link do not report it again; a file that gains another occurrence of an
    already-broken target reports the occurrences beyond the old count. A page renamed or
    deleted between the two breaks links in files the change never touched: those appear
    here because the (file, target) pair was fine in ``base``.
    """
    before = Counter(_key(p) for p in base.problems)
    seen: Counter[tuple[str, str, str | None]] = Counter()
    fresh: list[Problem] = []
    for problem in head.problems:
        key = _key(problem)
        seen[key] += 1
        if seen[key] > before[key]:
            fresh.append(problem)
    return CheckResult(head.checked, fresh)
