"""What changed: tree and index diffs, the work tree's status, and putting paths back."""

from __future__ import annotations

from collections.abc import Callable

from .runner import GitRunner


class Changes(GitRunner):
    def write_tree(self) -> str | None:
        """The tree the index would commit (None: the index cannot be written as a tree)."""
        return self.run("write-tree", check=False).decode().strip() or None

    def spawn_write_tree(self) -> Callable[[], bytes]:
        """`write_tree` started now, its raw output later (see ``GitRunner.spawn``)."""
        return self.spawn("write-tree")

    def spawn_tree_diff(self, old: str, new: str) -> Callable[[], bytes]:
        """``diff-tree -r -z --no-renames OLD NEW`` started now (raw records, later)."""
        return self.spawn("diff-tree", "-r", "-z", "--no-renames", old, new)

    def spawn_index_diff(self, tree: str) -> Callable[[], bytes]:
        """``diff-index --cached -z --no-renames TREE`` started now (raw records, later)."""
        return self.spawn("diff-index", "--cached", "-z", "--no-renames", tree)

    def raw_diff(self, old: str, new: str | None = None, *, cached: bool = False) -> bytes:
        """``--raw -z --no-renames`` records from tree ``old`` to tree ``new``, to the index
        (``cached``) or to the work tree (neither); empty when git cannot tell."""
        if new is not None:
            return self.run(
                "diff-tree", "-r", "-z", "--no-renames", "--end-of-options", old, new, check=False
            )
        flags = ("--cached",) if cached else ()
        return self.run(
            "diff-index", *flags, "-z", "--no-renames", "--end-of-options", old, check=False
        )

    def changed_names(self, old: str, new: str | None, *, diff_filter: str = "AMT") -> set[str]:
        """Paths added, modified or retyped (``diff_filter``) from tree ``old`` to ``new``
        (None: the index); empty when git cannot tell."""
        if new is None:
            out = self.run(
                "diff-index",
                "--cached",
                "-z",
                "--no-renames",
                "--name-only",
                f"--diff-filter={diff_filter}",
                "--end-of-options",
                old,
                check=False,
            )
        else:
            out = self.run(
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-only",
                f"--diff-filter={diff_filter}",
                "--end-of-options",
                old,
                new,
                check=False,
            )
        return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}

    def staged_renames(self, against: str = "HEAD") -> list[tuple[str, str]]:
        """(old, new) of every rename git's similarity finds between ``against`` and the index."""
        out = self.run(
            "diff-index",
            "--cached",
            "-M",
            "-z",
            "--name-status",
            "--diff-filter=R",
            against,
            check=False,
        )
        fields = out.split(b"\0")
        return [
            (old.decode("utf-8", "surrogateescape"), new.decode("utf-8", "surrogateescape"))
            for status, old, new in zip(fields[0::3], fields[1::3], fields[2::3])
            if status.startswith(b"R")
        ]

    def raw_changes(self, parent: str, commit: str) -> list[tuple[str, str, str, str]]:
        """(new mode, new blob, status, path) of every entry ``commit`` changes against ``parent``."""
        return [
            (new, blob, status, path)
            for _, new, blob, status, path in self.raw_entries(parent, commit)
        ]

    def raw_entries(self, parent: str, commit: str) -> list[tuple[str, str, str, str, str]]:
        """(old mode, new mode, new blob, status, path) of every entry ``commit`` changes
        against ``parent``."""
        out = self.run(
            "diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-commit-id", parent, commit
        )
        fields = out.split(b"\0")
        changes = []
        for head, path in zip(fields[0::2], fields[1::2]):
            if not head.startswith(b":"):
                break
            meta = head[1:].decode("ascii", "replace").split()
            if len(meta) >= 5:
                changes.append(
                    (meta[0], meta[1], meta[3], meta[4], path.decode("utf-8", "surrogateescape"))
                )
        return changes

    def text_diff(self, old: str, new: str, pathspec: str) -> str:
        """The unified diff of ``pathspec`` from ``old`` to ``new``, as a reader sees it
        (no colour, no external diff driver); "" when git cannot make it."""
        return self.run(
            "diff", "--no-color", "--no-ext-diff", old, new, "--", pathspec, check=False
        ).decode("utf-8", "replace")

    def status_paths(self, pathspec: str, *, renames: bool = True) -> list[bytes]:
        """The ``status --porcelain=v1 -z`` records (untracked files one by one) under
        ``pathspec``, without taking git's index lock."""
        flags = () if renames else ("--no-renames",)
        out = self.run(
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            *flags,
            "--",
            pathspec,
        )
        return [record for record in out.split(b"\0") if record]

    def spawn_status(self) -> Callable[[], bytes]:
        """``status --porcelain=v2 -z --branch`` of the whole work tree (untracked files one
        by one, submodules ignored, no index lock), started now."""
        return self.spawn(
            "--no-optional-locks",
            "status",
            "--porcelain=v2",
            "-z",
            "--branch",
            "--untracked-files=all",
            "--ignore-submodules=all",
        )

    def restore_from_head(self, pathspec: str) -> None:
        """Put ``pathspec`` back as HEAD has it, in the index and the work tree."""
        self.run("checkout", "HEAD", "--", pathspec)

    def unstage(self, pathspec: str) -> None:
        """Drop ``pathspec`` from the index (the work-tree file stays)."""
        self.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", pathspec)
