"""What to say when a staged rename breaks links: ``run: llmwiki mv OLD NEW``.

The pre-commit gate refuses a commit whose staged rename (``git mv``) breaks links to the
renamed page; ``llmwiki mv OLD NEW`` then finishes that rename with every link rewritten, in
one commit. Renames are found the way git finds them (``diff-index --cached -M``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..git import Git
from ..wiki.slug import slugify
from .result import CheckResult

BROKEN = ("broken-link", "broken-relative-link")


@dataclass(frozen=True)
class RenameHint:
    old: str  # repository paths
    new: str
    broken: int  # the problems of the result the rename explains

    def to_json(self) -> dict[str, object]:
        return {"from": self.old, "to": self.new, "broken": self.broken, "command": f"llmwiki mv {self.old} {self.new}"}


def staged_renames(git: Git) -> list[tuple[str, str]]:
    """(old, new) of each markdown file the index renames against HEAD (git's -M detection)."""
    out = git.run("diff-index", "--cached", "-M", "-z", "--name-status", "--diff-filter=R", "HEAD", check=False)
    fields = out.split(b"\0")
    found = []
    i = 0
    while i + 2 < len(fields):
        status, old, new = fields[i], fields[i + 1], fields[i + 2]
        i += 3
        if status.startswith(b"R"):
            pair = (old.decode("utf-8", "surrogateescape"), new.decode("utf-8", "surrogateescape"))
            if pair[0].lower().endswith(".md"):
                found.append(pair)
    return found


def rename_hints(git: Git, result: CheckResult) -> list[RenameHint]:
    """The staged renames that explain broken links of ``result`` (empty when none do)."""
    broken = [p for p in result.problems if p.code in BROKEN and p.severity == "error"]
    if not broken:
        return []
    hints = []
    for old, new in staged_renames(git):
        stem = slugify(old.rsplit("/", 1)[-1][:-3])
        count = sum(1 for p in broken if (p.target or "") == old or (p.target or "").rsplit("/", 1)[-1] == stem)
        if count:
            hints.append(RenameHint(old, new, count))
    return hints
