"""The sources of a compile, read from a commit: their paths, blobs, lines and titles; and the
safe quoting of their text into pages (no wikilinks, citations or control characters
smuggled in)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from ..gitstore.git import Git
from ..wiki.frontmatter import parse
from ..wiki.provenance import citation_name, sources_dir

SOURCE_EXTS = (".md", ".markdown", ".txt")
MAX_SOURCE_BYTES = (
    4 * 1024 * 1024
)  # a source larger than this (ingest keeps 100,000 characters) is skipped
# C0 and C1 controls, DEL, and the bidirectional marks and overrides: never quoted into a page.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Markdown images and inline links (link text may hold one level of brackets), and
# reference-style links ``[text][ref]``: a quote keeps a link only when it is an http(s) URL,
# which resolves anywhere; a relative path or an anchor names a file or heading of the
# source's own site, never a page of the wiki (it would be a broken link on approval).
_IMAGE = re.compile(r"!\[(?:[^\[\]]|\[[^\[\]]*\])*\]\([^()\s]*(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_LINK = re.compile(
    r"\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"(?:\((?P<url>(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)|\[(?P<ref>[^\[\]]*)\])"
)
_WEB = re.compile(r"https?://[^\s]", re.IGNORECASE)


@dataclass(frozen=True)
class Source:
    """A source file at the compiled commit. Line numbers are the file's own, frontmatter
    included (what ``^[name.md:L-L]`` citations count)."""

    path: str  # from the repository root: sources/paper.md
    blob: str
    text: str
    project_prefix: str

    @property
    def name(self) -> str:
        """How pages cite it: its path inside ``sources/``."""
        return citation_name(self.path, self.project_prefix)

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def body(self) -> str:
        """The text after the frontmatter."""
        return self.text[parse(self.text).body_offset :]

    @cached_property
    def body_start(self) -> int:
        """The 1-based number of the first line after the frontmatter (``body_line`` is its
        0-based index)."""
        return parse(self.text).body_line + 1

    @cached_property
    def title(self) -> str:
        meta = parse(self.text)
        title = meta.data.get("title") if not meta.error else None
        if isinstance(title, str) and title.strip():
            return clean(title.strip())
        found = re.search(r"^#[ \t]+(.+?)[ \t#]*$", self.text[meta.body_offset :], re.MULTILINE)
        if found:
            return clean(found.group(1).strip())
        return self.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]

    def cite(self, start: int, end: int) -> str:
        return f"^[{self.name}:{start}-{end}]"


def list_sources(git: Git, commit: str, project_prefix: str) -> list[tuple[str, str]]:
    """(path, blob) of every text source (``.md``, ``.markdown``, ``.txt``, regular files) in
    the project's ``sources/`` folder at ``commit``, by path."""
    folder = sources_dir(project_prefix)
    entries = git.ls_tree_under(commit, f":(top,literal){folder}")
    return sorted(
        (e.path, e.blob)
        for e in entries
        if e.mode in ("100644", "100755") and e.path.lower().endswith(SOURCE_EXTS)
    )


def read_sources(
    git: Git, listed: list[tuple[str, str]], project_prefix: str
) -> tuple[list[Source], list[tuple[str, str]]]:
    """The sources' texts, and (path, why) for those that cannot be compiled (binary, not
    UTF-8, too large)."""
    blobs = git.read_blobs(blob for _, blob in listed)
    found, skipped = [], []
    for path, blob in listed:
        data = blobs.get(blob, b"")
        if len(data) > MAX_SOURCE_BYTES:
            skipped.append((path, f"over {MAX_SOURCE_BYTES // 1048576} MB"))
            continue
        if b"\0" in data:
            skipped.append((path, "binary (NUL bytes)"))
            continue
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            skipped.append((path, "not UTF-8"))
            continue
        if not text.strip():
            skipped.append((path, "empty"))
            continue
        found.append(Source(path, blob, text, project_prefix))
    return found, skipped


def unlink(text: str) -> tuple[str, int]:
    """``text`` with its images dropped and every link that is not an http(s) URL (a
    relative path, an ``#anchor``, a reference, ``javascript:``, ``data:``…) turned into its
    plain text; and how many were changed (the run's repair report counts them)."""
    changed = 0

    def image(_: re.Match[str]) -> str:
        nonlocal changed
        changed += 1
        return ""

    def link(match: re.Match[str]) -> str:
        nonlocal changed
        url = match.group("url")
        if url is not None and _WEB.match(url):
            return match.group()
        changed += 1
        return match.group("text")

    text = _LINK.sub(link, _IMAGE.sub(image, text))
    return re.sub(r"[ \t]{2,}", " ", text) if changed else text, changed


def clean(text: str) -> str:
    """``text`` safe to quote into a page: no control (C0, C1) or bidirectional-override
    characters, no image, no link but an http(s) URL (:func:`unlink`), no ``[[`` that would
    become a link, no ``^[`` that would read as a citation."""
    return clean_counted(text)[0]


def clean_counted(text: str) -> tuple[str, int]:
    """:func:`clean`, and how many images, links and unsafe characters it took out."""
    text, controls = _UNSAFE.subn("", text.replace("\t", " "))
    text, links = unlink(text)
    return text.replace("[[", "\\[[").replace("^[", "^\\["), controls + links
