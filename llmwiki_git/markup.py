"""Markdown text handling that must stay linear in its input, shared by the offline answerer
and retrieval's chunk cleaning (both strip HTML comments from text anyone can write).

``<!--.*?-->`` as a regex rescans the rest of the text from every ``<!--`` that is never
closed: a page of 100,000 ``<!--`` takes minutes. ``strip_comments`` finds each opening and
its first closing with ``str.find`` and stops at the first opening without one, the same
result in one pass (tests/wiki/test_linear_links.py)."""

from __future__ import annotations

__all__ = ["strip_comments"]


def strip_comments(text: str, replacement: str = " ") -> str:
    """``text`` with each ``<!-- … -->`` (it may span lines) replaced by ``replacement``;
    an opening that is never closed, and the text after it, are left as they are."""
    start = text.find("<!--")
    if start < 0:
        return text
    out: list[str] = []
    pos = 0
    while start >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break
        out += (text[pos:start], replacement)
        pos = end + 3
        start = text.find("<!--", pos)
    out.append(text[pos:])
    return "".join(out)
