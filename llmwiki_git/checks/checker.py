"""The whole-wiki check: every wikilink of every page resolved, problems returned as data.

Speed (docs/benchmarks.md): a page's problems depend only on its own bytes and on the
names the wiki offers (paths, aliases, headings, block ids, attachment names). Those
names are summarized in one fingerprint; with a `ScanCache`, a page whose blob and the
fingerprint are unchanged reuses its problems from the last run, so a commit that edits one
page re-checks one page.
"""

from __future__ import annotations

import hashlib

from ..problems import make as make_problem
from ..wiki.model import Wiki
from .cache import ScanCache
from .links import Checker
from .result import CheckResult, problems_from_record, problems_to_record, sort_problems


def fingerprint_of(root_dir: str, names_by_path: dict[str, str], other_files: list[str], max_page_bytes: int) -> str:
    """A digest of everything a link elsewhere can resolve against: each page's path and
    names (`PageScan.names_key`), every other file, the wiki root and the page limit."""
    # Plain string joins: marshal's bytes depend on string interning, so equal values can
    # serialize differently (that once made every run miss the cache).
    parts = [root_dir, str(max_page_bytes)]
    parts.extend(f"{path}\x01{names_by_path[path]}" for path in sorted(names_by_path))
    parts.extend(sorted(other_files))
    return hashlib.sha1("\x00".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def names_fingerprint(wiki: Wiki, max_page_bytes: int = 0) -> str:
    return fingerprint_of(wiki.root_dir, {page.path: page.scan.names_key for page in wiki.pages},
                          wiki.other_files, max_page_bytes)


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
            found.extend(problems_from_record(page.path, record))
            continue
        problems = checker.page_problems(page) or []
        if key is not None:
            cache.problems_put(key, problems_to_record(problems))  # type: ignore[union-attr]
        found.extend(problems)
    return CheckResult(len(wiki.pages), sort_problems(found))
