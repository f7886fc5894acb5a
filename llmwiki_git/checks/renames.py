"""What to say when a staged rename breaks links: ``run: llmwiki mv OLD NEW``.

The pre-commit gate refuses a commit whose staged rename (``git mv``) breaks links to the
renamed page; ``llmwiki mv OLD NEW`` then finishes that rename with every link rewritten, in
one commit. Renames are found from the index's diff against HEAD, which the check already
has: a deleted and an added page with one blob are a rename; other deleted and added pages
are paired by git's own rename detection (``diff-index --cached -M``), one more git process
only then. Asked only when links broke.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..gitstore.git import Git
from ..wiki.slug import slugify
from .result import CheckResult

BROKEN = ("broken-link", "broken-relative-link")


@dataclass(frozen=True)
class RenameHint:
    old: str  # repository paths
    new: str
    broken: int  # the problems of the result the rename explains

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.old,
            "to": self.new,
            "broken": self.broken,
            "command": f"llmwiki mv {self.old} {self.new}",
        }


def _pages(raw: bytes) -> tuple[dict[str, str], dict[str, str]]:
    """(deleted, added) markdown files of ``git diff-index -z --no-renames`` output, with
    their blob ids."""
    deleted: dict[str, str] = {}
    added: dict[str, str] = {}
    fields = raw.split(b"\0")
    for meta, name in zip(fields[0::2], fields[1::2]):
        parts = meta.decode(errors="replace").lstrip(":").split(" ")
        path = name.decode("utf-8", "surrogateescape")
        if len(parts) != 5 or not path.lower().endswith(".md"):
            continue
        if parts[4] == "D":
            deleted[path] = parts[2]
        elif parts[4] == "A":
            added[path] = parts[3]
    return deleted, added


def staged_renames(git: Git, raw_diff: bytes) -> list[tuple[str, str]]:
    """(old, new) of each markdown file the index renames against HEAD; ``raw_diff`` is
    ``git diff-index --cached -z --no-renames HEAD``."""
    deleted, added = _pages(raw_diff)
    if not deleted or not added:
        return []
    by_blob = {blob: path for path, blob in added.items()}
    found = []
    for old, blob in sorted(deleted.items()):
        new = by_blob.pop(blob, None)
        if new is not None:
            found.append((old, new))
            del added[new]
    if len(found) < len(deleted) and added:  # edited too: git's similarity decides
        for old, new in git.staged_renames("HEAD"):
            if new in added and (old, new) not in found:
                found.append((old, new))
    return found


def rename_hints(renames: list[tuple[str, str]], result: CheckResult) -> list[RenameHint]:
    """The ``renames`` that explain broken links of ``result``."""
    broken = [p for p in result.problems if p.code in BROKEN and p.severity == "error"]
    hints = []
    for old, new in renames:
        stem = slugify(old.rsplit("/", 1)[-1][:-3])
        count = sum(
            1
            for p in broken
            if (p.target or "") == old or (p.target or "").rsplit("/", 1)[-1] == stem
        )
        if count:
            hints.append(RenameHint(old, new, count))
    return hints
