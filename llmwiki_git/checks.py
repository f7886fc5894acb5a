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

from . import problems as P
from .problems import Problem
from .wiki.model import Page, Resolution, Wiki
from .wiki.scancache import ScanCache
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


class _Checker:
    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki
        self.targets: dict[str, tuple[LinkTarget, Resolution | None]] = {}

    def _target(self, text: str) -> tuple[LinkTarget, Resolution | None]:
        known = self.targets.get(text)
        if known is None:
            target = parse_target(text)
            found = None if (target.is_self_anchor or target.is_empty) else self.wiki.resolve(target)
            known = self.targets[text] = (target, found)
        return known

    def _anchor(self, page: Page, target: LinkTarget, here: Page, line: int, col: int, text: str) -> Problem | None:
        anchor = (target.anchor or "").split("#")[-1].strip()
        if not anchor:
            return None
        anchors = page.scan.anchors
        if anchor.startswith("^"):
            if anchor[1:] in anchors.blocks:
                return None
            what = f"no block ^{anchor[1:]}"
        else:
            if slugify(anchor) in anchors.headings:
                return None
            what = f'no heading "{anchor}"'
        where = "this page" if page is here else page.id
        return P.make(here.path, line, col, "broken-anchor", f"broken anchor {text}: {what} in {where}", target.key)

    def page_problems(self, page: Page) -> list[Problem]:
        out = [P.make(page.path, issue.line, 1, issue.code, issue.message) for issue in page.scan.issues]
        for line, col, inner, target_text, _label, embed in page.scan.raw_links:
            target, found = self._target(target_text)
            if target.is_self_anchor:
                bad = self._anchor(page, target, page, line, col, _source_text(inner, embed))
                if bad:
                    out.append(bad)
                continue
            if found is None:
                out.append(P.make(page.path, line, col, "empty-link",
                                  f"empty link {_source_text(inner, embed)}: it names no page", ""))
                continue
            if not found.resolved:
                out.append(P.make(page.path, line, col, "broken-link", f"broken link {_source_text(inner, embed)}", target.key))
                continue
            if found.alternatives:
                others = ", ".join(found.alternatives)
                fix = f"use a path like [[{found.ref}]]" if "/" in (found.ref or "") else "rename one of the pages"
                out.append(P.make(page.path, line, col, "ambiguous-link",
                                  f"ambiguous link {_source_text(inner, embed)}: resolved to {found.ref}, also matches {others}; {fix}",
                                  target.key))
            if found.page is not None and target.anchor:
                bad = self._anchor(found.page, target, page, line, col, _source_text(inner, embed))
                if bad:
                    out.append(bad)
        return out


def _to_record(problems: list[Problem]) -> tuple:
    return tuple((p.line, p.col, p.code, p.target, p.message) for p in problems)


def _from_record(path: str, record: tuple) -> list[Problem]:
    return [Problem(path, line, col, code, P.CODES[code], target, message) for line, col, code, target, message in record]


def check_wiki(wiki: Wiki, cache: ScanCache | None = None, max_page_bytes: int = 0) -> CheckResult:
    """All problems of ``wiki``: unreadable files, then each page's link problems."""
    found = [P.make(path, issue.line, 1, issue.code, issue.message) for path, issue in wiki.source_issues]
    checker = _Checker(wiki)
    fingerprint = names_fingerprint(wiki, max_page_bytes) if cache is not None else ""
    for page in wiki.pages:
        key = f"{page.path}\0{page.blob}\0{fingerprint}" if (cache is not None and page.blob) else None
        record = cache.problems_get(key) if key is not None else None  # type: ignore[union-attr]
        if record is not None:
            found.extend(_from_record(page.path, record))
            continue
        problems = checker.page_problems(page)
        if key is not None:
            cache.problems_put(key, _to_record(problems))  # type: ignore[union-attr]
        found.extend(problems)
    found.sort(key=lambda p: (p.path, p.line, p.col, p.code))
    return CheckResult(len(wiki.pages), found)


def result_to_record(result: CheckResult) -> tuple:
    return (result.checked, tuple((p.path, p.line, p.col, p.code, p.target, p.message) for p in result.problems))


def result_from_record(record: tuple) -> CheckResult:
    checked, rows = record
    return CheckResult(checked, [Problem(path, line, col, code, P.CODES[code], target, message)
                                 for path, line, col, code, target, message in rows])


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
