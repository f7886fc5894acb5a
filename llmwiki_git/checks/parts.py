"""A large ``str -> str`` map stored as marshal parts that are decoded only when asked for.

The facts of a 10,000-page wiki list, for 34,000 link target texts, the pages using each
(`delta.Facts.users`) and, for 15,000 names, the texts depending on them (`Facts.texts`).
A hook reads a few dozen of those entries; decoding them all cost ~20 ms of its 0.3 s.
Keys are spread over `PARTS` parts by CRC-32 (stable across processes, unlike `hash`), so
a lookup decodes one part of ~1/256 of the map. Parts are shared between copies and copied
before a write. A damaged part raises ValueError when first read (the engine then checks in
full).
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterable, Iterator

PARTS = 256


def _part_of(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogateescape")) % PARTS


class PartedMap:
    """``str -> str``, decoded part by part from ``blobs`` (one marshal blob per part)."""

    __slots__ = ("_blobs", "_parts", "_owned")

    def __init__(self, blobs: tuple[bytes, ...] | None = None) -> None:
        self._blobs: tuple[bytes, ...] = blobs if blobs is not None else (b"",) * PARTS
        self._parts: list[dict[str, str] | None] = [None] * PARTS
        self._owned: set[int] = set()  # parts this map may change in place (not shared with a copy)

    @classmethod
    def from_dict(cls, values: dict[str, str]) -> PartedMap:
        parted = cls()
        parts: list[dict[str, str]] = [{} for _ in range(PARTS)]
        crc32 = zlib.crc32
        # Sorted keys: the same map gives the same bytes whichever order built it (the cold
        # check builds it in one process or in shares on every core; ~10 ms at 34,000 keys).
        for key in sorted(values):
            parts[crc32(key.encode("utf-8", "surrogateescape")) % PARTS][key] = values[key]
        parted._parts = list(parts)
        parted._owned = set(range(PARTS))
        return parted

    @classmethod
    def from_record(cls, record: object) -> PartedMap | None:
        """The map stored by `to_record`, or None when ``record`` is not one."""
        if not (
            isinstance(record, tuple)
            and len(record) == PARTS
            and all(isinstance(b, bytes) for b in record)
        ):
            return None
        return cls(record)

    def to_record(self) -> tuple[bytes, ...]:
        return tuple(
            blob if part is None else marshal.dumps(part)
            for blob, part in zip(self._blobs, self._parts)
        )

    def _part(self, index: int) -> dict[str, str]:
        part = self._parts[index]
        if part is None:
            blob = self._blobs[index]
            try:
                loaded = marshal.loads(blob) if blob else {}
            except (EOFError, TypeError) as exc:
                raise ValueError(f"damaged part {index}") from exc
            if not isinstance(loaded, dict):
                raise ValueError(f"damaged part {index}")  # the caller checks in full instead
            part = self._parts[index] = loaded
            self._owned.add(index)
        return part

    def get(self, key: str, default: str = "") -> str:
        """The value of ``key``, else ``default`` (an empty string)."""
        return self._part(_part_of(key)).get(key, default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._part(_part_of(key))

    def __setitem__(self, key: str, value: str) -> None:
        index = _part_of(key)
        part = self._part(index)
        if index not in self._owned:
            part = self._parts[index] = dict(part)
            self._owned.add(index)
        part[key] = value

    def copy(self) -> PartedMap:
        """A copy that shares every part until either side writes to it."""
        twin = PartedMap(self._blobs)
        twin._parts = list(self._parts)
        self._owned.clear()
        return twin

    def items(self) -> Iterator[tuple[str, str]]:
        for index in range(PARTS):
            yield from self._part(index).items()

    def update(self, values: Iterable[tuple[str, str]]) -> None:
        for key, value in values:
            self[key] = value

    def __len__(self) -> int:
        return sum(len(self._part(index)) for index in range(PARTS))
