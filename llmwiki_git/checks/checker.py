"""The whole-wiki check: every wikilink of every page resolved, problems returned as data.

Speed (docs/benchmarks.md): a page's problems depend only on its own bytes and on the
names the wiki offers (paths, aliases, headings, block ids, attachment names). Those
names are summarized in one fingerprint; with a `ScanCache`, a page whose blob and the
fingerprint are unchanged reuses its problems from the last run, so a commit that edits one
page re-checks one page.
"""

from __future__ import annotations

import hashlib
import os

from ..problems import make as make_problem
from ..wiki.model import Page, Wiki
from ..wiki.parallel import in_shares
from .cache import ScanCache
from .links import PLAIN_OK, Checker, Outcome, link_keys
from .result import (
    CheckResult,
    ProblemsRecord,
    problems_from_record,
    problems_to_record,
    sort_problems,
)


def fingerprint_of(
    root_dir: str, names_by_path: dict[str, str], other_files: list[str], max_page_bytes: int
) -> str:
    """A digest of everything a link elsewhere can resolve against: each page's path and
    names (`PageScan.names_key`), every other file, the wiki root and the page limit."""
    # Plain string joins: marshal's bytes depend on string interning, so equal values can
    # serialize differently (that once made every run miss the cache).
    parts = [root_dir, str(max_page_bytes)]
    parts.extend(f"{path}\x01{names_by_path[path]}" for path in sorted(names_by_path))
    parts.extend(sorted(other_files))
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def names_fingerprint(wiki: Wiki, max_page_bytes: int = 0) -> str:
    found = fingerprint_of(
        wiki.root_dir,
        {page.path: page.scan.names_key for page in wiki.pages},
        wiki.other_files,
        max_page_bytes,
    )
    if wiki.flavour.plain:
        return found
    # A flavour's rules change problems (markdown links by name, templates): its own key.
    return found + hashlib.sha1(repr(wiki.flavour).encode()).hexdigest()[:8]


def check_wiki(wiki: Wiki, cache: ScanCache | None = None, max_page_bytes: int = 0) -> CheckResult:
    """All problems of ``wiki``: unreadable files, then each page's link problems."""
    return check_wiki_with(wiki, Checker(wiki), cache, max_page_bytes)


def check_wiki_with(
    wiki: Wiki,
    checker: Checker,
    cache: ScanCache | None,
    max_page_bytes: int,
    fingerprint: str | None = None,
) -> CheckResult:
    """`check_wiki` with a given `Checker`; ``fingerprint``: `names_fingerprint` of ``wiki``
    when the caller has it already."""
    found = [
        make_problem(path, issue.line, 1, issue.code, issue.message)
        for path, issue in wiki.source_issues
    ]
    if fingerprint is None:
        fingerprint = names_fingerprint(wiki, max_page_bytes) if cache is not None else ""
    todo: list[Page] = []
    for page in wiki.pages:
        key = (
            f"{page.path}\0{page.blob}\0{fingerprint}"
            if (cache is not None and page.blob)
            else None
        )
        record = cache.problems_get(key) if key is not None else None  # type: ignore[union-attr]
        if record is not None:
            found.extend(problems_from_record(page.path, record))
        else:
            todo.append(page)
    for page, record in zip(todo, problem_records(wiki, checker, todo)):
        if cache is not None and page.blob:
            cache.problems_put(f"{page.path}\0{page.blob}\0{fingerprint}", record)
        found.extend(problems_from_record(page.path, record))
    return CheckResult(len(wiki.pages), sort_problems(found))


def problem_records(wiki: Wiki, checker: Checker, pages: list[Page]) -> list[ProblemsRecord]:
    """Each page's problems as a cache record, on every core for many pages: the workers
    are forked once the wiki's lookup tables exist, and send back their records and the
    outcomes of their pages' targets (the engine's facts use every outcome)."""
    if not pages:
        return []  # all cached: a warm check never builds the lookup tables
    checker.prepare()  # lookup tables and the names pages claim, built once before any fork
    parent = os.getpid()
    shares = in_shares(lambda share: _share_records(checker, share, parent), pages)
    records: list[ProblemsRecord] = []
    outcomes = checker.outcomes
    start = 0
    for share_records, share_outcomes in shares:
        share = pages[start : start + len(share_records)]
        start += len(share_records)
        records.extend(share_records)
        if share_outcomes:  # a worker's: keyed here by this process's own strings (marshal
            # then writes each once), clean ones as the one shared tuple
            for text, outcome in zip(_targets(share), share_outcomes):
                if text not in outcomes:
                    outcomes[text] = PLAIN_OK if outcome == PLAIN_OK else outcome
    return records


def _targets(pages: list[Page]) -> list[str]:
    """The distinct link target texts (and markdown link keys) of ``pages``, in order of first use."""
    return list(dict.fromkeys(key for page in pages for key in link_keys(page)))


def _share_records(
    checker: Checker, pages: list[Page], parent: int
) -> tuple[list[ProblemsRecord], list[Outcome]]:
    records = [problems_to_record(checker.page_problems(page) or []) for page in pages]
    if os.getpid() == parent:
        return records, []  # this process's outcomes are already in ``checker``
    return records, [checker.outcomes[text] for text in _targets(pages)]
