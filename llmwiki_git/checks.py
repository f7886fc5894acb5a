"""The link check: every wikilink of every page resolved, problems returned as data."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from . import problems as P
from .problems import Problem
from .wiki.model import Page, Wiki
from .wiki.scanner import Occurrence
from .wiki.slug import LinkTarget, parse_target, slugify


@dataclass(frozen=True)
class CheckResult:
    checked: int
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == P.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == P.WARNING]


def _anchor_problem(wiki: Wiki, page: Page, target: LinkTarget, occ: Occurrence, here: Page) -> Problem | None:
    anchor = (target.anchor or "").split("#")[-1].strip()
    if not anchor:
        return None
    anchors = wiki.anchors(page)
    if anchor.startswith("^"):
        if anchor[1:] in anchors.blocks:
            return None
        what = f"no block ^{anchor[1:]}"
    else:
        if slugify(anchor) in anchors.headings:
            return None
        what = f'no heading "{anchor}"'
    where = "this page" if page is here else page.id
    return P.make(here.path, occ.line, occ.col, "broken-anchor", f"broken anchor {occ.source_text}: {what} in {where}", target.key)


def _link_problems(wiki: Wiki, page: Page, targets: dict[str, LinkTarget]) -> Iterable[Problem]:
    for occ in page.scan.links:
        target = targets.get(occ.target)
        if target is None:
            target = targets[occ.target] = parse_target(occ.target)
        if target.is_self_anchor:
            bad = _anchor_problem(wiki, page, target, occ, page)
            if bad:
                yield bad
            continue
        if target.is_empty:
            yield P.make(page.path, occ.line, occ.col, "empty-link", f"empty link {occ.source_text}: it names no page", "")
            continue
        found = wiki.resolve(target)
        if not found.resolved:
            yield P.make(page.path, occ.line, occ.col, "broken-link", f"broken link {occ.source_text}", target.key)
            continue
        if found.alternatives:
            others = ", ".join(found.alternatives)
            fix = f"use a path like [[{found.ref}]]" if "/" in (found.ref or "") else "rename one of the pages"
            yield P.make(
                page.path, occ.line, occ.col, "ambiguous-link",
                f"ambiguous link {occ.source_text}: resolved to {found.ref}, also matches {others}; {fix}",
                target.key,
            )
        if found.page is not None and target.anchor:
            bad = _anchor_problem(wiki, found.page, target, occ, page)
            if bad:
                yield bad


def check_wiki(wiki: Wiki) -> CheckResult:
    """All problems of ``wiki``: file issues found while reading, then link problems."""
    found = [P.make(path, issue.line, 1, issue.code, issue.message) for path, issue in wiki.issues]
    targets: dict[str, LinkTarget] = {}
    for page in wiki.pages:
        found.extend(_link_problems(wiki, page, targets))
    found.sort(key=lambda p: (p.path, p.line, p.col, p.code))
    return CheckResult(len(wiki.pages), found)


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
