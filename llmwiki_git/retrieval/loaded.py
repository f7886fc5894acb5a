"""What a read of the index found: the store, the lexical index, the embedder of its model,
and the warnings a caller shows (service.py loads it, refseed.py restores it from a ref)."""

from __future__ import annotations

from dataclasses import dataclass

from .embedders import Embedder
from .lexical import LexicalIndex
from .store import Store


@dataclass
class Loaded:
    store: Store
    lexical: LexicalIndex | None
    embedder: Embedder | None
    warnings: list[dict[str, str]]
