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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..gitstore.git import Git

SOURCES_DIR = "sources"
SOURCE_TRAILER = "Llmwiki-Source"
BLOBS_KEY = "sourceBlobs"  # frontmatter: source path -> the blob the page was written from
RETRACTED_KEY = "retracted"  # frontmatter: sources the page drew on that were retracted since
_HEAD_END = "\x1d"
_SPACE = re.compile(r"\s")
_CONTROL = re.compile(r"[\x00-\x1f]")
_BLOB = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def sources_dir(project_prefix: str) -> str:
    """The project's ``sources/`` folder, from the repository root."""
    return f"{project_prefix}/{SOURCES_DIR}" if project_prefix else SOURCES_DIR


def in_sources(path: str, project_prefix: str) -> bool:
    """Whether the repository path ``path`` lies in the project's ``sources/`` folder."""
    return path.startswith(sources_dir(project_prefix) + "/")


def source_entry(item: object) -> str | None:
    """One entry of ``sources:`` (or a key of ``sourceBlobs:``, or of ``retracted:``) as a
    path from the project folder, or None when it names no source file: not a string,
    absolute, climbing out with ``..``, a URL, or no file name with an extension (``sources:
    [Wikipedia]`` in a vault of one's own is a bibliography, not a claim about a file). A
    bare file name (``paper.md``, as the TypeScript tool writes it) means ``sources/paper.md``."""
    if not isinstance(item, str):
        return None
    text = item.strip().replace("\\", "/")
    if not text or text.startswith("/") or "://" in text or ".." in text.split("/"):
        return None
    name = text.rsplit("/", 1)[-1]
    if "." not in name.strip(".") or _SPACE.search(name) or _CONTROL.search(text):
        return None
    return text if "/" in text else f"{SOURCES_DIR}/{text}"


def source_paths(value: Any, project_prefix: str) -> list[str]:
    """A page's frontmatter ``sources:`` as repository paths, in order, without repeats (each
    entry read by :func:`source_entry`)."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    found: dict[str, None] = {}
    for item in items:
        text = source_entry(item)
        if text is not None:
            found[f"{project_prefix}/{text}" if project_prefix else text] = None
    return list(found)


def is_blob_id(value: object) -> bool:
    return isinstance(value, str) and _BLOB.fullmatch(value) is not None


@dataclass(frozen=True)
class Claims:
    """What a page's frontmatter says about where it came from, paths from the project
    folder: ``sources`` (in order), the blob of each it was written from (``sourceBlobs:``,
    which compile and ``propose_page`` write beside the trailers) and the sources it drew on
    that were retracted since (``retracted:``, which an offline ``llmwiki retract`` writes)."""

    sources: tuple[str, ...] = ()
    blobs: Mapping[str, str] = field(default_factory=dict)
    retracted: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.sources or self.retracted)


def claims(data: Mapping[str, Any]) -> Claims:
    """The :class:`Claims` of parsed frontmatter ``data``."""
    if "sources" not in data and RETRACTED_KEY not in data:
        return Claims()
    sources = tuple(source_paths(data.get("sources"), ""))
    blobs: dict[str, str] = {}
    raw = data.get(BLOBS_KEY)
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            path = source_entry(key)
            blob = value.strip().lower() if isinstance(value, str) else None
            if path is not None and is_blob_id(blob) and path in sources:
                blobs.setdefault(path, str(blob))
    return Claims(sources, blobs, tuple(source_paths(data.get(RETRACTED_KEY), "")))


def frontmatter_paths(paths: Iterable[str], project_prefix: str) -> list[str]:
    """Repository paths of sources as written in ``sources:`` (from the project folder)."""
    cut = len(project_prefix) + 1 if project_prefix else 0
    return [p[cut:] for p in paths]


def citation_name(path: str, project_prefix: str) -> str:
    """How a page cites lines of a source: its path inside ``sources/`` (``^[paper.md:3-5]``,
    the reference tool's form, which ``context --include-sources`` reads)."""
    return (
        path[len(sources_dir(project_prefix)) + 1 :] if in_sources(path, project_prefix) else path
    )


def parse_source_trailer(value: str) -> tuple[str, str] | None:
    """``<path> <blob>`` -> (path, blob); None when it is not that shape. The path may hold
    spaces: the blob id is the last word."""
    path, _, blob = value.strip().rpartition(" ")
    blob = blob.lower()
    if not path or not is_blob_id(blob):
        return None
    return path, blob


@dataclass(frozen=True)
class Fed:
    """One page fed by one source: the blob of the source recorded when the page was last
    written from it (None: nothing records it) and the commit whose trailers record it (None
    when the page's own ``sourceBlobs:`` does, or nothing)."""

    page: str
    source: str
    recorded: str | None
    commit: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "source": self.source,
            "recordedBlob": self.recorded,
            "commit": self.commit,
        }


@dataclass
class Provenance:
    """Pages and the sources they name, with the blobs recorded for them (see :func:`provenance`)."""

    sources_of: dict[str, tuple[str, ...]] = field(
        default_factory=dict
    )  # page path -> source paths
    recorded: dict[tuple[str, str], tuple[str, str]] = field(
        default_factory=dict
    )  # (page, source) -> (blob, commit)
    stamped: dict[tuple[str, str], str] = field(
        default_factory=dict
    )  # (page, source) -> the page's sourceBlobs entry

    def of_page(self, page: str) -> list[Fed]:
        """The sources ``page`` names, each with its recorded blob."""
        return [self._fed(page, source) for source in self.sources_of.get(page, ())]

    def feeds(self, source: str) -> list[Fed]:
        """The pages ``source`` feeds, each with the blob of it they record, by page path."""
        return [
            self._fed(page, source)
            for page in sorted(self.sources_of)
            if source in self.sources_of[page]
        ]

    def sources(self) -> list[str]:
        """Every source some page names."""
        return sorted({s for names in self.sources_of.values() for s in names})

    def stale(self, blobs: Mapping[str, str]) -> list[Fed]:
        """Each (page, source) whose recorded blob is not the source's blob in ``blobs``
        (source path -> blob at the revision compared with), by page: what ``compile --stale``
        rewrites. A source not in ``blobs`` (gone) or a pair nothing records is left out."""
        return [
            fed
            for page in sorted(self.sources_of)
            for fed in self.of_page(page)
            if fed.recorded is not None
            and fed.source in blobs
            and blobs[fed.source] != fed.recorded
        ]

    def _fed(self, page: str, source: str) -> Fed:
        own = self.stamped.get((page, source))
        if own is not None:
            return Fed(page, source, own, None)
        blob, commit = self.recorded.get((page, source), (None, None))
        return Fed(page, source, blob, commit)


def page_claims(texts: Mapping[str, str]) -> dict[str, Claims]:
    """Page path -> the :class:`Claims` of its frontmatter, for the pages that make any."""
    from .frontmatter import parse

    found: dict[str, Claims] = {}
    for path, text in texts.items():
        head = text[:65536]
        if "sources" not in head and RETRACTED_KEY not in head:
            continue  # no frontmatter key (the cheap test: most pages of a wiki)
        meta = parse(text)
        made = claims(meta.data) if not meta.error else Claims()
        if made:
            found[path] = made
    return found


def named_sources(texts: Mapping[str, str], project_prefix: str) -> dict[str, tuple[str, ...]]:
    """Page path -> the sources its frontmatter names (repository paths), for the pages
    that name any."""
    return {
        path: tuple(_repo_paths(made.sources, project_prefix))
        for path, made in page_claims(texts).items()
        if made.sources
    }


def _repo_paths(paths: Iterable[str], project_prefix: str) -> list[str]:
    return [f"{project_prefix}/{p}" if project_prefix else p for p in paths]


def recorded_blobs(
    git: Git, rev: str, sources_of: Mapping[str, tuple[str, ...]], pathspec: str = ""
) -> dict[tuple[str, str], tuple[str, str]]:
    """(page, source) -> (blob, commit): for each page and each source it names, the blob
    that the newest commit at or below ``rev`` which wrote the page and records that source
    (an ``Llmwiki-Source`` trailer) records. One ``git log`` over the commits carrying such
    trailers; ``pathspec`` (the wiki root) narrows it."""
    wanted = {(page, source) for page, names in sources_of.items() for source in names}
    if not wanted:
        return {}
    fmt = f"%x1e%H%x1f%(trailers:key={SOURCE_TRAILER},valueonly,unfold,separator=%x1f){_HEAD_END}"
    out = git.log(
        [rev],
        format=fmt,
        grep=f"^{SOURCE_TRAILER}:",
        no_merges=True,
        name_only=True,
        paths=[f":(top){pathspec}" if pathspec else ":(top)"],
        check=False,
    )
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


def provenance(
    git: Git, texts: Mapping[str, str], rev: str, project_prefix: str, pathspec: str = ""
) -> Provenance:
    """The one provenance lookup: which sources each page of ``texts`` (path -> text at
    ``rev``) names, and the blob of each it was written from. That blob is the page's own
    record, ``sourceBlobs:`` (which survives squash merges, rebases and shallow clones, and
    which someone who checked a page against a changed source may update by hand); where a
    page has none for a source, the ``Llmwiki-Source`` trailer of the newest commit below
    ``rev`` that wrote the page (one ``git log``, only then)."""
    made = page_claims(texts)
    found = Provenance()
    for page, claim in made.items():
        if not claim.sources:
            continue
        found.sources_of[page] = tuple(_repo_paths(claim.sources, project_prefix))
        for source, blob in claim.blobs.items():
            found.stamped[(page, _repo_paths([source], project_prefix)[0])] = blob
    unstamped = {
        page: tuple(s for s in names if (page, s) not in found.stamped)
        for page, names in found.sources_of.items()
    }
    found.recorded = recorded_blobs(git, rev, {p: n for p, n in unstamped.items() if n}, pathspec)
    return found


_CITATION = re.compile(
    r"\^\[([^\[\]\n]+)\]"
)  # no "[" inside: linear on a run of "^[" (tests/wiki/test_linear_links.py)
_CITED = re.compile(r"\s*(?P<file>[^\s:;,]+?)(?::(?P<start>\d{1,9})(?:-(?P<end>\d{1,9}))?)?\s*")
_TEXT_EXTS = (".md", ".markdown", ".txt")
# The items of a page's `Sourcing`, told apart by their first field (mypy narrows on it).
# Plain tuples, not NamedTuples: they live in the scan cache, which `marshal` writes, and
# marshal carries exact tuples only.
SourceItem = tuple[Literal["s"], str, int, str]  # ("s", source, line, recorded blob or "")
RetractedItem = tuple[Literal["r"], str, int]  # ("r", source, line)
CitedItem = tuple[Literal["c"], str, int, int, int, int]  # ("c", name, line, col, start, end)
SourcingItem = SourceItem | RetractedItem | CitedItem
Sourcing = tuple[SourcingItem, ...]
"""A page's provenance as the checker caches it with the page's scan (``PageScan.sourcing``),
paths from the project folder, lines 1-based in the file:
``("s", source, line, recorded blob or "")`` for each ``sources:`` entry,
``("r", source, line)`` for each ``retracted:`` entry,
``("c", name, line, col, start, end)`` for each cited file (``^[name:start-end]``; its path
inside ``sources/``; start and end 0 without a line range)."""


def cited(marker: str) -> list[tuple[str, int, int]]:
    """The source files one citation marker's text (``paper.md:3-5, notes.md:7``) cites:
    (name inside ``sources/``, start, end; 0, 0 without lines). A part counts when it has a
    line range or names a ``.md``, ``.markdown`` or ``.txt`` file, and no part may climb out
    (``..``) or be absolute: ``^[an inline footnote.]`` is not a citation."""
    found = []
    for part in re.split(r"[;,]", marker):
        match = _CITED.fullmatch(part)
        if match is None:
            continue
        name = match.group("file").replace("\\", "/")
        start = int(match.group("start") or 0)
        end = int(match.group("end") or start)
        if (
            name.startswith("/")
            or ".." in name.split("/")
            or not (start or name.lower().endswith(_TEXT_EXTS))
        ):
            continue
        if start and not name.rsplit("/", 1)[-1].strip(".").count("."):
            continue  # "see:12" is no file
        found.append((name, start, end))
    return found


def scan_sourcing(
    text: str, raw: str | None, data: Mapping[str, Any], body_line: int, body_offset: int = 0
) -> Sourcing:
    """The :data:`Sourcing` of a page: ``text``, its frontmatter ``raw`` and parsed ``data``
    (empty when malformed), and where its body starts (0-based line index, offset)."""
    out: list[SourcingItem] = []
    made = claims(data) if raw is not None and data else Claims()
    if made:
        lines = raw.split("\n") if raw is not None else []
        keys = {
            found.group(1): i
            for i, row in reversed(list(enumerate(lines)))
            if (found := _TOP_KEY.match(row)) is not None
        }
        tops = sorted(keys.values())

        def line_of(key: str, entry: str) -> int:
            """The file line of ``entry`` under the top-level ``key`` (the key's own line
            when it is not found on its own; 1 without the key)."""
            first = keys.get(key)
            if first is None:
                return 1
            stop = next((i for i in tops if i > first), len(lines))
            name = entry.rsplit("/", 1)[-1]
            for i in range(first, stop):
                if entry in lines[i] or name in lines[i]:
                    return i + 2
            return first + 2

        for source in made.sources:
            out.append(("s", source, line_of("sources", source), made.blobs.get(source, "")))
        for source in made.retracted:
            out.append(("r", source, line_of(RETRACTED_KEY, source)))
    if "^[" in text:
        out += _citations(text, body_line, body_offset)
    return tuple(out)


_CODE_MARKS = ("```", "~~~", "<!--", "\t", "\r", "\n    ")


def _citations(text: str, body_line: int, body_offset: int) -> list[CitedItem]:
    """The ``("c", ...)`` items of a page's body: citation markers outside code. A body with no
    fence, comment, tab or indented line (most pages) is searched at once, masking inline
    code only on the lines holding a marker; any other walks its lines (scanner.prose_lines)."""
    from .scanner import mask_code_spans, prose_lines

    out: list[CitedItem] = []
    if not text.startswith("    ", body_offset) and not any(
        mark in text[body_offset:] for mark in _CODE_MARKS
    ):
        line, counted = body_line, body_offset
        for match in _CITATION.finditer(text, body_offset):
            at = match.start()
            line += text.count("\n", counted, at)
            counted = at
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            row = text[start : end if end >= 0 else len(text)]
            col = at - start
            if "`" in row and mask_code_spans(row)[col : col + 2] != "^[":
                continue  # inside inline code
            out += [
                ("c", name, line + 1, col + 1, first, last)
                for name, first, last in cited(match.group(1))
            ]
        return out
    for index, row in prose_lines(text, body_line):
        if "^[" in row:
            for match in _CITATION.finditer(row):
                out += [
                    ("c", name, index + 1, match.start() + 1, first, last)
                    for name, first, last in cited(match.group(1))
                ]
    return out


@dataclass(frozen=True)
class Finding:
    """Why a page is stale, or names a source that is missing (see :func:`judge`).
    ``reason``: ``changed`` (the recorded blob is not the source's now), ``past-end`` (a
    citation runs past the source's last line), ``retracted`` (``retracted:``) or
    ``missing``; ``line``/``col`` where the page says it (1-based, in the file)."""

    reason: str
    source: str  # from the repository root
    line: int
    col: int = 1
    recorded: str | None = None
    now: str | None = None
    cite: str | None = None  # the citation as written, ^[paper.md:3-5]
    last: int = 0  # the last line it cites
    lines: int = 0  # how many the source has

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.source, "reason": self.reason}
        if self.reason == "changed":
            out.update(recordedBlob=self.recorded, blob=self.now)
        if self.cite is not None:
            out["citation"] = self.cite
        return out


def judge(
    sourcing: Sourcing,
    project_prefix: str,
    blob_of: Callable[[str], str | None],
    lines_of: Callable[[str], int | None],
) -> list[Finding]:
    """THE staleness rule, for one page's :data:`Sourcing` against the sources of one revision
    (``blob_of``: a source's blob, None when it does not exist; ``lines_of``: how many lines
    it has). Only sources in the project's ``sources/`` folder are judged. The check reports
    the findings (checks/stale.py), ``context --json`` gives each page's freshness from them."""
    folder = sources_dir(project_prefix) + "/"
    lead = f"{project_prefix}/" if project_prefix else ""
    inside = f"{SOURCES_DIR}/"
    out: list[Finding] = []
    for item in sourcing:
        if item[0] == "c":
            _, name, line, col, start, end = item
            source = folder + name
            if blob_of(source) is None:
                out.append(Finding("missing", source, line, col, cite=_cite(name, start, end)))
            elif start:
                count, last = lines_of(source), max(start, end)
                if count is not None and last > count:
                    out.append(
                        Finding(
                            "past-end",
                            source,
                            line,
                            col,
                            cite=_cite(name, start, end),
                            last=last,
                            lines=count,
                        )
                    )
            continue
        if not item[1].startswith(inside):
            continue  # a claim about a file elsewhere: not this rule's
        if item[0] == "r":
            _, rel, line = item
            out.append(Finding("retracted", lead + rel, line))
            continue
        _, rel, line, recorded = item
        source = lead + rel
        now = blob_of(source)
        if now is None:
            out.append(Finding("missing", source, line))
        elif recorded and recorded != now:
            out.append(Finding("changed", source, line, recorded=recorded, now=now))
    return out


def _cite(name: str, start: int, end: int) -> str:
    return f"^[{name}:{start}-{end}]" if start else f"^[{name}]"


def freshness(sourcing: Sourcing, findings: list[Finding]) -> str:
    """``stale`` with any finding; ``fresh`` when the page names sources (in ``sources/``)
    and records the blob of each; else ``unknown`` (no provenance, or not all recorded)."""
    if findings:
        return "stale"
    recorded = [
        item[3] for item in sourcing if item[0] == "s" and item[1].startswith(f"{SOURCES_DIR}/")
    ]
    return "fresh" if recorded and all(recorded) else "unknown"


def line_count(data: bytes) -> int:
    """Lines of a source as its citations number them (compile and ``context
    --include-sources`` split the decoded text with ``str.splitlines``)."""
    return len(data.decode("utf-8-sig", "replace").splitlines())


def text_sourcing(text: str) -> Sourcing:
    """The :data:`Sourcing` of a page's text."""
    from .frontmatter import parse

    meta = parse(text)
    return scan_sourcing(text, meta.raw, meta.data, meta.body_line, meta.body_offset)


def with_recorded(sourcing: Sourcing, fed: Iterable[Fed], project_prefix: str) -> Sourcing:
    """``sourcing`` with each named source's recorded blob as the one lookup found it
    (``fed``: :meth:`Provenance.of_page`; a page's own record, else the trailers)."""
    cut = len(project_prefix) + 1 if project_prefix else 0
    found = {f.source[cut:]: f.recorded for f in fed if f.recorded}
    return tuple(
        (item[0], item[1], item[2], item[3] or found.get(item[1], "")) if item[0] == "s" else item
        for item in sourcing
    )


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
        dumped = yaml.safe_dump(
            {key: value}, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=False
        )
        return dumped.splitlines(keepends=True)

    raw, offset, _ = split(text)
    if raw is None:
        head = [
            line
            for key, value in updates.items()
            if value is not None
            for line in render(key, value)
        ]
        return "---\n" + "".join(head) + "---\n\n" + text.lstrip("\n") if head else text
    lines = raw.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    blocks: list[tuple[str | None, list[str]]] = []  # (top-level key or None, its lines)
    for line in lines:
        found = _TOP_KEY.match(line)
        if (
            found is not None or not blocks or line.startswith("#")
        ):  # a comment line stays where it is
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
    return (
        "---\n"
        + "".join(line for k, v in data.items() for line in render(k, v))
        + "---\n"
        + text[offset:]
    )


def stamp(text: str, sources: Iterable[tuple[str, str]], project_prefix: str) -> str:
    """``text`` with frontmatter naming the ``sources`` ((repository path, blob) pairs) it
    was written from: ``sources:`` (paths from the project folder) and ``sourceBlobs:``
    (path -> blob). The blobs there are a copy for readers -- and what makes a page rewritten
    from a changed source always differ from the page before; the record that counts is the
    ``Llmwiki-Source`` trailers of the commit that wrote it."""
    pairs = list(dict.fromkeys(sources))
    paths = frontmatter_paths([path for path, _ in pairs], project_prefix)
    return set_keys(
        text, {"sources": paths, BLOBS_KEY: {p: blob for p, (_, blob) in zip(paths, pairs)}}
    )
