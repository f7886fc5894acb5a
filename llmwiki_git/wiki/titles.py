"""A page's title and description, by the conventions wikis are written in.

In order:

1. the frontmatter ``title``;
2. a Logseq page property ``title:: ...`` among the property lines that open the page
   (Logseq's frontmatter: its first block);
3. a level-1 heading that opens the body (the first line that is not blank), as Foam,
   MkDocs and most READMEs write it: ``# Title``, or ``Title`` underlined with ``===``;
4. the file name, as Obsidian, Logseq and many Foam vaults mean it: the stem, with
   Logseq's file-name encoding undone (``___`` for ``/`` in a namespaced page,
   ``%3F`` and other percent escapes).

Never a heading from the middle of a page: a vault whose pages start with text and have
``# Context`` further down would otherwise title ten pages "Context". Headings stay what
they are (anchors, and words of the body), never the title unless they open the page.

A page's description is what it says about itself in one line: the frontmatter
``summary``, ``description`` or Dendron's ``desc``, and a Logseq ``description::`` property.

Import-light (stdlib only): the check path scans titles too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_ATX_H1 = re.compile(r"#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_SETEXT_H1 = re.compile(r"=+[ \t]*")
_PROPERTY = re.compile(r"([A-Za-z][\w.-]*)::(?:[ \t]+(.*?))?[ \t]*")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_COMMENT_LINE = re.compile(r"[ \t]*<!--.*?-->[ \t]*")
_LOOK_AT = 4096  # a title is found in the first lines: never scan a whole long page


def frontmatter_title(data: Mapping[str, Any]) -> str | None:
    title = data.get("title")
    return title.strip() if isinstance(title, str) and title.strip() else None


def opening_heading(body: str) -> str | None:
    """The text of a level-1 heading on the first line of ``body`` a reader sees (blank
    lines and one-line HTML comments such as ``<!-- omit in toc -->`` are skipped): ATX
    ``# x`` or setext ``x`` over ``===``; None when the body opens with anything else."""
    lines = body[:_LOOK_AT].lstrip("\ufeff").splitlines()
    for i, line in enumerate(lines):
        if not line.strip() or (line.lstrip().startswith("<!--") and _COMMENT_LINE.fullmatch(line)):
            continue
        if line[:1] == "#":
            match = _ATX_H1.fullmatch(line.rstrip())
            return match.group(1).strip() or None if match else None
        if i + 1 < len(lines) and line[:1] not in " \t" and _SETEXT_H1.fullmatch(lines[i + 1]):
            return line.strip()
        return None
    return None


def page_properties(body: str) -> dict[str, str]:
    """The ``key:: value`` lines that open ``body``: a Logseq page's properties (its first
    block), keys lower-cased; empty for a page that opens otherwise."""
    found: dict[str, str] = {}
    for line in body[:_LOOK_AT].lstrip("\ufeff").splitlines():
        match = _PROPERTY.fullmatch(line.strip())
        if match is None:
            break
        if match.group(2):
            found.setdefault(match.group(1).lower(), match.group(2))
    return found


def property_title(body: str) -> str | None:
    """``title:: x`` among the ``key:: value`` lines that open ``body`` (Logseq)."""
    return page_properties(body).get("title") if "::" in body[:_LOOK_AT] else None


def property_list(value: str) -> list[str]:
    """A Logseq list value (``alias:: a, [[b c]]``) as its items."""
    return [
        item.strip().removeprefix("[[").removesuffix("]]").strip()
        for item in value.split(",")
        if item.strip()
    ]


def declared_title(data: Mapping[str, Any], body: str) -> str | None:
    """The title a page declares (frontmatter, Logseq property, opening heading), or None
    when it declares none and its file name is its title."""
    return frontmatter_title(data) or property_title(body) or opening_heading(body)


def stem_title(stem: str) -> str:
    """A file name as a title: Logseq's ``a___b`` is the page ``a/b``; percent escapes
    (``What is it%3F``) are decoded."""
    title = stem.replace("___", "/")
    if "%" in title and _PERCENT.search(title):
        from urllib.parse import unquote  # noqa: PLC0415 - rare, and not on the check path

        try:
            title = unquote(title, errors="strict")
        except UnicodeDecodeError:  # not an escape a tool wrote: the name as it is
            pass
    return title.strip() or stem


def page_title(data: Mapping[str, Any], body: str, stem: str) -> str:
    """The title of a page with frontmatter ``data``, ``body`` (the text after the
    frontmatter) and file stem ``stem``."""
    return declared_title(data, body) or stem_title(stem)


def page_description(data: Mapping[str, Any], body: str) -> str:
    """The page's one-line descriptions (frontmatter ``summary``, ``description``,
    Dendron's ``desc``; a Logseq ``description::`` page property), one per line; empty
    when it has none."""
    found = [
        v.strip()
        for k in ("summary", "description", "desc")
        if isinstance(v := data.get(k), str) and v.strip()
    ]
    if "::" in body[:_LOOK_AT]:
        described = page_properties(body).get("description")
        if described:
            found.append(described)
    return "\n".join(found)
