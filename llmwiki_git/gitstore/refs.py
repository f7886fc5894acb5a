"""Refs: listing them and moving them, each move a compare-and-swap (``update-ref NEW OLD``)."""

from __future__ import annotations

from .runner import GitRunner


class RefUpdates(GitRunner):
    def update_ref(
        self, ref: str, new: str, old: str, *, message: str | None = None, check: bool = True
    ) -> bool:
        """Point ``ref`` at ``new`` if it is at ``old`` now ("" : if it does not exist yet).
        True when it moved; GitError otherwise (``check``), or False."""
        flags = ("-m", message) if message else ()
        return self.call("update-ref", *flags, ref, new, old, check=check)[0] == 0

    def delete_ref(self, ref: str, old: str, *, message: str | None = None) -> None:
        """Delete ``ref`` if it is at ``old``; GitError otherwise."""
        flags = ("-m", message) if message else ()
        self.run("update-ref", *flags, "-d", ref, old)

    def for_each_ref(
        self, pattern: str, fields: tuple[str, ...], *, count: int | None = None
    ) -> list[list[str]]:
        """The refs matching ``pattern``, each as its ``fields`` (``refname``, ``objectname``,
        ``committerdate:unix``, ``subject``...), in git's order; none when git cannot list them."""
        fmt = "%09".join(f"%({name})" for name in fields)
        limit = (f"--count={count}",) if count is not None else ()
        out = self.run("for-each-ref", *limit, f"--format={fmt}", pattern, check=False).decode(
            "utf-8", "replace"
        )
        return [(line.split("\t") + [""] * len(fields))[: len(fields)] for line in out.splitlines()]

    def branch_name_ok(self, name: str) -> bool:
        """Whether ``name`` is a valid branch name (``git check-ref-format --branch``)."""
        return bool(self.run("check-ref-format", "--branch", name, check=False).strip())
