"""The candidate trailer block: written by us in a fixed order, read back through git.

Reading uses ``git log --format=%(trailers:...)``, which (unlike plain
``interpret-trailers --parse``) is not fooled by a ``---`` line in the message body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..gitstore.git import Git
from ..wiki.provenance import SOURCE_TRAILER, parse_source_trailer

KEYS = (
    "Llmwiki-Candidate",
    "Llmwiki-Kind",
    "Llmwiki-Target",
    "Llmwiki-Precondition",
    "Llmwiki-Body-Digest",
    "Llmwiki-Base",
)
FILE_KEYS = KEYS[2:5]  # written once per file, in this order, one group after another
SOURCE = SOURCE_TRAILER  # <path> <blob id>, one per source the pages were written from (wiki/provenance.py reads it)
MODEL = "Llmwiki-Model"  # <provider>/<model> that wrote the pages
PROMPT = "Llmwiki-Prompt"  # <prompt name>/<version>
RETRACTS = "Llmwiki-Retracts"  # <path>: the source a retraction removes (and that its pages no longer draw on)
REPLAYED = "Llmwiki-Replayed-From"
KIND = "validated-answer/1"
PAGE_KIND = "page/1"  # any page edit, addition or deletion (`review stage`, MCP propose_page)
COMPILE_KIND = (
    "compile/1"  # a `llmwiki compile` run: several pages, each listed with its precondition
)
MOVE_KIND = (
    "move/1"  # `llmwiki mv --review`: a page moved (deleted, added) and every link to it rewritten
)
MERGE_KIND = (
    "merge/1"  # `llmwiki merge-pages A B`: B folded into A, B deleted, every link to B rewritten
)
RETRACT_KIND = (
    "retraction/1"  # `llmwiki retract`: a source deleted, the pages it fed deleted or rewritten
)
KINDS = (KIND, PAGE_KIND, COMPILE_KIND, MOVE_KIND, MERGE_KIND, RETRACT_KIND)
#: Kinds whose one commit writes several files, each listed (target, precondition, digest)
#: and each under the rules of a page edit (DESIGN §6: compile runs, moves, merges, retractions)
#: -- except that a retraction also deletes the one source its Llmwiki-Retracts trailer names.
MULTI_KINDS = frozenset({COMPILE_KIND, MOVE_KIND, MERGE_KIND, RETRACT_KIND})
#: Multi-file kinds that keep links whole (review/rewrites.py): their trailers name the move
#: (Llmwiki-Move-From / -To) and their commit must be exactly the plan made from it at the base.
REWRITE_KINDS = frozenset({MOVE_KIND, MERGE_KIND})
MOVE_FROM = (
    "Llmwiki-Move-From"  # move/1: OLD as given to `llmwiki mv`; merge/1: the page folded in (B)
)
MOVE_TO = "Llmwiki-Move-To"  # move/1: NEW; merge/1: the page it is folded into (A)
ABSENT = "absent"  # a precondition: no page at the target; a page/1 body digest: a deletion
_SEP = "\x1f"
_REC = "\x1e"


@dataclass(frozen=True)
class FileTrailer:
    """One file a candidate writes: its path, what was there when it was written (``absent``
    or ``blob <id>``) and the digest of its new body (``absent``: deleted)."""

    target: str
    precondition: str
    body_digest: str


@dataclass(frozen=True)
class Trailers:
    """The trailer block. ``target``, ``precondition`` and ``body_digest`` describe the first
    (for single-file kinds: the only) file; ``more`` the others of a multi-file kind.
    ``sources`` ((path, blob) pairs), ``model`` and ``prompt`` record provenance."""

    candidate: str
    kind: str
    target: str
    precondition: str
    body_digest: str
    base: str
    more: tuple[FileTrailer, ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    prompt: str | None = None
    move: tuple[str, str] | None = None  # a move or merge (REWRITE_KINDS): (from, to)
    retracts: str | None = None

    def provenance(self) -> dict[str, object]:
        """What the pages were written from, as `review show` reports it (empty for a plain
        edit): each source with its blob, the model and the prompt, and for a retraction the
        source it removes. A new optional key shown with them goes here and in `block`,
        nowhere else."""
        if not (self.sources or self.model or self.prompt or self.retracts):
            return {}
        return {
            "sources": [{"path": path, "blob": blob} for path, blob in self.sources],
            "model": self.model,
            "prompt": self.prompt,
            **({"retracts": self.retracts} if self.retracts else {}),
        }

    @property
    def files(self) -> tuple[FileTrailer, ...]:
        return (FileTrailer(self.target, self.precondition, self.body_digest), *self.more)

    def block(self) -> str:
        lines = [(KEYS[0], self.candidate), (KEYS[1], self.kind)]
        for f in self.files:
            lines += list(zip(FILE_KEYS, (f.target, f.precondition, f.body_digest)))
        lines.append((KEYS[5], self.base))
        if self.move is not None:
            lines += [(MOVE_FROM, self.move[0]), (MOVE_TO, self.move[1])]
        if self.retracts:
            lines.append((RETRACTS, self.retracts))
        lines += [(SOURCE, f"{path} {blob}") for path, blob in self.sources]
        lines += [
            (key, value) for key, value in ((MODEL, self.model), (PROMPT, self.prompt)) if value
        ]
        return "".join(f"{key}: {value}\n" for key, value in lines)


@dataclass(frozen=True)
class Recorded:
    """What a run's trailers record after its files: the sources ((path, blob) pairs) the
    pages were written from, the model and the prompt version, what a move or merge moved
    where, the source a retraction deletes. The run that knows a value sets it; the stager
    passes it through (a new run-wide key is a field here, in `Trailers`, `block` and
    `parse`, and the run that sets it: nothing in between)."""

    sources: tuple[tuple[str, str], ...] = ()
    model: str | None = None
    prompt: str | None = None
    move: tuple[str, str] | None = None  # a move or merge: what moved where (Llmwiki-Move-From/-To)
    retracts: str | None = None  # a retraction: the source it deletes


def with_files(
    candidate: str, kind: str, files: list[FileTrailer], base: str, recorded: Recorded = Recorded()
) -> Trailers:
    """The trailers of a candidate writing ``files`` (at least one), with what the run records."""
    first, *rest = files
    return Trailers(
        candidate,
        kind,
        first.target,
        first.precondition,
        first.body_digest,
        base,
        tuple(rest),
        recorded.sources,
        recorded.model,
        recorded.prompt,
        recorded.move,
        recorded.retracts,
    )


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


def parse(found: Mapping[str, list[str]]) -> Trailers | None:
    """The block, or None when it is malformed or forged: exactly one candidate, kind and
    base; as many targets, preconditions and digests as each other (one, unless the kind is
    multi-file), no target twice; well-formed sources; at most one model and prompt; one
    move (from and to) for a move or merge, none for any other kind; one retracted source for a
    retraction, none for any other kind."""

    def one(key: str) -> str | None:
        got = found.get(key, [])
        return got[0] if len(got) == 1 and got[0] else None

    candidate, kind, base = one(KEYS[0]), one(KEYS[1]), one(KEYS[5])
    columns = [found.get(key, []) for key in FILE_KEYS]
    count = len(columns[0])
    if (
        candidate is None
        or kind is None
        or base is None
        or count == 0
        or any(len(c) != count for c in columns)
    ):
        return None
    if any(not value for column in columns for value in column) or len(set(columns[0])) != count:
        return None
    if count > 1 and kind not in MULTI_KINDS:
        return None
    sources = []
    for value in found.get(SOURCE, []):
        parsed = parse_source_trailer(value)
        if parsed is None:
            return None
        sources.append(parsed)
    if any(len(found.get(key, [])) > 1 for key in (MODEL, PROMPT)):
        return None
    moved = (one(MOVE_FROM), one(MOVE_TO))
    rewrite = kind in REWRITE_KINDS
    if any(len(found.get(key, [])) != rewrite for key in (MOVE_FROM, MOVE_TO)) or (
        rewrite and None in moved
    ):
        return None
    retracts = one(RETRACTS)
    if (kind == RETRACT_KIND) != (retracts is not None) or len(found.get(RETRACTS, [])) > (
        kind == RETRACT_KIND
    ):
        return None
    files = [FileTrailer(*values) for values in zip(*columns)]
    return with_files(
        candidate,
        kind,
        files,
        base,
        Recorded(
            sources=tuple(sources),
            model=one(MODEL),
            prompt=one(PROMPT),
            move=(moved[0], moved[1]) if moved[0] is not None and moved[1] is not None else None,
            retracts=retracts,
        ),
    )
