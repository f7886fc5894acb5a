"""The checker's caches, kept in ``<git-common-dir>/llmwiki/check/`` (never committed,
never in the work tree), in files loaded only when needed:

* ``scans.marshal``: page scans by blob id, page problems by (path, blob, names
  fingerprint), and the line counts of cited sources by blob id. An unchanged page is
  neither read nor scanned again.
* ``trees.marshal``: whole results per git tree, each with its names fingerprint.
* ``facts-<id>-<version>.marshal``: what deriving a tree from another needs (every page's
  names, every link target's outcome and the pages using it; see delta.py), one file
  per fingerprint, the last three kept. The pre-commit hook usually reads only these.

Every file starts with `version.CACHE_VERSION`, a digest of what the records depend on; a
file written by other code is ignored and rewritten.

Measured need: `check --staged` on a 10,000-page wiki must answer in well under a second,
while scanning every page costs ~8 s. marshal, not pickle: loading it runs no code, and
``loads(read())`` with the GC paused is ~10x faster than ``load(file)``.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import time
from pathlib import Path
from typing import Any, cast

from ..gitstore.transaction import crash_point
from ..wiki.pages import PageScan, ScanRecord
from .result import ProblemsRecord, ResultRecord
from .version import CACHE_VERSION

FOLDER = "check"  # inside <git-common-dir>/llmwiki/
SCANS, TREES = "scans.marshal", "trees.marshal"
# What earlier layouts left in <git-common-dir>/llmwiki/ (deleted on the first save).
_OLD_FILES = ("scan-cache-v1.marshal", "tree-cache-v2.marshal", "facts-cache-v1.marshal")
_MAX_TREES = 8
_MAX_FACTS = 3  # names fingerprints (a branch switch or a renamed page makes another)


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _read(path: Path | None, parts: int, version: str) -> tuple[Any, ...] | None:
    """The ``parts`` record maps of a cache file, or None when it is absent, of another
    version, corrupt -- or edited since llmwiki wrote it: a file is ``(version, digest,
    body)`` with ``body`` the marshalled maps and ``digest`` its BLAKE2b, so a record whose
    content no longer matches its key (a problem list emptied by hand) is never used: the
    whole file is discarded and rebuilt."""
    if path is None:
        return None
    enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as handle:
            outer = marshal.loads(handle.read())
        if not (
            isinstance(outer, tuple)
            and len(outer) == 3
            and outer[0] == version
            and isinstance(outer[2], bytes)
            and outer[1] == _digest(outer[2])
        ):
            return None
        payload = marshal.loads(outer[2])
    except (OSError, EOFError, ValueError, TypeError):
        return None  # absent or corrupt: start empty, it is only a cache
    finally:
        if enabled:
            gc.enable()
    if (
        isinstance(payload, tuple)
        and len(payload) == parts
        and all(isinstance(part, dict) for part in payload)
    ):
        return payload
    return None


def _write(path: Path, payload: tuple[Any, ...]) -> None:
    """Write ``payload`` = (version, *maps) in the checked form `_read` expects."""
    body = marshal.dumps(payload[1:])
    _write_raw(path, (payload[0], _digest(body), body))


def stored(path: Path) -> tuple[Any, ...]:
    """``(version, *maps)`` of a cache file as it is stored, its digest not checked: for
    tools and tests that look inside (llmwiki itself reads through `_read`)."""
    outer = marshal.loads(path.read_bytes())
    return (outer[0], *marshal.loads(outer[2]))


def store(path: Path, payload: tuple[Any, ...]) -> None:
    """Write ``(version, *maps)`` as llmwiki does (with its digest): for tools and tests."""
    _write(path, payload)


def _write_raw(path: Path, payload: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # a unique temporary name without `tempfile` (~5 ms of imports on the hook's path)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                marshal.dump(payload, handle)
            crash_point("cache")  # the crash tests kill a writer here, between write and rename
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only git dir must not fail a check


def open_cache(git_common_dir: Path) -> ScanCache:
    """The checker's cache of a repository (files are read only when first needed)."""
    return ScanCache(git_common_dir / "llmwiki" / FOLDER)


class ScanCache:
    """``folder`` holds the files (None: a cache that keeps nothing); ``version`` is the
    one they must carry to be read."""

    def __init__(self, folder: Path | None, version: str = CACHE_VERSION) -> None:
        self.folder = folder
        self.version = version
        self.path = folder / SCANS if folder is not None else None
        self.tree_path = folder / TREES if folder is not None else None
        self._facts: dict[str, tuple[Any, ...] | None] | None = None
        self._facts_new: set[str] = set()
        self._scans: (
            tuple[dict[str, ScanRecord], dict[str, ProblemsRecord | ResultRecord], dict[str, int]]
            | None
        ) = None
        self._trees: dict[str, tuple[Any, ...]] | None = None
        self._used: set[str] = set()
        self._used_problems: set[str] = set()
        self._scans_dirty = False
        self._trees_dirty = False
        self._full = False

    # -- scans and page problems ------------------------------------------------------------

    def _scan_maps(
        self,
    ) -> tuple[dict[str, ScanRecord], dict[str, ProblemsRecord | ResultRecord], dict[str, int]]:
        if self._scans is None:
            loaded = _read(self.path, 3, self.version)
            self._scans = (loaded[0], loaded[1], loaded[2]) if loaded else ({}, {}, {})
        return self._scans

    @property
    def records(self) -> dict[str, ScanRecord]:
        """Raw scan records by blob id (the hot path reads them directly)."""
        return self._scan_maps()[0]

    def touch(self, blobs: list[str]) -> None:
        """Mark the records of a whole snapshot as used (so saving keeps them); only a run
        that saw a whole snapshot may prune the others."""
        self._used.update(blobs)
        self._full = True

    def get(self, blob: str) -> PageScan | None:
        record = self.records.get(blob)
        if record is None:
            return None
        self._used.add(blob)
        try:
            return PageScan.from_record(record)
        except (TypeError, ValueError):
            return None

    def put(self, blob: str, scan: PageScan) -> None:
        self.put_record(blob, scan.to_record())

    def put_record(self, blob: str, record: ScanRecord) -> None:
        """Store a plain scan record (`PageScan.to_record`'s form, as scan workers send)."""
        self.records[blob] = record
        self._used.add(blob)
        self._scans_dirty = True

    def problems_get(self, key: str) -> ProblemsRecord | None:
        """A page's problems (key: path, blob id and names fingerprint)."""
        return cast("ProblemsRecord | None", self._problems_get(key))

    def problems_put(self, key: str, record: ProblemsRecord) -> None:
        self._problems_put(key, record)

    def result_get(self, key: str) -> ResultRecord | None:
        """A whole-wiki part of a check (orphans, sourcing), kept beside the pages' problems
        under keys of its own (``orphans\0...``): the key says which record it is."""
        return cast("ResultRecord | None", self._problems_get(key))

    def result_put(self, key: str, record: ResultRecord) -> None:
        self._problems_put(key, record)

    def _problems_get(self, key: str) -> ProblemsRecord | ResultRecord | None:
        record = self._scan_maps()[1].get(key)
        if record is not None:
            self._used_problems.add(key)
        return record

    def _problems_put(self, key: str, record: ProblemsRecord | ResultRecord) -> None:
        self._scan_maps()[1][key] = record
        self._used_problems.add(key)
        self._scans_dirty = True

    def source_lines(self) -> dict[str, int]:
        """Line counts of cited sources by blob id (checks/stale.py adds to it; saved when
        it grew, see `lines_changed`)."""
        return self._scan_maps()[2]

    def lines_changed(self) -> None:
        self._scans_dirty = True

    # -- whole trees --------------------------------------------------------------------------

    def _tree_map(self) -> dict[str, tuple[Any, ...]]:
        if self._trees is None:
            loaded = _read(self.tree_path, 1, self.version)
            self._trees = loaded[0] if loaded else {}
        return self._trees

    def trees(self) -> dict[str, tuple[Any, ...]]:
        """All cached tree results, oldest first."""
        return self._tree_map()

    def tree_get(self, key: str) -> tuple[Any, ...] | None:
        """A whole check result for one git tree (trees are immutable, so it never goes stale)."""
        return self._tree_map().get(key)

    def tree_put(self, key: str, record: tuple[Any, ...]) -> None:
        trees = self._tree_map()
        trees.pop(key, None)
        trees[key] = record
        while len(trees) > _MAX_TREES:  # keep the most recent trees
            trees.pop(next(iter(trees)))
        self._trees_dirty = True

    def _facts_file(self, fingerprint: str) -> Path | None:
        # The version is in the name too: facts another version of the code wrote under the
        # same id are never taken for present (the full check would not rewrite them).
        if self.folder is None or not fingerprint.isalnum():
            return None
        return (
            self.folder
            / f"facts-{fingerprint}-{''.join(filter(str.isalnum, self.version))}.marshal"
        )

    def facts_get(self, fingerprint: str) -> tuple[Any, ...] | None:
        """What a delta needs about a wiki state, by the name `delta.facts_id` gives it (its
        names fingerprint and the tree it was built for). One file each, so a run reads only
        the one it needs."""
        if self._facts is None:
            self._facts = {}
        if fingerprint not in self._facts:
            loaded = _read(self._facts_file(fingerprint), 1, self.version)
            self._facts[fingerprint] = loaded[0].get(fingerprint) if loaded else None
        return self._facts[fingerprint]

    def has_facts(self, fingerprint: str) -> bool:
        """Whether facts for ``fingerprint`` are stored, judged by the file's first bytes
        (its version) without loading it: a damaged file is written again."""
        if self._facts is not None and self._facts.get(fingerprint) is not None:
            return True
        target = self._facts_file(fingerprint)
        if target is None:
            return False
        try:
            with open(target, "rb") as handle:
                head = handle.read(64)
        except OSError:
            return False
        return self.version.encode() in head[:32]  # the payload's first item is the version

    def facts_put(self, fingerprint: str, facts: tuple[Any, ...], replace: bool = False) -> None:
        if self.facts_get(fingerprint) is not None and not replace:
            return
        assert self._facts is not None
        self._facts[fingerprint] = facts
        self._facts_new.add(fingerprint)

    # -- saving -------------------------------------------------------------------------------

    def save(self) -> None:
        """Atomically rewrite what changed; drop scans and problems unused by a run that saw
        a whole snapshot once they outnumber the used ones (old versions of edited pages)."""
        if self.path is not None and self._scans_dirty and self._scans is not None:
            records, problems, lines = self._scans
            if self._full and len(records) > 2 * len(self._used) + 1000:
                records = {k: v for k, v in records.items() if k in self._used}
            if self._full and len(problems) > 3 * len(self._used_problems) + 1000:
                problems = {k: v for k, v in problems.items() if k in self._used_problems}
            if len(lines) > 20_000:  # old versions of sources: a cited source is counted again
                lines = {}
            _write(self.path, (self.version, records, problems, lines))
            self._drop_old_layout()
            self._scans_dirty = False
        if self.tree_path is not None and self._trees_dirty and self._trees is not None:
            _write(self.tree_path, (self.version, self._trees))
            self._trees_dirty = False
            self._sweep()
        for fingerprint in sorted(self._facts_new):
            target = self._facts_file(fingerprint)
            if target is not None and self._facts is not None:
                _write(target, (self.version, {fingerprint: self._facts[fingerprint]}))
                self._prune_facts(target)
        self._facts_new.clear()

    def _sweep(self) -> None:
        """Delete what writers killed mid-write left (temporary files older than an hour)."""
        if self.folder is None:
            return
        try:
            for left in self.folder.glob(".*.marshal.*"):
                if left.stat().st_mtime < time.time() - 3600:
                    left.unlink()
        except OSError:
            pass

    def _prune_facts(self, keep: Path) -> None:
        """Keep the facts of the most recently written fingerprints (and ``keep``)."""
        if self.folder is None:
            return
        try:
            found = [p for p in self.folder.glob("facts-*.marshal") if p != keep]
            found.sort(key=lambda p: p.stat().st_mtime_ns)
            for old in found[: max(0, len(found) - (_MAX_FACTS - 1))]:
                old.unlink()
        except OSError:
            pass

    def _drop_old_layout(self) -> None:
        """Delete the files of the layout before this folder (several MB each)."""
        if self.folder is None:
            return
        old = self.folder.parent
        try:
            for name in _OLD_FILES:
                (old / name).unlink(missing_ok=True)
            for path in old.glob("facts-v2-*.marshal"):
                path.unlink()
        except OSError:
            pass
