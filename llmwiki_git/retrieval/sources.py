"""Source citations in pages (``^[paper.md:42-58]``) and line windows read from ``sources/``,
confined to that folder: absolute paths, any ``..`` segment and symlinks that escape are
refused."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import confine
from ..errors import PathRefused, SourceRefused

_MARKER = re.compile(
    r"\^\[([^\[\]\n]+)\]"
)  # no "[" inside: linear on a run of "^[" (tests/wiki/test_linear_links.py)
_SPAN = re.compile(r"^(?P<file>.+?)(?::(?P<start>\d+)(?:-(?P<end>\d+))?)?$")
MAX_WINDOWS = 20
MAX_LINES = 30


@dataclass(frozen=True)
class SourceCitation:
    file: str
    start: int | None = None
    end: int | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"file": self.file}
        if self.start is not None:
            out["start"] = self.start
            out["end"] = self.end if self.end is not None else self.start
        return out


def citations(body: str) -> list[SourceCitation]:
    found: dict[tuple[str, int | None, int | None], SourceCitation] = {}
    for marker in _MARKER.finditer(body):
        for part in re.split(r"[;,]", marker.group(1)):
            match = _SPAN.match(part.strip())
            if not match or not match.group("file"):
                continue
            start = int(match.group("start")) if match.group("start") else None
            end = int(match.group("end")) if match.group("end") else start
            c = SourceCitation(match.group("file").strip(), start, end)
            found.setdefault((c.file, c.start, c.end), c)
    return list(found.values())


MAX_SOURCE_BYTES = 16 * 1024 * 1024
"""A cited source larger than this is refused (not read): bounded time and memory."""


def confined_path(sources_root: Path, name: str) -> Path:
    """The real path of ``name`` inside ``sources_root``, which must itself really be a
    folder of its project (``sources/`` as a symlink to /etc is refused); SourceRefused
    otherwise."""
    if not name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise SourceRefused(f"absolute or empty path {name!r}")
    try:
        confine.confined(sources_root.parent, sources_root.name)
        if not sources_root.is_dir():
            raise SourceRefused("there is no sources/ folder")
        return Path(confine.confined(sources_root, name))
    except PathRefused as exc:
        raise SourceRefused(exc.reason) from exc


def window(sources_root: Path, citation: SourceCitation) -> dict[str, object]:
    """Lines ``start..end`` (1-based, inclusive, at most 30) of a cited source file."""
    if citation.start is None:
        raise SourceRefused("citation has no line range")
    path = confined_path(sources_root, citation.file)
    try:
        data = confine.read_file(path, max_bytes=MAX_SOURCE_BYTES, name=citation.file)
    except PathRefused as exc:
        raise SourceRefused(exc.reason) from exc
    lines = data.decode("utf-8", errors="replace").splitlines()
    start = citation.start
    if start < 1 or start > len(lines):
        raise SourceRefused(f"line {start} is beyond the end of {citation.file}")
    end = min(citation.end or start, len(lines), start + MAX_LINES - 1)
    return {
        "file": citation.file,
        "start": start,
        "end": end,
        "text": "\n".join(lines[start - 1 : end]),
    }
