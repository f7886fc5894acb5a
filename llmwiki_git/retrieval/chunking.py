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
from typing import Any

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


# ------------------------------------------------------------------ what is indexed

#: Bumped whenever :func:`embedding_input` changes what is embedded: it is part of the
#: store fingerprint (:func:`store_fingerprint`), so a store embedded from the old input is
#: re-embedded by the next ``llmwiki index`` instead of mixing two kinds of vectors.
EMBEDDING_INPUT_VERSION = 2

_FENCE = re.compile(r"^[ \t]*(```|~~~).*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REFERENCE_DEFINITION = re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S+.*$", re.M)
_WIKILINK = re.compile(r"!?\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_URL = re.compile(r"(?=[fhwFHW])(?:\b(?:https?|ftp|file)://[^\s<>)\]]+|\bwww\.[^\s<>)\]]+)", re.I)
_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t:|-]*-{3,}[ \t:|-]*$", re.M)
_LINE_MARKUP = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t>]*|[-*+][ \t]+\[[ xX]\][ \t]+)", re.M)
# A leading lookahead lets the regex engine skip to a possible first character (here and in
# _URL: 2-5x faster, same matches).
_INLINE_MARKUP = re.compile(r"(?=[*_~`])(?:\*\*|__|~~|`+|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))")
_BLOCK_ID = re.compile(r"[ \t]\^[A-Za-z0-9-]+[ \t]*$", re.M)
_SPACES = re.compile(r"[ \t]{2,}|\t")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


def _link_label(match: re.Match[str]) -> str:
    """What a reader sees for ``[[target|label]]``: the label, else the target's name."""
    label = match.group(2)
    if label and label.strip():
        return label.strip()
    target = match.group(1).split("#", 1)[0].strip() or match.group(1).lstrip("#^").strip()
    return target.rsplit("/", 1)[-1]


#: The steps of :func:`readable_text`, in order: (strings one of which the text must contain
#: for the pattern to match at all, pattern, replacement). The substring test skips most
#: patterns for most chunks (indexing 50,000 chunks runs every step).
_READABLE_STEPS: tuple[tuple[tuple[str, ...], re.Pattern[str], Any], ...] = (
    (("<!--",), _COMMENT, " "),
    (("]:",), _REFERENCE_DEFINITION, ""),
    (("```", "~~~"), _FENCE, ""),
    (("[[",), _WIKILINK, _link_label),
    (("](",), _MD_LINK, lambda m: m.group(1)),
    (("://", "www.", "WWW.", "Www."), _URL, " "),
    (("<",), _TAG, " "),
    (("---",), _TABLE_RULE, ""),
    (("#", ">", "[ ]", "[x]", "[X]"), _LINE_MARKUP, ""),
    (("*", "_", "~", "`"), _INLINE_MARKUP, ""),
    (("^",), _BLOCK_ID, ""),
    (("  ", "\t"), _SPACES, " "),
)


def readable_text(text: str) -> str:
    """Markdown as a reader reads it: link labels without link syntax, no URLs, no HTML
    tags or comments, no code-fence lines, no emphasis or heading marks, no table rules,
    no block ids; whitespace runs collapsed. Code, table cells and words stay."""
    for needles, pattern, replacement in _READABLE_STEPS:
        for needle in needles:  # a plain loop: a generator per step cost 20 % of indexing a chunk
            if needle in text:
                text = pattern.sub(replacement, text)
                break
    return _BLANK_LINES.sub("\n\n", text).strip()


def embedding_input(title: str, readable: str) -> str:
    """What is embedded for a chunk: its page title, then the chunk as a reader reads it
    (``readable`` is :func:`readable_text` of the chunk)."""
    return f"{title}\n\n{readable}" if readable else title


def store_fingerprint(embedder_fingerprint: str) -> str:
    """The store's fingerprint: the model's, plus the version of the embedding input."""
    return f"{embedder_fingerprint}+input{EMBEDDING_INPUT_VERSION}"


def path_words(path: str) -> str:
    """A page path as words: ``user/features/daily-notes.md`` -> ``user features daily notes``."""
    stem = path[:-3] if path.lower().endswith(".md") else path
    return re.sub(r"[/._\-]+", " ", stem).strip()
