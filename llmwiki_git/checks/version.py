"""The checker's cache version, derived from what the caches hold, never bumped by hand.

A cached scan, page problem, tree result or facts record is only valid for the code that
produced it. Instead of a number someone must remember to bump, the version is a digest of:

* the problem codes and their severities (`problems.CODES`);
* the source of every module whose output the caches store: the scanner's rules and
  regexes, page reading and frontmatter, slugs and link targets, resolution, link
  classification and its messages, the delta's facts, the cache and result record layouts;
* the fields of a cached page scan.

Change any of them and every cache file written before is ignored (and rewritten), never
misread. tests/checks/test_check_cache_version.py proves each input moves the version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent

# Modules (relative to the package) whose behaviour or layout the caches record.
RULE_MODULES = (
    "problems.py",
    "controls.py",  # the name rule (control-character-name)
    "wiki/scanner.py",
    "wiki/pages.py",
    "wiki/titles.py",
    "wiki/frontmatter.py",
    "wiki/slug.py",
    "wiki/model.py",
    "wiki/includes.py",  # the headings a Hugo page includes
    "wiki/provenance.py",  # which folder holds sources (never pages)
    "wiki/destinations.py",
    "checks/links.py",
    "checks/orphans.py",
    "checks/result.py",
    "checks/delta.py",
    "checks/extras.py",
    "checks/cache.py",
    "checks/parts.py",
    "checks/stale.py",
)


def rule_sources(
    package: Path = _PACKAGE, modules: Iterable[str] = RULE_MODULES
) -> list[tuple[str, bytes]]:
    """(module, source bytes) of each rule module (a missing file hashes as its name)."""
    out = []
    for name in modules:
        try:
            out.append((name, (package / name).read_bytes()))
        except OSError:
            out.append((name, b"missing"))
    return out


def cache_version(
    codes: Mapping[str, object], sources: Iterable[tuple[str, bytes]], layout: Iterable[str]
) -> str:
    """A short digest of ``codes`` (code -> severity), ``sources`` and the record
    ``layout`` (field names)."""
    digest = hashlib.sha1()
    for code in sorted(codes):
        digest.update(f"code\0{code}\0{codes[code]}\0".encode())
    for name, source in sources:
        digest.update(f"module\0{name}\0".encode() + hashlib.sha1(source).digest())
    digest.update("\0".join(("layout", *layout)).encode())
    return digest.hexdigest()[:16]


def current_version() -> str:
    from .. import problems
    from ..wiki.pages import PageScan

    return cache_version(problems.CODES, rule_sources(), PageScan._fields)


CACHE_VERSION = current_version()
