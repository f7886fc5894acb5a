"""Provenance of pages written from sources (DESIGN §6.1).

A page written from sources (by ``llmwiki compile``, or proposed over MCP with ``sources``)
names them in its frontmatter, ``sources:`` (paths from the project folder, such as
``sources/paper.md``); the blob id of each source it was written from is recorded in the
``Llmwiki-Source: <path> <blob>`` trailers of the commit that wrote it. So "where did this
page come from?" is ``git log``, and "is it stale?" is "the recorded blob is not the
source's blob now": no clocks, no guesses.

:func:`provenance` is the one lookup of both halves ("which pages does source X feed, with
what blob?"): compile uses it to find what changed, ``review show`` and ``context --json``
to show it, and a staleness check can compare it with the blobs of a revision.

The project's ``sources/`` folder holds the user's raw material: files there are never
pages, even when the wiki root is the project folder itself (:func:`in_sources`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..gitstore.git import Git

SOURCES_DIR = "sources"
SOURCE_TRAILER = "Llmwiki-Source"
_HEAD_END = "\x1d"


def sources_dir(project_prefix: str) -> str:
    """The project's ``sources/`` folder, from the repository root."""
    return f"{project_prefix}/{SOURCES_DIR}" if project_prefix else SOURCES_DIR


def in_sources(path: str, project_prefix: str) -> bool:
    """Whether the repository path ``path`` lies in the project's ``sources/`` folder."""
    return path.startswith(sources_dir(project_prefix) + "/")


def source_paths(value: Any, project_prefix: str) -> list[str]:
    """A page's frontmatter ``sources:`` as repository paths, in order, without repeats.

    An entry is a path from the project folder (``sources/paper.md``); a bare file name
    (``paper.md``, as the TypeScript tool writes it) means ``sources/paper.md``. Entries that
    are not strings, are absolute or climb out with ``..`` are ignored."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    found: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            continue
        text = item.strip().replace("\\", "/")
        if not text or text.startswith("/") or ".." in text.split("/"):
            continue
        if "/" not in text:
            text = f"{SOURCES_DIR}/{text}"
        found[f"{project_prefix}/{text}" if project_prefix else text] = None
    return list(found)


def frontmatter_paths(paths: Iterable[str], project_prefix: str) -> list[str]:
    """Repository paths of sources as written in ``sources:`` (from the project folder)."""
    cut = len(project_prefix) + 1 if project_prefix else 0
    return [p[cut:] for p in paths]


def citation_name(path: str, project_prefix: str) -> str:
    """How a page cites lines of a source: its path inside ``sources/`` (``^[paper.md:3-5]``,
    the reference tool's form, which ``context --include-sources`` reads)."""
    return path[len(sources_dir(project_prefix)) + 1:] if in_sources(path, project_prefix) else path


def parse_source_trailer(value: str) -> tuple[str, str] | None:
    """``<path> <blob>`` -> (path, blob); None when it is not that shape. The path may hold
    spaces: the blob id is the last word."""
    path, _, blob = value.strip().rpartition(" ")
    blob = blob.lower()
    if not path or len(blob) not in (40, 64) or any(c not in "0123456789abcdef" for c in blob):
        return None
    return path, blob


@dataclass(frozen=True)
class Fed:
    """One page fed by one source: the blob of the source recorded when the page was last
    written from it (None: no commit records it) and that commit."""

    page: str
    source: str
    recorded: str | None
    commit: str | None

    def to_json(self) -> dict[str, Any]:
        return {"page": self.page, "source": self.source, "recordedBlob": self.recorded, "commit": self.commit}


@dataclass
class Provenance:
    """Pages and the sources they name, with the blobs recorded for them (see :func:`provenance`)."""

    sources_of: dict[str, tuple[str, ...]] = field(default_factory=dict)  # page path -> source paths
    recorded: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (page, source) -> (blob, commit)

    def of_page(self, page: str) -> list[Fed]:
        """The sources ``page`` names, each with its recorded blob."""
        return [self._fed(page, source) for source in self.sources_of.get(page, ())]

    def feeds(self, source: str) -> list[Fed]:
        """The pages ``source`` feeds, each with the blob of it they record, by page path."""
        return [self._fed(page, source) for page in sorted(self.sources_of) if source in self.sources_of[page]]

    def sources(self) -> list[str]:
        """Every source some page names."""
        return sorted({s for names in self.sources_of.values() for s in names})

    def _fed(self, page: str, source: str) -> Fed:
        blob, commit = self.recorded.get((page, source), (None, None))
        return Fed(page, source, blob, commit)


def named_sources(texts: Mapping[str, str], project_prefix: str) -> dict[str, tuple[str, ...]]:
    """Page path -> the sources its frontmatter names, for the pages that name any."""
    from .frontmatter import parse

    found: dict[str, tuple[str, ...]] = {}
    for path, text in texts.items():
        if "sources" not in text[:65536]:
            continue  # no frontmatter key (the cheap test: most pages of a wiki)
        meta = parse(text)
        paths = source_paths(meta.data.get("sources"), project_prefix) if not meta.error else []
        if paths:
            found[path] = tuple(paths)
    return found


def recorded_blobs(git: Git, rev: str, sources_of: Mapping[str, tuple[str, ...]],
                   pathspec: str = "") -> dict[tuple[str, str], tuple[str, str]]:
    """(page, source) -> (blob, commit): for each page and each source it names, the blob
    that the newest commit at or below ``rev`` which wrote the page and records that source
    (an ``Llmwiki-Source`` trailer) records. One ``git log`` over the commits carrying such
    trailers; ``pathspec`` (the wiki root) narrows it."""
    wanted = {(page, source) for page, names in sources_of.items() for source in names}
    if not wanted:
        return {}
    fmt = f"%x1e%H%x1f%(trailers:key={SOURCE_TRAILER},valueonly,unfold,separator=%x1f){_HEAD_END}"
    out = git.log([rev], format=fmt, grep=f"^{SOURCE_TRAILER}:", no_merges=True, name_only=True,
                  paths=[f":(top){pathspec}" if pathspec else ":(top)"], check=False)
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for record in out.decode("utf-8", "surrogateescape").split("\x1e"):
        head, sep, names = record.partition(_HEAD_END)
        if not sep:
            continue
        commit, _, trailers = head.partition("\x1f")
        blobs: dict[str, str] = {}
        for value in trailers.split("\x1f"):
            parsed = parse_source_trailer(value)
            if parsed is not None:
                blobs.setdefault(parsed[0], parsed[1])
        if not blobs:
            continue
        for page in names.lstrip("\0\n").split("\0"):
            for source in sources_of.get(page, ()):
                key = (page, source)
                if key not in found and source in blobs:
                    found[key] = (blobs[source], commit.strip())
        if len(found) == len(wanted):
            break
    return found


def provenance(git: Git, texts: Mapping[str, str], rev: str, project_prefix: str, pathspec: str = "") -> Provenance:
    """The one provenance lookup: which sources each page of ``texts`` (path -> text at
    ``rev``) names, and the blob of each recorded by the commits below ``rev``."""
    sources_of = named_sources(texts, project_prefix)
    return Provenance(sources_of, recorded_blobs(git, rev, sources_of, pathspec))


_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:")


def set_keys(text: str, updates: Mapping[str, Any]) -> str:
    """``text`` with the frontmatter keys of ``updates`` set (None removes a key): each key's
    lines are replaced where it stands, new keys come last, and every other line of the
    frontmatter -- unknown keys, comments, their order -- stays byte for byte (DESIGN §2).
    A page without frontmatter gets one. Frontmatter this line editor cannot follow (the
    result would not parse to the same data) is rewritten from its parsed data, in order."""
    import yaml

    from .frontmatter import parse, split

    def render(key: str, value: Any) -> list[str]:
        dumped = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True, width=10**6,
                                default_flow_style=False)
        return dumped.splitlines(keepends=True)

    raw, offset, _ = split(text)
    if raw is None:
        head = [line for key, value in updates.items() if value is not None for line in render(key, value)]
        return "---\n" + "".join(head) + "---\n\n" + text.lstrip("\n") if head else text
    lines = raw.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    blocks: list[tuple[str | None, list[str]]] = []  # (top-level key or None, its lines)
    for line in lines:
        found = _TOP_KEY.match(line)
        if found is not None or not blocks or line.startswith("#"):  # a comment line stays where it is
            blocks.append((found.group(1) if found else None, [line]))
        else:
            blocks[-1][1].append(line)
    out: list[str] = []
    done: set[str] = set()
    for key, block in blocks:
        if key is not None and key in updates:
            if key not in done and updates[key] is not None:
                out += render(key, updates[key])
            done.add(key)
        else:
            out += block
    for key, value in updates.items():
        if key not in done and value is not None:
            out += render(key, value)
    result = "---\n" + "".join(out) + "---\n" + text[offset:]
    before, after = parse(text), parse(result)
    expected = {k: v for k, v in {**before.data, **updates}.items() if v is not None}
    if not after.error and dict(after.data) == expected:
        return result
    data = {k: v for k, v in {**before.data, **updates}.items() if v is not None}
    return "---\n" + "".join(line for k, v in data.items() for line in render(k, v)) + "---\n" + text[offset:]


BLOBS_KEY = "sourceBlobs"


def stamp(text: str, sources: Iterable[tuple[str, str]], project_prefix: str) -> str:
    """``text`` with frontmatter naming the ``sources`` ((repository path, blob) pairs) it
    was written from: ``sources:`` (paths from the project folder) and ``sourceBlobs:``
    (path -> blob). The blobs there are a copy for readers -- and what makes a page rewritten
    from a changed source always differ from the page before; the record that counts is the
    ``Llmwiki-Source`` trailers of the commit that wrote it."""
    pairs = list(dict.fromkeys(sources))
    paths = frontmatter_paths([path for path, _ in pairs], project_prefix)
    return set_keys(text, {"sources": paths, BLOBS_KEY: {p: blob for p, (_, blob) in zip(paths, pairs)}})
