"""Page body -> chunks, by the reference tool's rules (paragraph packing 800 / 1400 / 200).

1. Split on blank lines; trim; drop empty paragraphs.
2. A paragraph over 1400 chars is split at sentence ends and re-packed up to 1400; a piece
   still over 1400 is cut every 1400 chars.
3. Pack pieces greedily, joined by a blank line, while the chunk stays <= 800 chars; a
   single piece over 800 becomes its own chunk.
4. A last chunk under 200 chars is merged into the previous one if that stays <= 1400.

One addition: a heading is never left as the last piece of a chunk; it moves to the next
chunk so that it stays with the text it introduces.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

TARGET_CHARS = 800
MAX_CHARS = 1400
MIN_CHARS = 200

_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_HEADING = re.compile(r"#{1,6}\s")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str

    @property
    def hash(self) -> str:
        return content_hash(self.text)


def content_hash(text: str) -> str:
    """First 16 hex chars of SHA-256 of the UTF-8 text (whitespace significant)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _split_long(paragraph: str) -> list[str]:
    pieces: list[str] = []
    buffer = ""
    for sentence in _SENTENCE_END.split(paragraph):
        candidate = f"{buffer} {sentence}" if buffer else sentence
        if len(candidate) <= MAX_CHARS:
            buffer = candidate
            continue
        if buffer:
            pieces.append(buffer)
        buffer = sentence
    if buffer:
        pieces.append(buffer)
    out: list[str] = []
    for piece in pieces:
        out.extend(piece[i : i + MAX_CHARS] for i in range(0, len(piece), MAX_CHARS))
    return out


def _is_heading(piece: str) -> bool:
    return bool(_HEADING.match(piece)) and "\n" not in piece


def split_into_chunks(body: str) -> list[Chunk]:
    pieces: list[str] = []
    for paragraph in _PARAGRAPHS.split(body.replace("\r\n", "\n")):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        pieces.extend(_split_long(paragraph) if len(paragraph) > MAX_CHARS else [paragraph])
    chunks: list[str] = []
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        joined = size + (2 if buffer else 0) + len(piece)
        if buffer and joined > TARGET_CHARS:
            carry: list[str] = []
            while buffer and _is_heading(buffer[-1]) and len(buffer) > 1:
                carry.insert(0, buffer.pop())
            chunks.append("\n\n".join(buffer))
            buffer = carry
            size = len("\n\n".join(buffer)) if buffer else 0
            joined = size + (2 if buffer else 0) + len(piece)
        if buffer and joined > MAX_CHARS:
            chunks.append("\n\n".join(buffer))
            buffer, size, joined = [], 0, len(piece)
        buffer.append(piece)
        size = joined
    if buffer:
        chunks.append("\n\n".join(buffer))
    if len(chunks) >= 2 and len(chunks[-1]) < MIN_CHARS and len(chunks[-2]) + 2 + len(chunks[-1]) <= MAX_CHARS:
        chunks[-2:] = [chunks[-2] + "\n\n" + chunks[-1]]
    return [Chunk(i, text) for i, text in enumerate(chunks)]
