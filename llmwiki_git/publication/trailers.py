"""The candidate trailer block: written by us in a fixed order, read back through git.

Every key is one row of :data:`SCHEMA`: its name, the field that holds it, how many times it
appears (exactly once, once per file, at most once, any number, or exactly once when the
kind's row in ``kinds.py`` says the kind carries it), and how its value is read and written.
``Trailers.block`` writes the rows in table order and ``parse`` reads them back by the same
rules: a new key is its row here and its field (of ``Recorded`` for a key a run records),
and the one place that knows its value.

Reading uses ``git log --format=%(trailers:...)``, which (unlike plain
``interpret-trailers --parse``) is not fooled by a ``---`` line in the message body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import TrailerBlockError
from ..gitstore.git import Git
from ..wiki.provenance import SOURCE_TRAILER, parse_source_trailer
from . import kinds
from .kinds import (  # re-exported: the names other modules import from here
    COMPILE_KIND,
    KIND,
    KINDS,
    MERGE_KIND,
    MOVE_KIND,
    MULTI_KINDS,
    PAGE_KIND,
    RETRACT_KIND,
    REWRITE_KINDS,
)

__all__ = [
    "ABSENT",
    "COMPILE_KIND",
    "KIND",
    "KINDS",
    "MERGE_KIND",
    "MOVE_KIND",
    "MULTI_KINDS",
    "PAGE_KIND",
    "REPLAYED",
    "RETRACT_KIND",
    "REWRITE_KINDS",
    "SCHEMA",
    "FileTrailer",
    "Key",
    "Recorded",
    "Trailers",
    "message",
    "parse",
    "read_many",
    "with_files",
]

SOURCE = SOURCE_TRAILER  # <path> <blob id>, one per source the pages were written from (wiki/provenance.py reads it)
REPLAYED = "Llmwiki-Replayed-From"  # added at approval to a replayed commit, never parsed here
ABSENT = "absent"  # a precondition: no page at the target; a page/1 body digest: a deletion
_SEP = "\x1f"
_REC = "\x1e"

#: How many times a key appears in one block (see :class:`Key`).
ONE, PER_FILE, OPTIONAL, MANY, FLAGGED = "one", "per-file", "optional", "many", "flagged"


@dataclass(frozen=True)
class FileTrailer:
    """One file a candidate writes: its path, what was there when it was written (``absent``
    or ``blob <id>``) and the digest of its new body (``absent``: deleted)."""

    target: str
    precondition: str
    body_digest: str


@dataclass(frozen=True)
class Recorded:
    """What a run's trailers record after its files: the sources ((path, blob) pairs) the
    pages were written from, the model and the prompt version, what a move or merge moved
    where, the source a retraction deletes. The run that knows a value sets it; the stager
    passes it through (a new run-wide key is a field here and its row in :data:`SCHEMA`)."""

    sources: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    prompt: str | None = None
    move_from: str | None = (
        None  # move/1: OLD as given to `llmwiki mv`; merge/1: the page folded in
    )
    move_to: str | None = None  # move/1: NEW; merge/1: the page it is folded into
    retracts: str | None = None  # a retraction: the source it deletes

    @property
    def move(self) -> tuple[str, str] | None:
        """A move's or merge's (from, to); None for any other kind."""
        if self.move_from is None or self.move_to is None:
            return None
        return self.move_from, self.move_to


def _text(value: str) -> str | None:
    return value or None


def _source(value: str) -> tuple[str, str] | None:
    return parse_source_trailer(value)


def _source_text(value: Any) -> str:
    return f"{value[0]} {value[1]}"


@dataclass(frozen=True)
class Key:
    """One trailer key: ``field`` is an attribute of ``Trailers`` (``ONE``), of each
    ``FileTrailer`` (``PER_FILE``: written once per file, the per-file keys one group after
    another) or of ``Recorded`` (the others). ``count``: ``ONE`` exactly once, ``PER_FILE``
    as many as the others of its group (at least one; several only for a multi-file kind),
    ``OPTIONAL`` at most once, ``MANY`` any number (a value each), ``FLAGGED`` exactly once
    when the kind's row has ``flag`` set and never otherwise. ``read`` turns a value into
    the field's (None: malformed), ``write`` back."""

    key: str
    field: str
    count: str
    flag: str = ""
    read: Callable[[str], Any] = _text
    write: Callable[[Any], str] = str


SCHEMA: tuple[Key, ...] = (
    Key("Llmwiki-Candidate", "candidate", ONE),
    Key("Llmwiki-Kind", "kind", ONE),
    Key("Llmwiki-Target", "target", PER_FILE),
    Key("Llmwiki-Precondition", "precondition", PER_FILE),
    Key("Llmwiki-Body-Digest", "body_digest", PER_FILE),
    Key("Llmwiki-Base", "base", ONE),
    Key("Llmwiki-Move-From", "move_from", FLAGGED, flag="rewrites_links"),
    Key("Llmwiki-Move-To", "move_to", FLAGGED, flag="rewrites_links"),
    Key("Llmwiki-Retracts", "retracts", FLAGGED, flag="retracts"),
    Key(SOURCE, "sources", MANY, read=_source, write=_source_text),
    Key("Llmwiki-Model", "model", OPTIONAL),
    Key("Llmwiki-Prompt", "prompt", OPTIONAL),
)
_FILE_KEYS = tuple(k for k in SCHEMA if k.count == PER_FILE)


@dataclass(frozen=True)
class Trailers:
    """The trailer block: the candidate, its kind, every file it writes (``files``: for a
    single-file kind, the only one), its base, and what the run recorded (``recorded``)."""

    candidate: str
    kind: str
    files: tuple[FileTrailer, ...]
    base: str
    recorded: Recorded = Recorded()

    @property
    def target(self) -> str:
        """The first (for a single-file kind: the only) file's path."""
        return self.files[0].target

    @property
    def precondition(self) -> str:
        return self.files[0].precondition

    @property
    def body_digest(self) -> str:
        return self.files[0].body_digest

    @property
    def more(self) -> tuple[FileTrailer, ...]:
        return self.files[1:]

    @property
    def sources(self) -> tuple[tuple[str, str], ...]:
        return self.recorded.sources

    @property
    def model(self) -> str | None:
        return self.recorded.model

    @property
    def prompt(self) -> str | None:
        return self.recorded.prompt

    @property
    def move(self) -> tuple[str, str] | None:
        """A move or merge (REWRITE_KINDS): (from, to)."""
        return self.recorded.move

    @property
    def retracts(self) -> str | None:
        return self.recorded.retracts

    def provenance(self) -> dict[str, object]:
        """What the pages were written from, as `review show` reports it (empty for a plain
        edit): each source with its blob, the model and the prompt, and for a retraction the
        source it removes. A new optional key shown with them goes here and in
        :data:`SCHEMA`, nowhere else."""
        if not (self.sources or self.model or self.prompt or self.retracts):
            return {}
        return {
            "sources": [{"path": path, "blob": blob} for path, blob in self.sources],
            "model": self.model,
            "prompt": self.prompt,
            **({"retracts": self.retracts} if self.retracts else {}),
        }

    def block(self) -> str:
        """The block, one ``key: value`` line per value, in :data:`SCHEMA` order."""
        lines: list[tuple[str, str]] = []
        for key in SCHEMA:
            if key.count == PER_FILE:
                if key is _FILE_KEYS[0]:
                    lines += [(k.key, getattr(f, k.field)) for f in self.files for k in _FILE_KEYS]
                continue
            value = getattr(self if key.count == ONE else self.recorded, key.field)
            values = value if key.count == MANY else () if value is None else (value,)
            lines += [(key.key, key.write(v)) for v in values]
        return "".join(f"{key}: {value}\n" for key, value in lines)


def with_files(
    candidate: str, kind: str, files: list[FileTrailer], base: str, recorded: Recorded = Recorded()
) -> Trailers:
    """The trailers of a candidate writing ``files`` (at least one), with what the run records."""
    if not files:
        raise ValueError("a candidate writes at least one file")
    return Trailers(candidate, kind, tuple(files), base, recorded)


def message(subject: str, body: str, trailers: Trailers) -> str:
    """A commit message ending with the trailer block as its own last paragraph."""
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    return "\n\n".join(parts) + "\n\n" + trailers.block()


def read_many(git: Git, commits: list[str]) -> dict[str, dict[str, list[str]]]:
    """Trailers of many commits in one ``git log --no-walk`` call: {commit: {key: [values]}}."""
    if not commits:
        return {}
    fmt = f"%H{_SEP}%(trailers:only,unfold,separator=%x1f){_REC}"
    out = git.log(commits, format=fmt, no_walk=True).decode("utf-8", "replace")
    result: dict[str, dict[str, list[str]]] = {}
    for record in out.split(_REC):
        record = record.strip("\n")
        if not record:
            continue
        commit, _, rest = record.partition(_SEP)
        found: dict[str, list[str]] = {}
        for line in rest.split(_SEP):
            key, sep, value = line.partition(":")
            if sep:
                found.setdefault(key.strip(), []).append(value.strip())
        result[commit.strip()] = found
    return result


def _read(key: Key, values: list[str], carried: bool) -> Any:
    """The field value of ``key`` from its ``values`` by its count rule; ``carried``: a
    ``FLAGGED`` key's kind carries it."""
    if key.count == MANY:
        read = [key.read(v) for v in values]
        if None in read:
            raise TrailerBlockError(key.key)
        return tuple(read)
    wanted = {ONE: (1,), OPTIONAL: (0, 1), FLAGGED: (1,) if carried else (0,)}[key.count]
    if len(values) not in wanted:
        raise TrailerBlockError(key.key)
    value = key.read(values[0]) if values else None
    if values and value is None and key.count != OPTIONAL:
        raise TrailerBlockError(key.key)
    return value


def parse(found: Mapping[str, list[str]]) -> Trailers | None:
    """The block, or None when it is malformed or forged: every key by its :data:`SCHEMA`
    rule -- exactly one candidate, kind and base; as many targets, preconditions and digests
    as each other (one, unless the kind's row says ``files``), no target twice; well-formed
    sources; at most one model and prompt; a move's from and to, or a retraction's source,
    exactly when the kind's row says it carries them."""
    named = found.get(SCHEMA[1].key) or [""]
    row = kinds.row(named[0]) if len(named) == 1 else None
    columns = [found.get(k.key, []) for k in _FILE_KEYS]
    count = len(columns[0])
    if count == 0 or any(len(c) != count for c in columns):
        return None
    if any(not value for column in columns for value in column) or len(set(columns[0])) != count:
        return None
    if count > 1 and not (row is not None and row.files):
        return None
    values: dict[str, Any] = {}
    try:
        for key in SCHEMA:
            if key.count != PER_FILE:
                carried = bool(row is not None and key.flag and getattr(row, key.flag))
                values[key.field] = _read(key, found.get(key.key, []), carried)
    except TrailerBlockError:
        return None
    files = tuple(FileTrailer(*column) for column in zip(*columns))
    own = {f.name for f in fields(Trailers)}
    recorded = replace(Recorded(), **{k: v for k, v in values.items() if k not in own})
    return Trailers(values["candidate"], values["kind"], files, values["base"], recorded)
