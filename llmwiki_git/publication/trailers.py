"""The candidate trailer block: written by us in a fixed order, read back through git.

Reading uses ``git log --format=%(trailers:...)``, which (unlike plain
``interpret-trailers --parse``) is not fooled by a ``---`` line in the message body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..git import Git

KEYS = (
    "Llmwiki-Candidate",
    "Llmwiki-Kind",
    "Llmwiki-Target",
    "Llmwiki-Precondition",
    "Llmwiki-Body-Digest",
    "Llmwiki-Base",
)
REPLAYED = "Llmwiki-Replayed-From"
KIND = "validated-answer/1"
PAGE_KIND = "page/1"  # any page edit, addition or deletion (`review stage`, MCP propose_page)
KINDS = (KIND, PAGE_KIND)
ABSENT = "absent"  # a precondition: no page at the target; a page/1 body digest: a deletion
_SEP = "\x1f"
_REC = "\x1e"


@dataclass(frozen=True)
class Trailers:
    candidate: str
    kind: str
    target: str
    precondition: str
    body_digest: str
    base: str

    def block(self) -> str:
        values = (self.candidate, self.kind, self.target, self.precondition, self.body_digest, self.base)
        return "".join(f"{key}: {value}\n" for key, value in zip(KEYS, values))


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
    out = git.run("log", "--no-walk=unsorted", f"--format={fmt}", *commits, "--").decode("utf-8", "replace")
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
    """Exactly one value for each key, or None (a malformed or forged block)."""
    values = []
    for key in KEYS:
        got = found.get(key, [])
        if len(got) != 1 or not got[0]:
            return None
        values.append(got[0])
    return Trailers(*values)
