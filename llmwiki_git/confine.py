"""Confinement: the one rule deciding whether a path may be read or written (DESIGN §2).

Every reader and writer of the wiki, ``sources/``, the state folder and generated files goes
through here:

* **reads** — a path is used only if its real path stays inside its root, passes through no
  folder or file whose name starts with ``.`` (so ``.git/config`` or a ``.env`` is never
  read, even in a vault whose root is the repository), and is a regular file. The file is
  opened non-blocking and checked with ``fstat`` before reading (a FIFO or device is refused
  at once), and read with a size cap (an oversize or growing file is refused without being
  loaded).
* **writes** — never follow symlinks: every folder from the root down to the file is checked
  with ``lstat``, the file itself is opened with ``O_NOFOLLOW`` (appends) or replaced by a
  rename (whole files), so a committed symlink cannot redirect a write outside the project.

Import-light on purpose: the checker and the hook use it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import PathRefused

MAX_READ_BYTES = 8 * 1024 * 1024
"""The default size cap for one file read through here (pages, sources, state files)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def hidden_part(rel: str) -> str | None:
    """The first component of the relative path ``rel`` that starts with ``.`` (None: none)."""
    for part in rel.replace("\\", "/").split("/"):
        if part.startswith(".") and part not in ("", "."):
            return part
    return None


def real_relative(root: str | os.PathLike[str], rel: str) -> str | None:
    """Where ``root/rel`` really is, relative to the real ``root`` ('/'-separated), or None
    when its real path leaves ``root``."""
    base = os.path.realpath(root)
    real = os.path.realpath(os.path.join(base, rel))
    if not _inside(base, real):
        return None
    return os.path.relpath(real, base).replace(os.sep, "/")


def escape_reason(root: str | os.PathLike[str], rel: str, *, allow_hidden: bool = False) -> str | None:
    """Why ``root/rel`` may not be read (None: it may). ``rel`` is relative to ``root``."""
    if not rel or os.path.isabs(rel) or rel.startswith(("/", "\\")):
        return f"absolute or empty path {rel!r}"
    if ".." in rel.replace("\\", "/").split("/"):
        return f"path {rel!r} has a '..' segment"
    where = real_relative(root, rel)
    if where is None:
        return f"{rel!r} leaves {os.path.basename(os.path.realpath(root)) or root}/ (symlink)"
    hidden = None if allow_hidden else hidden_part(where)
    if hidden is not None:
        return f"{rel} leads into {hidden!r}, which is never read"
    return None


def confined(root: str | os.PathLike[str], rel: str, *, allow_hidden: bool = False) -> str:
    """The real path of ``root/rel`` when it stays inside ``root``; PathRefused otherwise."""
    reason = escape_reason(root, rel, allow_hidden=allow_hidden)
    if reason is not None:
        raise PathRefused(rel, reason, code="symlink-escape")
    return os.path.realpath(os.path.join(os.path.realpath(root), rel))


def read_file(path: str | os.PathLike[str], *, max_bytes: int = MAX_READ_BYTES, name: str | None = None,
              nofollow: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; PathRefused for a FIFO,
    device, folder or oversize file — in bounded time (non-blocking open, ``fstat`` first)
    and memory (never more than ``max_bytes + 1`` bytes read). ``nofollow``: refuse a
    symlink as the last component (for paths listed as plain files)."""
    shown = name or os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | (_NOFOLLOW if nofollow else 0))
    except OSError as exc:
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathRefused(shown, f"{_kind(info.st_mode)}, not a regular file; not read", code="not-regular-file")
        if info.st_size > max_bytes:
            raise PathRefused(shown, f"{info.st_size / 1048576:.1f} MB is over the {max_bytes / 1048576:g} MB limit; not read", code="too-large")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise PathRefused(shown, f"grew over the {max_bytes / 1048576:g} MB limit while being read; not read", code="too-large")
        return data
    except OSError as exc:
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    finally:
        os.close(fd)


def read_confined(root: str | os.PathLike[str], rel: str, *, max_bytes: int = MAX_READ_BYTES,
                  allow_hidden: bool = False) -> bytes:
    """`confined` then `read_file`: the one way to read a file under a root."""
    return read_file(confined(root, rel, allow_hidden=allow_hidden), max_bytes=max_bytes, name=rel)


def _no_symlink_below(root: Path, rel_parts: tuple[str, ...]) -> None:
    """Refuse when any existing component of ``root/rel_parts`` is a symlink or not a folder."""
    current = root
    for index, part in enumerate(rel_parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            raise PathRefused(str(current), "is a symlink; llmwiki never writes through symlinks", code="symlink-write",
                              hint=f"replace {current} with a real {'folder' if index < len(rel_parts) - 1 else 'file'}")
        if index < len(rel_parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise PathRefused(str(current), f"is {_kind(info.st_mode)}, not a folder")


def _split(root: str | os.PathLike[str], rel: str) -> tuple[Path, tuple[str, ...]]:
    parts = tuple(p for p in rel.replace("\\", "/").split("/") if p and p != ".")
    if not parts or ".." in parts or os.path.isabs(rel):
        raise PathRefused(rel, "not a relative path inside its root")
    return Path(os.path.realpath(root)), parts


def refuse_symlinks(root: str | os.PathLike[str], rel: str) -> None:
    """Refuse when any existing component of ``root/rel`` is a symlink (a file written there
    would land somewhere else) or a non-folder above the last one."""
    base, parts = _split(root, rel)
    _no_symlink_below(base, parts)


def ensure_dir(root: str | os.PathLike[str], rel: str) -> Path:
    """Create folder ``root/rel`` (and parents); refuse when any part of it is a symlink."""
    base, parts = _split(root, rel)
    _no_symlink_below(base, parts)
    target = base.joinpath(*parts)
    target.mkdir(parents=True, exist_ok=True)
    _no_symlink_below(base, parts)  # nothing swapped in while creating
    return target


def writable(root: str | os.PathLike[str], rel: str) -> Path:
    """The path ``root/rel`` for writing, after checking no part of it is a symlink."""
    base, parts = _split(root, rel)
    _no_symlink_below(base, parts)
    return base.joinpath(*parts)



def append(root: str | os.PathLike[str], rel: str, data: bytes) -> None:
    """Append ``data`` to ``root/rel`` (created 0644), never through a symlink."""
    path = writable(root, rel)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathRefused(str(path), f"{_kind(info.st_mode)}, not a regular file; not written")
        os.write(fd, data)
    finally:
        os.close(fd)


def create(root: str | os.PathLike[str], rel: str, data: bytes) -> bool:
    """Create ``root/rel`` holding ``data`` unless something is already there (``O_EXCL``,
    ``O_NOFOLLOW``: never through a symlink); whether it was created."""
    path = writable(root, rel)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return True
