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
REPLAYED = "Llmwiki-Replayed-From"
KIND = "validated-answer/1"
PAGE_KIND = "page/1"  # any page edit, addition or deletion (`review stage`, MCP propose_page)
COMPILE_KIND = "compile/1"  # a `llmwiki compile` run: several pages, each listed with its precondition
KINDS = (KIND, PAGE_KIND, COMPILE_KIND)
#: Kinds whose one commit writes several files, each listed (target, precondition, digest)
#: and each under the rules of a page edit (DESIGN §6: compile runs; later retractions).
MULTI_KINDS = frozenset({COMPILE_KIND})
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

    def provenance(self) -> dict[str, object]:
        """What the pages were written from, as `review show` reports it (empty for a plain
        edit): each source with its blob, the model and the prompt. A new optional key
        shown with them goes here and in `block`, nowhere else."""
        if not (self.sources or self.model or self.prompt):
            return {}
        return {"sources": [{"path": path, "blob": blob} for path, blob in self.sources], "model": self.model,
                "prompt": self.prompt}

    @property
    def files(self) -> tuple[FileTrailer, ...]:
        return (FileTrailer(self.target, self.precondition, self.body_digest), *self.more)

    def block(self) -> str:
        lines = [(KEYS[0], self.candidate), (KEYS[1], self.kind)]
        for f in self.files:
            lines += list(zip(FILE_KEYS, (f.target, f.precondition, f.body_digest)))
        lines.append((KEYS[5], self.base))
        lines += [(SOURCE, f"{path} {blob}") for path, blob in self.sources]
        lines += [(key, value) for key, value in ((MODEL, self.model), (PROMPT, self.prompt)) if value]
        return "".join(f"{key}: {value}\n" for key, value in lines)


def with_files(candidate: str, kind: str, files: list[FileTrailer], base: str, *,
               sources: tuple[tuple[str, str], ...] = (), model: str | None = None,
               prompt: str | None = None) -> Trailers:
    """The trailers of a candidate writing ``files`` (at least one)."""
    first, *rest = files
    return Trailers(candidate, kind, first.target, first.precondition, first.body_digest, base, tuple(rest),
                    sources, model, prompt)


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
    multi-file), no target twice; well-formed sources; at most one model and prompt."""
    def one(key: str) -> str | None:
        got = found.get(key, [])
        return got[0] if len(got) == 1 and got[0] else None

    candidate, kind, base = one(KEYS[0]), one(KEYS[1]), one(KEYS[5])
    columns = [found.get(key, []) for key in FILE_KEYS]
    count = len(columns[0])
    if candidate is None or kind is None or base is None or count == 0 or any(len(c) != count for c in columns):
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
    files = [FileTrailer(*values) for values in zip(*columns)]
    return with_files(candidate, kind, files, base, sources=tuple(sources),
                      model=one(MODEL), prompt=one(PROMPT))
