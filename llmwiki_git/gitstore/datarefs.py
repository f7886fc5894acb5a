"""Data kept on a ref of its own, outside branches (``refs/llmwiki/index``): commits built with
plumbing alone (``hash-object``, ``mktree``, ``commit-tree``) -- no work tree, no index file,
no branch touched -- and what reading and fetching such a ref needs: a tree's entries with
their sizes (so a reader bounds what it reads before reading it), ancestry, a fetch into a
ref of our own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import GitError
from .commits import commit_tree
from .git import Git

__all__ = [
    "DataEntry",
    "commit_files",
    "fetch_ref",
    "is_ancestor",
    "read_commit_tree",
    "tree_entries",
]

_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class DataEntry:
    """One entry of a tree: mode, object type, object id, size in bytes (-1: not a blob),
    name."""

    mode: str
    kind: str
    oid: str
    size: int
    name: str


def commit_files(git: Git, files: dict[str, bytes], parent: str | None, message: str) -> str:
    """A commit whose tree holds exactly ``files`` (flat: name -> bytes, regular files), on top
    of ``parent``: objects are written, nothing else changes (no ref, index or work tree)."""
    lines = []
    for name, data in sorted(files.items()):
        if not name or "/" in name or "\0" in name or "\n" in name:
            raise ValueError(f"not a flat file name: {name!r}")
        # zlib level 1: float data barely compresses, and the default level took a third longer
        # (a push or `git gc` packs them again at the pack's own level anyway)
        blob = (
            git.run("-c", "core.looseCompression=1", "hash-object", "-w", "--stdin", input=data)
            .decode()
            .strip()
        )
        lines.append(f"100644 blob {blob}\t{name}")
    tree = git.run("mktree", "-z", input=("\0".join(lines) + "\0").encode()).decode().strip()
    return commit_tree(git, tree, parent, message)


def read_commit_tree(git: Git, commit: str) -> tuple[str, list[str]]:
    """The tree id and parent ids of the commit ``commit`` (GitError when it is not one)."""
    raw = git.run("cat-file", "commit", commit).decode("utf-8", "surrogateescape")
    head = raw.split("\n\n", 1)[0].split("\n")
    tree = next((line[5:] for line in head if line.startswith("tree ")), "")
    parents = [line[7:] for line in head if line.startswith("parent ")]
    if not _OID.fullmatch(tree):
        raise GitError(["git", "cat-file", "commit", commit], 0, "a commit without a tree")
    return tree, parents


def tree_entries(git: Git, tree: str) -> list[DataEntry]:
    """The entries of ``tree`` itself (not recursive), each with its size (``ls-tree -l``)."""
    out = git.run("ls-tree", "-l", "-z", "--end-of-options", tree)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        fields = meta.decode("ascii", "replace").split()
        if len(fields) != 4:
            raise GitError(["git", "ls-tree", "-l", tree], 0, "an entry of an unexpected shape")
        mode, kind, oid, size = fields
        entries.append(
            DataEntry(
                mode,
                kind,
                oid,
                int(size) if size.isdigit() else -1,
                name.decode("utf-8", "surrogateescape"),
            )
        )
    return entries


def is_ancestor(git: Git, older: str, newer: str) -> bool:
    """Whether ``older`` is ``newer`` or one of its ancestors."""
    return git.call("merge-base", "--is-ancestor", older, newer, check=False)[0] == 0


def fetch_ref(git: Git, remote: str, source: str, dest: str) -> str | None:
    """Fetch ``source`` of ``remote`` into the local ref ``dest`` (forced: ``dest`` is a ref
    only this fetch writes, like a remote-tracking branch); no tags, no FETCH_HEAD. The
    object ``dest`` names now (whatever its type: the caller checks), or None when the
    remote has no ``source``."""
    if not remote or remote.startswith("-"):
        raise GitError(["git", "fetch", remote], 128, f"{remote!r} is not a remote name or URL")
    status, _ = git.call(
        "ls-remote", "--exit-code", "--end-of-options", remote, source, check=False
    )
    if status == 2:  # the remote answered, and has no such ref
        return None
    if status != 0:
        git.run("ls-remote", "--end-of-options", remote, source)  # raises with git's own message
    git.run(
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--end-of-options",
        remote,
        f"+{source}:{dest}",
    )
    return git.object_id(dest)


def fetch_tip(git: Git, remote: str, ref: str) -> bool:
    """Fetch only the tip commit of ``ref`` of ``remote`` into the same local ref (forced,
    depth 1: a shallow CI checkout needs the last published data commit, not its history).
    False when it could not be fetched (the remote has no such ref yet)."""
    if not remote or remote.startswith("-"):
        raise GitError(["git", "fetch", remote], 128, f"{remote!r} is not a remote name or URL")
    status, _ = git.call(
        "fetch", "--depth=1", "--no-tags", "--end-of-options", remote, f"+{ref}:{ref}", check=False
    )
    return status == 0


def push_ref(git: Git, remote: str, ref: str) -> bool:
    """Push the local ``ref`` to the same ref of ``remote``; False when the push was refused
    (no permission, or the remote moved: the caller says what to do)."""
    if not remote or remote.startswith("-"):
        raise GitError(["git", "push", remote], 128, f"{remote!r} is not a remote name or URL")
    status, _ = git.call("push", "--end-of-options", remote, f"{ref}:{ref}", check=False)
    return status == 0
