"""Confinement: the one rule deciding whether a path may be read or written (DESIGN §2).

Every reader and writer of the wiki, ``sources/``, the state folder and generated files goes
through here:

* **reads** — a path is used only if its real path stays inside its root, passes through no
  folder or file whose name starts with ``.`` (so ``.git/config`` or a ``.env`` is never
  read, even in a vault whose root is the repository), and is a regular file. The file is
  opened non-blocking and checked with ``fstat`` before reading (a FIFO or device is refused
  at once), and read with a size cap (an oversize or growing file is refused without being
  loaded).
* **writes** — never follow symlinks, committed or untracked: the decision (``refuse_symlinks``,
  before any ref moves) checks every component from the root down to the file with
  ``lstat``; the write itself (``replace_file``) walks the same folders one at a time with
  ``O_NOFOLLOW`` directory handles and renames a temp file into the last one, so a symlink
  swapped in after the decision is refused too, and appends open with ``O_NOFOLLOW``.

Import-light on purpose: the checker and the hook use it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from .errors import PathRefused

MAX_READ_BYTES = 8 * 1024 * 1024
"""The default size cap for one file read through here (pages, sources, state files)."""

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: Temp files of whole-file writes: ``.llmwiki-<12 hex>.tmp`` beside their target (swept by
#: ``gitstore.transaction.sweep_temp_files`` after a crash).
TEMP_PREFIX, TEMP_SUFFIX = ".llmwiki-", ".tmp"
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


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


def escape_reason(
    root: str | os.PathLike[str], rel: str, *, allow_hidden: bool = False
) -> str | None:
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


def _open_regular(
    path: str | os.PathLike[str], shown: str, nofollow: bool = False
) -> tuple[int, os.stat_result]:
    """An open descriptor on the regular file ``path`` and its status: opened non-blocking
    and checked with ``fstat`` first, so a FIFO or device is refused at once (PathRefused)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC | (_NOFOLLOW if nofollow else 0))
    except OSError as exc:
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise PathRefused(
            shown, f"{_kind(info.st_mode)}, not a regular file; not read", code="not-regular-file"
        )
    return fd, info


def read_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = MAX_READ_BYTES,
    name: str | None = None,
    nofollow: bool = False,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``; PathRefused for a FIFO,
    device, folder or oversize file — in bounded time (non-blocking open, ``fstat`` first)
    and memory (never more than ``max_bytes + 1`` bytes read). ``nofollow``: refuse a
    symlink as the last component (for paths listed as plain files)."""
    shown = name or os.fspath(path)
    fd, info = _open_regular(path, shown, nofollow)
    try:
        if info.st_size > max_bytes:
            raise PathRefused(
                shown,
                f"{info.st_size / 1048576:.1f} MB is over the {max_bytes / 1048576:g} MB limit; not read",
                code="too-large",
            )
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
            raise PathRefused(
                shown,
                f"grew over the {max_bytes / 1048576:g} MB limit while being read; not read",
                code="too-large",
            )
        return data
    except OSError as exc:
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    finally:
        os.close(fd)


def load_json(data: bytes | bytearray | str, *, name: str) -> Any:
    """``json.loads`` of a state file with bounded depth: a document nested deeper than the
    interpreter's recursion limit (``[[[[…`` by the hundred thousand) is a ValueError naming
    ``name``, never a RecursionError -- callers treat it as any other corrupt file."""
    import json  # here: the check path reads no JSON

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError(f"{name} is nested too deeply to be read (corrupt)") from None


def read_json(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_READ_BYTES, name: str | None = None
) -> Any:
    """A state file's JSON: `read_file` (regular files only, non-blocking, size-capped) then
    `load_json` (bounded depth). PathRefused or ValueError when it cannot be used."""
    shown = name or os.fspath(path)
    return load_json(read_file(path, max_bytes=max_bytes, name=shown), name=shown)


def read_head(path: str | os.PathLike[str], size: int, *, name: str | None = None) -> bytes:
    """The first ``size`` bytes of the regular file ``path`` (fewer when it is shorter),
    opened non-blocking and checked with ``fstat`` first: a FIFO or device is refused at
    once (PathRefused) instead of blocking the command."""
    shown = name or os.fspath(path)
    fd, _info = _open_regular(path, shown)
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise PathRefused(shown, f"cannot read: {exc.strerror or exc}", code="unreadable") from exc
    finally:
        os.close(fd)


def read_confined(
    root: str | os.PathLike[str],
    rel: str,
    *,
    max_bytes: int = MAX_READ_BYTES,
    allow_hidden: bool = False,
) -> bytes:
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
            raise PathRefused(
                str(current),
                "is a symlink; llmwiki never writes through symlinks",
                code="symlink-write",
                hint=f"replace {current} with a real {'folder' if index < len(rel_parts) - 1 else 'file'}",
            )
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
    fd = os.open(
        path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o644
    )
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


def _refused_component(current: Path, last: bool) -> PathRefused:
    """Why the component ``current`` cannot be walked through or written (it was just found
    not to be a plain folder, or the file is not a plain file)."""
    try:
        info = os.lstat(current)
    except OSError:
        return PathRefused(
            str(current), "changed while being written; not written", code="symlink-write"
        )
    if stat.S_ISLNK(info.st_mode):
        return PathRefused(
            str(current),
            "is a symlink; llmwiki never writes through symlinks",
            code="symlink-write",
            hint=f"replace {current} with a real {'file' if last else 'folder'}",
        )
    return PathRefused(
        str(current), f"is {_kind(info.st_mode)}, not a {'file' if last else 'folder'}"
    )


def _open_folders(base: Path, parts: tuple[str, ...]) -> int:
    """A directory handle on ``base/parts``, reached one component at a time without
    following a symlink (``O_NOFOLLOW``), creating missing folders on the way."""
    fd = os.open(base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    current = base
    try:
        for part in parts:
            current = current / part
            flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    child = os.open(part, flags, dir_fd=fd)
                except OSError:
                    raise _refused_component(current, False) from None
            except OSError:  # ELOOP: a symlink; ENOTDIR: a file where a folder belongs
                raise _refused_component(current, False) from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def replace_with(
    root: str | os.PathLike[str],
    rel: str,
    write: Callable[[BinaryIO], object],
    *,
    executable: bool = False,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``root/rel`` as a whole with what ``write`` writes into a temp file beside it,
    fsynced, then renamed into place -- the one whole-file write. The folders are walked from
    the real ``root`` with ``O_NOFOLLOW`` handles (created when missing), so the write never
    passes through a symlink, committed, untracked or swapped in meanwhile, and never leaves
    ``root``; a symlink, folder or other non-file at ``rel`` itself is refused, not replaced.
    New files get the user's umask. ``before_rename`` runs between the write and the rename
    (the crash tests' kill point)."""
    import secrets  # writers only: every command imports this module, few write

    base, parts = _split(root, rel)
    if (
        not hasattr(os, "O_DIRECTORY") or os.open not in os.supports_dir_fd
    ):  # pragma: no cover - not POSIX
        _no_symlink_below(base, parts)
        _replace_plain(base.joinpath(*parts), write, executable, before_rename)
        return
    folder = _open_folders(base, parts[:-1])
    name = parts[-1]
    target = base.joinpath(*parts)
    tmp = f"{TEMP_PREFIX}{secrets.token_hex(6)}{TEMP_SUFFIX}"
    try:
        try:
            info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise _refused_component(target, True)
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
            0o777 if executable else 0o666,
            dir_fd=folder,
        )
        try:
            with os.fdopen(fd, "wb", closefd=True) as handle:
                write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            if before_rename is not None:
                before_rename()
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            raise
    finally:
        os.close(folder)


def _replace_plain(
    target: Path,
    write: Callable[[BinaryIO], object],
    executable: bool,
    before_rename: Callable[[], None] | None,
) -> None:  # pragma: no cover - not POSIX
    import secrets

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{TEMP_PREFIX}{secrets.token_hex(6)}{TEMP_SUFFIX}"
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o777 if executable else 0o666
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def replace_file(
    root: str | os.PathLike[str],
    rel: str,
    data: bytes,
    *,
    executable: bool = False,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``root/rel`` with ``data`` (see :func:`replace_with`)."""
    replace_with(
        root,
        rel,
        lambda handle: handle.write(data),
        executable=executable,
        before_rename=before_rename,
    )
