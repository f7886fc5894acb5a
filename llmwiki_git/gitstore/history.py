"""Reading history: commit messages, authors, ancestry and ``git log`` queries."""

from __future__ import annotations

from collections.abc import Sequence

from .runner import GitRunner


class History(GitRunner):
    def commit_body(self, commit: str) -> str:
        """The message of ``commit`` without its subject line (``%b``)."""
        return self.text("log", "-1", "--format=%b", commit)

    def author(self, commit: str) -> tuple[str, str, str]:
        """(name, email, raw date) of ``commit``'s author, to make a commit in its name."""
        name, email, date = (
            self.text("log", "-1", "--format=%an%x00%ae%x00%ad", "--date=raw", commit).split("\0")
            + ["", "", ""]
        )[:3]
        return name, email, date

    def count_between(self, since: str, until: str) -> int:
        """How many commits ``until`` has that ``since`` has not (``rev-list --count since..until``)."""
        return int(self.text("rev-list", "--count", f"{since}..{until}"))

    def parents(self, commit: str) -> list[str]:
        return self.text("rev-list", "--parents", "-n", "1", commit).split()[1:]

    def log(
        self,
        revs: Sequence[str],
        *,
        format: str,
        grep: str | None = None,
        fixed: bool = False,
        max_count: int | None = None,
        no_walk: bool = False,
        no_merges: bool = False,
        name_only: bool = False,
        paths: Sequence[str] = (),
        check: bool = True,
    ) -> bytes:
        """``git log`` of ``revs`` in ``format`` (NUL-terminated records with ``name_only``):
        ``grep`` matches messages (a fixed string with ``fixed``), ``paths`` limits to
        pathspecs, ``no_walk`` lists exactly the given commits, in that order."""
        args = ["log"]
        args += ["--no-walk=unsorted"] if no_walk else []
        args += ["--no-merges"] if no_merges else []
        args += ["--name-only", "-z"] if name_only else []
        args += ["-n", str(max_count)] if max_count is not None else []
        args += [f"--format={format}"]
        args += (["-F"] if fixed else []) + ([f"--grep={grep}"] if grep is not None else [])
        args += ["--end-of-options", *revs, "--", *paths]
        return self.run(*args, check=check)
