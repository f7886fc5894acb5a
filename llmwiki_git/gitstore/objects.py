"""Reading git's objects: revisions, trees, the index, blobs. Typed helpers over `GitRunner`,
each git command line written once ("the blob at rev:path" was written out five times)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import GitError
from .runner import GitRunner, batches

# One record of ``ls-files -z -s -t``: a tag, then "mode blob stage<TAB>" for index entries
# (tag H, S, M, C...) or nothing for an untracked file (tag "?"), then the path.
_LS_WORKTREE = re.compile(rb"(?:\? |([A-Z]) (\d{6}) ([0-9a-f]{40,64}) ([0-3])\t)([^\0]*)\0")


@dataclass(frozen=True)
class TreeEntry:
    """One file of a tree or of the index: git mode, blob id and repo-relative path."""

    mode: str
    blob: str
    path: str

    @property
    def is_symlink(self) -> bool:
        return self.mode == "120000"

    @property
    def is_file(self) -> bool:
        return self.mode in ("100644", "100755")


def _tree_entries(out: bytes, kinds: tuple[str, ...] = ("blob",)) -> list[TreeEntry]:
    """The entries of ``git ls-tree -z`` output whose object type is in ``kinds``."""
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        fields = meta.decode("ascii", "replace").split(" ")
        if len(fields) == 3 and fields[1] in kinds:
            entries.append(TreeEntry(fields[0], fields[2], path.decode("utf-8", "surrogateescape")))
    return entries


class ObjectReads(GitRunner):
    """What a revision, a tree, the index or a blob holds."""

    def rev_parse(self, rev: str) -> str | None:
        """The commit id ``rev`` names, or None when it does not exist (an unborn HEAD)."""
        out = self.run(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False
        )
        value = out.decode().strip()
        return value or None

    def object_id(self, name: str) -> str | None:
        """The id of the object ``name`` names (``HEAD:wiki/a.md``, ``:path`` in the index, a
        branch...), or None when there is none."""
        return (
            self.run("rev-parse", "--verify", "--quiet", name, check=False).decode().strip() or None
        )

    def blob_at(self, rev: str, path: str) -> str | None:
        """The id of ``path`` in ``rev`` (None: no such entry); ``rev`` "" is the index."""
        return self.object_id(f"{rev}:{path}")

    def peel(self, name: str, kind: str) -> str:
        """The ``kind`` (blob, commit, tree) object ``name`` leads to; GitError when none."""
        return self.text("rev-parse", "--verify", "--end-of-options", f"{name}^{{{kind}}}")

    def object_type(self, name: str) -> str | None:
        """``blob``, ``tree``, ``commit`` or ``tag`` (None: not in this repository)."""
        if not name or name.startswith("-"):
            return None
        return self.run("cat-file", "-t", name, check=False).decode().strip() or None

    def object_size(self, name: str) -> int | None:
        """The size in bytes of the object ``name`` names (None: there is none)."""
        size = self.run("cat-file", "-s", name, check=False).decode().strip()
        return int(size) if size.isdigit() else None

    def read_blob(self, blob: str) -> bytes:
        """The bytes of a blob (``rev:path`` works too); GitError when it is not one."""
        return self.run("cat-file", "blob", blob)

    def read_blob_at(self, rev: str, path: str) -> bytes | None:
        """The bytes of ``path`` in ``rev``, or None when ``rev`` has no blob there."""
        status, data = self.call("cat-file", "blob", f"{rev}:{path}", check=False)
        return data if status == 0 else None

    def file_mode(self, rev: str, path: str) -> str:
        """The mode of ``path`` (from the repository root, taken literally) in ``rev``:
        ``100644``, ``120000``, ``040000`` for a folder..., "" when absent."""
        return self.text(
            "ls-tree",
            "--full-tree",
            "--format=%(objectmode)",
            "--end-of-options",
            rev,
            "--",
            f":(top,literal){path}",
        )

    def ls_tree(self, rev: str) -> list[TreeEntry]:
        """Every blob of ``rev``'s tree."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev)
        return _tree_entries(out)

    def ls_tree_under(
        self, rev: str, pathspec: str, *, literal: bool = False, submodules: bool = False
    ) -> list[TreeEntry]:
        """The blobs (and with ``submodules`` the gitlinks) of ``rev`` the pathspec matches,
        recursively; none when ``rev`` does not exist. ``literal``: no pathspec magic."""
        flags = ("--literal-pathspecs",) if literal else ()
        out = self.run(
            *flags,
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            "--end-of-options",
            rev,
            "--",
            pathspec,
            check=False,
        )
        return _tree_entries(out, ("blob", "commit") if submodules else ("blob",))

    def tree_paths(self, rev: str) -> list[str]:
        """Every file path of ``rev`` (none when ``rev`` does not exist)."""
        out = self.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", rev, check=False)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def blob_ids(self, tree: str, paths: list[str]) -> dict[str, str]:
        """Path -> blob id of the given files in ``tree``, with one ``ls-tree`` (looking
        paths up one by one as ``tree:path`` re-reads a large folder's tree each time);
        empty when ``tree`` does not exist (an unborn HEAD)."""
        if not paths:
            return {}
        out = b"".join(
            self.run(
                "--literal-pathspecs",
                "ls-tree",
                "-r",
                "-z",
                "--full-tree",
                "--end-of-options",
                tree,
                "--",
                *chunk,
                check=False,
            )
            for chunk in batches(paths)
        )
        return {entry.path: entry.blob for entry in _tree_entries(out)}

    def ls_index(self, under: str | None = None) -> list[TreeEntry]:
        """The index's entries (gitlinks included), or those at or under the folder ``under``
        (from the repository root, taken literally)."""
        out = self.run(
            "ls-files", "-s", "-z", *(("--", f":(top,literal){under}") if under is not None else ())
        )
        entries: dict[str, TreeEntry] = {}
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, blob, stage = meta.decode().split(" ")
            name = path.decode("utf-8", "surrogateescape")
            # During a merge conflict keep "ours" (stage 2) over the base (stage 1).
            if stage in ("0", "2") or name not in entries:
                entries[name] = TreeEntry(mode, blob, name)
        return list(entries.values())

    def grep_files(self, fixed: Sequence[str], rev: str | None, pathspec: str) -> set[str]:
        """The text files of ``rev`` (None: the index) matching ``pathspec`` that hold one of
        the ``fixed`` strings (binary files skipped); empty when none do."""
        if not fixed:
            return set()
        patterns = [arg for text in fixed for arg in ("-e", text)]
        target = ["--cached"] if rev is None else [rev]
        out = self.run(
            "grep",
            "-l",
            "-z",
            "-F",
            "-I",
            "--no-color",
            *patterns,
            *target,
            "--",
            pathspec,
            check=False,
        )
        cut = 0 if rev is None else len(rev) + 1  # "rev:path"
        return {item[cut:].decode("utf-8", "surrogateescape") for item in out.split(b"\0") if item}

    def staged_blob(self, path: str) -> str | None:
        """The blob the index holds for ``path`` (its first stage in a conflict), or None."""
        staged = self.run("ls-files", "-s", "-z", "--", f":(top,literal){path}").split(b"\0")[0]
        return staged.split(b" ")[1].decode() if staged else None

    def ls_worktree(self) -> tuple[dict[str, tuple[str, str]], set[str], list[str]]:
        """The index, the changed files and the untracked files from one ``ls-files`` call:
        path -> (mode, blob) of the index (in a conflict "ours" over the base), the tracked
        paths whose work-tree file differs (or is gone), and the untracked paths (not
        ignored). One process and one regular-expression pass (a fresh `llmwiki context`
        lists the work tree once)."""
        args = ("ls-files", "-z", "-s", "-t", "-m", "-o", "--exclude-standard")
        out = self.run(*args)
        entries: dict[str, tuple[str, str]] = {}
        modified: set[str] = set()
        untracked: list[str] = []
        records = _LS_WORKTREE.findall(out)
        if len(records) != out.count(b"\0"):
            raise GitError(args, 0, "a record of its output has an unexpected shape")
        for tag, mode, blob, stage, raw in records:
            path = raw.decode("utf-8", "surrogateescape")
            if not tag:
                untracked.append(path)
            elif tag == b"C":
                modified.add(path)
            elif stage in (b"0", b"2") or path not in entries:
                entries[path] = (mode.decode(), blob.decode())
        return entries, modified, untracked

    def read_blobs(self, blobs: Iterable[str]) -> dict[str, bytes]:
        """Read many blobs with one ``cat-file --batch`` process."""
        wanted = list(dict.fromkeys(blobs))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input=("\n".join(wanted) + "\n").encode())
        result: dict[str, bytes] = {}
        pos = 0
        for blob in wanted:
            header_end = out.index(b"\n", pos)
            header = out[pos:header_end].split()
            pos = header_end + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            result[blob] = out[pos : pos + size]
            pos += size + 1
        return result

    def read_large_blobs(self, blobs: Iterable[str]) -> dict[str, bytearray]:
        """`read_blobs` for a few large blobs (a published index's, tens of MB each): one
        ``cat-file --batch`` process whose output is read straight into one buffer per blob,
        with no list of pipe chunks, joined copy or sliced copies (each a fresh stretch of
        memory to fault in: a third of a second of system time for ~85 MB on a small VM)."""
        import io
        import subprocess

        wanted = list(dict.fromkeys(blobs))
        if not wanted:
            return {}
        cmd = ["git", "cat-file", "--batch"]
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=self.root,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:  # pragma: no cover - git missing from PATH
            raise GitError(cmd, 127, "git is not installed or not on PATH") from exc
        assert proc.stdin is not None and isinstance(proc.stdout, io.BufferedReader)
        result: dict[str, bytearray] = {}
        try:
            proc.stdin.write(
                ("\n".join(wanted) + "\n").encode()
            )  # a few names: well under a pipe's buffer
            proc.stdin.close()
            for blob in wanted:
                header = proc.stdout.readline().split()
                if len(header) < 3 or header[1] == b"missing":
                    continue
                size = int(header[2])
                buffer = bytearray(size)
                view, got = memoryview(buffer), 0
                while got < size:
                    n = proc.stdout.readinto(view[got:])
                    if not n:
                        raise GitError(cmd, proc.poll() or 0, f"cat-file ended inside {blob}")
                    got += n
                proc.stdout.read(1)  # the line feed after each object
                result[blob] = buffer
        finally:
            proc.stdout.close()
            proc.wait()
        return result

    def commit_object(self, commit: str) -> str:
        """The raw text of a commit object (headers, a blank line, the message)."""
        return self.run("cat-file", "commit", commit).decode("utf-8", "surrogateescape")
