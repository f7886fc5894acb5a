"""The index follows the wiki: pages added, changed or deleted since `llmwiki index`.

Every read (``query``, ``context``, MCP ``search_pages`` and ``get_context_pack``) compares
the blob id of every live page with the one the store recorded (``staleness``: a listing
from git, no page is scanned). When they differ, the index is rebuilt from the live pages
in the same call: the lexical index always; vectors only for chunks whose content is new,
and only up to ``ON_THE_FLY_CHUNKS`` of them, so that a read stays fast. Within the bound
the refreshed store is saved (under the project lock) and the next call finds it current.
Beyond it nothing is saved: this call ranks the new chunks lexically (their vectors are
zero) and says how many pages are stale and to run ``llmwiki index``.

The bound was measured (benchmarks/refresh.py, docs/query.md): see ``ON_THE_FLY_CHUNKS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import store as store_mod
from .chunking import content_hash
from .vectors import VectorIndex

if TYPE_CHECKING:
    from .indexer import IndexedPage

ON_THE_FLY_CHUNKS = 8
"""Chunks embedded on the fly by a read. Measured (benchmarks/refresh.py, docs/query.md):
the local model embeds a chunk in about 40 ms on an idle 2-core machine and 230-310 ms on
the same machine under load, so 8 chunks add 0.3 s to 2.5 s to the call. A one-page edit
changes one or two chunks and a new page of 5,000 characters has six: one page's worth is
embedded on the fly; more means an `llmwiki index` run."""


@dataclass(frozen=True)
class Staleness:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def pages(self) -> int:
        return len(self.added) + len(self.changed) + len(self.deleted)

    def __bool__(self) -> bool:
        return self.pages > 0


def staleness(store: store_mod.Store, live: Mapping[str, str]) -> Staleness:
    """What changed between the store and the live pages (path -> blob id)."""
    known = dict(store.skipped)
    known.update(store.path_blobs())  # a page's own entry wins over a skipped one
    if known == live:  # the usual case, compared in C
        return Staleness()
    added = tuple(sorted(p for p in live if p not in known))
    changed = tuple(sorted(p for p, b in live.items() if p in known and known[p] != b))
    # A page recorded without a blob could not be read at index time: it is not "deleted"
    # merely because the listing cannot hash it either.
    deleted = tuple(sorted(p for p, b in known.items() if p not in live and b))
    return Staleness(added, changed, deleted)


@dataclass
class Plan:
    """What a refresh would embed: chunk hash -> text of chunks with no vector yet."""

    missing: dict[str, str] = field(default_factory=dict)
    known: set[str] = field(
        default_factory=set
    )  # the chunks it holds: the build that follows asks no more


def plan(pages: list[IndexedPage], vectors: VectorIndex) -> Plan:
    """The chunks of ``pages`` that ``vectors`` holds no vector for."""
    hashes = [(content_hash(text), text) for page in pages for text in page.texts]
    known = vectors.known(h for h, _ in hashes)
    missing: dict[str, str] = {}
    for chunk_hash, text in hashes:
        if chunk_hash not in known:
            missing.setdefault(chunk_hash, text)
    return Plan(missing, known)


def stale_warning(stale: Staleness, missing: int, bound: int) -> dict[str, str]:
    pages = f"{stale.pages} page{'s' if stale.pages != 1 else ''}"
    if bound <= 0:
        return {
            "code": "index-stale",
            "message": f"{pages} changed since `llmwiki index` and the embedding model is unavailable; new text "
            "is ranked lexically until you run `llmwiki index`",
        }
    return {
        "code": "index-stale",
        "message": f"{pages} changed since `llmwiki index` ({missing} new chunks to embed, more than the "
        f"{bound} embedded on the fly); new text is ranked lexically until you run `llmwiki index`",
    }
