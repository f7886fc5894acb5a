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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..markup import strip_comments

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
    card: bool = False  # the one chunk of a page without body text (page_chunks)


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
    if (
        len(chunks) >= 2
        and len(chunks[-1]) < MIN_CHARS
        and len(chunks[-2]) + 2 + len(chunks[-1]) <= MAX_CHARS
    ):
        chunks[-2:] = [chunks[-2] + "\n\n" + chunks[-1]]
    return [Chunk(i, text) for i, text in enumerate(chunks)]


def page_chunks(title: str, about: str, body: str) -> list[Chunk]:
    """A page's chunks: its body's (:func:`split_into_chunks`); a page whose body holds no
    text, such as a docs site's section page (a title and a description in its frontmatter)
    or a Dendron parent note, is one *card* chunk saying what the page is: its description,
    else its title. Without a chunk a page could never be found, not even by its title. A
    card is indexed by its title and description (:func:`embedding_input` with an empty
    ``readable``), as any first chunk is, and shown as its text."""
    return split_into_chunks(body) or [Chunk(0, about or title, card=True)]


# ------------------------------------------------------------------ what is indexed

#: Bumped whenever :func:`embedding_input` changes what is embedded: it is part of the
#: store fingerprint (:func:`store_fingerprint`), so a store embedded from the old input is
#: re-embedded by the next ``llmwiki index`` instead of mixing two kinds of vectors.
#: 3: titles by convention (wiki/titles.py), the page's description with its first chunk,
#: embeds and images named as such, Logseq and Hugo markup reduced to its words.
#: (A page without body text gained a card chunk after 3: new rows, no changed vector, so
#: the version stays; the next ``llmwiki index`` embeds those pages.)
EMBEDDING_INPUT_VERSION = 3

_FENCE = re.compile(r"^[ \t]*(```|~~~).*$", re.M)
_REFERENCE_DEFINITION = re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S+.*$", re.M)
_ORG_BLOCK = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?#\+(?:BEGIN|END)_\w+.*$", re.M | re.I)
#: Logseq's bookkeeping properties (block ids, folding, timestamps, card schedules): no words.
_HIDDEN_PROPERTY = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:id|collapsed|created[-_]at|updated[-_]at|"
    r"last-modified-at|heading|logseq\.[\w.-]+|card-[\w-]+|query-[\w-]+)::.*$",
    re.M | re.I,
)
_PROPERTY = re.compile(r"^([ \t]*(?:[-*+][ \t]+)?[A-Za-z][\w.-]*)::(?=[ \t]|$)", re.M)
#: ``{{embed [[page]]}}``, ``{{query ...}}`` (Logseq macros), ``{{< figure src=x >}}``,
#: ``{{% note %}}``, ``{{</* qr */>}}`` (Hugo shortcodes, and their escaped examples).
_MACRO = re.compile(
    r"\{\{(?:[<%](?:/\*)?[ \t]*(/?)[ \t]*([A-Za-z][\w.-]*)([^{}\n]*?)[ \t]*/?[ \t]*(?:\*/)?[ \t]*/?[>%]"
    r"|\{?([A-Za-z][\w-]*)([^{}\n]*?)\}?)\}\}"
)
_BLOCK_REFERENCE = re.compile(
    r"\(\([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\)\)"
)
# Bracketed text never holds "[" (as the scanner reads links): an attempt that fails stops at
# the next "[" instead of rescanning a run of them (linear on a page of 2,000,000 "[";
# tests/wiki/test_linear_links.py). HTML comments go through markup.strip_comments for the same reason.
_WIKILINK = re.compile(r"!?\[\[([^\[\]|\n]*)(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
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
#: What follows ``|`` in an embed that is a display size or a placement, not words.
_EMBED_SIZE = re.compile(r"[ \t]*(?:\d+(?:x\d+)?%?|left|right|center)[ \t]*(?:\|.*)?", re.I)


def _link_words(match: re.Match[str]) -> str:
    """What ``[[target|label]]`` says: the label, else the target's name. An embed
    ``![[target]]`` shows the target inline, and says so: ``embed target`` (a display size
    or placement after ``|`` is not a label)."""
    label = (match.group(2) or "").strip()
    embed = match.group(0).startswith("!")
    if label and not (embed and _EMBED_SIZE.fullmatch(label)):
        return f"embed {label}" if embed else label
    target = match.group(1).split("#", 1)[0].strip() or match.group(1).lstrip("#^").strip()
    name = target.rsplit("/", 1)[-1]
    return f"embed {name}" if embed else name


def _markdown_link_words(match: re.Match[str]) -> str:
    """``[text](url)`` says its text; an image ``![alt](src)`` says that it is one."""
    text = match.group(1).strip()
    if match.group(0).startswith("!"):
        return f"image {text}" if text else "image"
    return text


def _macro_words(match: re.Match[str]) -> str:
    """A Logseq macro or a Hugo shortcode as its name and arguments (``{{embed [[p]]}}`` ->
    ``embed [[p]]``, ``{{< youtube id >}}`` -> ``youtube id``); a closing shortcode says nothing."""
    if match.group(2) is not None:
        return "" if match.group(1) else f"{match.group(2)}{match.group(3)}"
    return f"{match.group(4)}{match.group(5)}"


#: The steps of :func:`readable_text`, in order: (name, strings one of which the text must
#: contain for the pattern to match at all, pattern, replacement). The substring test skips
#: most patterns for most chunks (indexing 50,000 chunks runs every step). Each step was
#: measured on its own on four wikis (docs/embeddings.md).
_READABLE_STEPS: tuple[tuple[str, tuple[str, ...], re.Pattern[str] | None, Any], ...] = (
    ("comment", ("<!--",), None, " "),  # markup.strip_comments
    ("reference definition", ("]:",), _REFERENCE_DEFINITION, ""),
    ("fence", ("```", "~~~"), _FENCE, ""),
    ("org block", ("#+",), _ORG_BLOCK, ""),
    ("hidden property", ("::",), _HIDDEN_PROPERTY, ""),
    ("property", ("::",), _PROPERTY, r"\1:"),
    ("macro", ("{{",), _MACRO, _macro_words),
    ("block reference", ("((",), _BLOCK_REFERENCE, ""),
    ("wikilink", ("[[",), _WIKILINK, _link_words),
    ("markdown link", ("](",), _MD_LINK, _markdown_link_words),
    ("url", ("://", "www.", "WWW.", "Www."), _URL, " "),
    ("html tag", ("<",), _TAG, " "),
    ("table rule", ("---",), _TABLE_RULE, ""),
    ("line markup", ("#", ">", "["), _LINE_MARKUP, ""),
    ("inline markup", ("*", "_", "~", "`"), _INLINE_MARKUP, ""),
    ("block id", ("^",), _BLOCK_ID, ""),
    ("spaces", ("  ", "\t"), _SPACES, " "),
)


def readable_text(text: str) -> str:
    """Markdown as a reader reads it: link labels without link syntax (an embed or an image
    named as such), no URLs, no HTML tags or comments, no code-fence lines, no emphasis or
    heading marks, no table rules, no block ids or Logseq bookkeeping properties,
    Logseq macros and Hugo shortcodes as their words; whitespace runs collapsed. Code, table
    cells and words stay."""
    for _name, needles, pattern, replacement in _READABLE_STEPS:
        for needle in needles:  # a plain loop: a generator per step cost 20 % of indexing a chunk
            if needle in text:
                text = (
                    strip_comments(text, replacement)
                    if pattern is None
                    else pattern.sub(replacement, text)
                )
                break
    return _BLANK_LINES.sub("\n\n", text).strip()


def embedding_input(title: str, readable: str, about: str = "") -> str:
    """What is embedded for a chunk: its page title, the page's description (``about``,
    given for the first chunk only), then the chunk as a reader reads it (``readable`` is
    :func:`readable_text` of the chunk)."""
    return "\n\n".join(part for part in (title, about, readable) if part)


def chunk_key(title: str, about: str, text: str) -> str:
    """What identifies a chunk (its :func:`content_hash` is the store's chunk hash): every
    part of the page that is embedded with it, so that a vector is reused only for the
    same input. ``about``: the page's description for its first chunk (embedded with it),
    empty for the others."""
    return f"{title}\n\n{about}\n\n{text}" if about else f"{title}\n\n{text}"


def live_chunks(title: str, meta: Mapping[str, Any], body: str) -> dict[str, str]:
    """Chunk hash -> chunk text of a page as it is now (``meta``: its frontmatter data), to
    find the text of a chunk the store ranked, or notice that it changed."""
    from ..wiki.titles import page_description

    about = page_description(meta, body)
    return {
        content_hash(chunk_key(title, about if c.index == 0 else "", c.text)): c.text
        for c in page_chunks(title, about, body)
    }


def store_fingerprint(embedder_fingerprint: str) -> str:
    """The store's fingerprint: the model's, plus the version of the embedding input."""
    return f"{embedder_fingerprint}+input{EMBEDDING_INPUT_VERSION}"


def path_words(path: str) -> str:
    """A page path as words: ``user/features/daily-notes.md`` -> ``user features daily notes``."""
    stem = path[:-3] if path.lower().endswith(".md") else path
    return re.sub(r"[/._\-]+", " ", stem).strip()
