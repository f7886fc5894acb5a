"""`slugify` and the parsing of a wikilink's inner text into a normalized target."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

_DROP = re.compile(r"['\u2019]")
# \w is Unicode letters, numbers and "_"; "_" is dropped too, as the reference tool does.
_NOT_KEPT = re.compile(r"[^\w\s-]|_")
_SPACES = re.compile(r"\s+")
_DASHES = re.compile(r"-{2,}")
# A last path component that names a non-markdown file: `diagram.png`, `paper.PDF`.
_FILE_EXT = re.compile(r"\.([A-Za-z0-9]{1,8})$")
# Extensions that are surely attachments, not dotted page names like Dendron's `a.b.c`:
# a missing one is reported by its file name.
ATTACHMENT_EXTS = frozenset(
    "png jpg jpeg gif svg webp bmp avif ico pdf mp3 mp4 m4a webm wav ogg mov mkv csv tsv "
    "xlsx xls docx doc pptx ppt zip canvas excalidraw txt json yaml yml html htm".split()
)


# Words of ASCII letters and digits, one space or "-" between them: slugify only lowercases
# these and turns the spaces into "-" (most names and headings; ~5x faster than the rules).
_PLAIN = re.compile(r"[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*")


@lru_cache(maxsize=65536)
def slugify(text: str) -> str:
    """Normalize a page name or link target the way every reader compares them.

    Lowercase; drop ' and ’; keep Unicode letters, numbers, whitespace and -; whitespace
    runs become -; runs of - collapse; leading and trailing - are trimmed. Input is first
    NFC-normalized so that decomposed accents (as macOS file names have) compare equal.
    """
    if _PLAIN.fullmatch(text):
        return text.lower().replace(" ", "-")
    text = unicodedata.normalize("NFC", text).lower()
    text = _DROP.sub("", text)
    text = _NOT_KEPT.sub("", text)
    text = _SPACES.sub("-", text)
    text = _DASHES.sub("-", text)
    return text.strip("-")


class LinkTarget(NamedTuple):
    """A wikilink's target after normalization (a NamedTuple: the checker builds one per
    distinct target, 35,000 on a 10,000-page wiki).

    ``slug`` is the slugified page name; ``hint`` the slugified folder components of a
    path-style target (``[[concepts/alpha]]``); ``anchor`` the text after ``#`` (a heading,
    or ``^id`` for a block); ``file_name`` the last component when it names a non-markdown
    file (``diagram.png``); ``rooted`` when the path starts with ``/`` (``[[/index]]``, Foam's
    path from the root): the hint is then the whole folder path, from the wiki root or the
    repository root, not just its end.
    """

    text: str
    slug: str
    hint: tuple[str, ...] = ()
    anchor: str | None = None
    file_name: str | None = None
    rooted: bool = False

    @property
    def key(self) -> str:
        """The identity used to deduplicate targets in reports (anchors ignored)."""
        lead = "/" if self.rooted else ""
        if self.file_name is not None and (
            not self.slug or self.file_name.rsplit(".", 1)[1].lower() in ATTACHMENT_EXTS
        ):
            return lead + "/".join((*self.hint, self.file_name))
        return lead + "/".join((*self.hint, self.slug))

    @property
    def name(self) -> str:
        """The page name as written: the last path component, without anchor or ``.md``."""
        text = self.text
        if "#" not in text and "/" not in text and "." not in text and "\\" not in text:
            return text.strip()  # a plain name (most targets): what the rest gives, sooner
        name = text.partition("#")[0].strip()
        if name.lower().endswith(".md"):
            name = name[:-3]
        return name.replace("\\", "/").rsplit("/", 1)[-1].strip()

    @property
    def is_self_anchor(self) -> bool:
        """``[[#heading]]``: a link to a heading of the page it is written in."""
        return not self.text.split("#", 1)[0].strip() and self.anchor is not None

    @property
    def is_empty(self) -> bool:
        return not self.slug and self.file_name is None and not self.is_self_anchor


def split_label(inner: str) -> tuple[str, str | None]:
    """Split ``target|label`` at the first pipe; ``target\\|label`` (tables) counts too."""
    pipe = inner.find("|")
    if pipe < 0:
        return inner, None
    target = inner[:pipe]
    if target.endswith("\\"):
        target = target[:-1]
    return target, inner[pipe + 1 :].strip()


def parse_target(target_text: str) -> LinkTarget:
    """Normalize the part of a wikilink before ``|``."""
    text = target_text.strip()
    if text and "#" not in text and "/" not in text and "." not in text and "\\" not in text:
        return LinkTarget(text, slugify(text))  # a plain name: what `_parse` gives, sooner
    return _parse(text)


def _parse(text: str) -> LinkTarget:
    name_part, sep, anchor = text.partition("#")
    anchor_value = anchor.strip() if sep else None
    name_part = name_part.strip()
    if name_part.lower().endswith(".md"):
        name_part = name_part[:-3]
    parts = [p for p in name_part.replace("\\", "/").split("/")]
    last = parts[-1].strip() if parts else ""
    hint = tuple(
        s for s in (slugify(p) for p in parts[:-1] if p.strip() not in ("", ".", "..")) if s
    )
    file_name = last if _FILE_EXT.search(last) else None
    return LinkTarget(text, slugify(last), hint, anchor_value, file_name, name_part.startswith("/"))
