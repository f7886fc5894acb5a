"""Markdown to HTML for the view: markdown-it-py (CommonMark plus tables) with raw HTML off
(a `<script>` in a page is shown as text), `[[wikilinks]]` and `^[source.md:L-L]` citations
as inline tokens whose links the caller decides, source line numbers on every block, and a
rendered diff: the blocks of two versions compared, each rendered, added and removed ones
marked."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from ..wiki.provenance import cited

MAX_INNER = 500  # a [[...]] longer than this is text (keeps a line of "[[" linear)


@dataclass(frozen=True)
class Link:
    """How one wikilink or citation is shown: its CSS class, where it points (None: nowhere)
    and its tooltip."""

    css: str
    href: str | None
    title: str


WikiLinker = Callable[[str], Link]  # the raw target of [[target|label]] -> its link
CiteLinker = Callable[[str, int, int], Link]  # (source name, start, end) -> its link


def _wikilink(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    start = pos + 1 if embed else pos
    if not src.startswith("[[", start):
        return False
    stop = min(len(src), start + 2 + MAX_INNER + 2)
    newline = src.find("\n", start, stop)
    end = src.find("]]", start + 2, newline if newline >= 0 else stop)
    if end < 0:
        return False
    inner = src[start + 2 : end]
    if not inner.strip() or "[" in inner:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        target, _, label = inner.partition("|")
        token.meta = {"target": target.strip(), "label": label.strip() or target.strip()}
        token.content = src[pos : end + 2]
    state.pos = end + 2
    return True


def _citation(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("^[", pos):
        return False
    stop = min(len(src), pos + 2 + MAX_INNER + 1)
    end = src.find("]", pos + 2, stop)
    if end < 0:
        return False
    marker = src[pos + 2 : end]
    if "[" in marker or "\n" in marker:
        return False
    parts = cited(marker)
    if not parts:
        return False
    if not silent:
        token = state.push("citation", "", 0)
        token.meta = {"parts": parts}
        token.content = src[pos : end + 1]
    state.pos = end + 1
    return True


def _anchor(href: str | None, css: str, title: str, text: str) -> str:
    if href is None:
        return f'<span class="{css}" title="{escape(title)}">{escape(text)}</span>'
    return f'<a class="{css}" href="{escape(href)}" title="{escape(title)}">{escape(text)}</a>'


def _render_wikilink(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    meta = tokens[idx].meta
    link: Link = env["wikilink"](meta["target"])
    return _anchor(link.href, link.css, link.title, meta["label"])


def _render_citation(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    out = []
    for name, start, end in tokens[idx].meta["parts"]:
        link: Link = env["citation"](name, start, end)
        text = f"{name}:{start}-{end}" if start else name
        out.append(_anchor(link.href, link.css, link.title, text))
    return '<sup class="cite">[' + ", ".join(out) + "]</sup>"


def _line_numbers(state: Any) -> None:
    """Every block opening token gets ``data-line`` (its first source line, 1-based, in
    the file) and ``id="L<line>"``, so a problem's line can be linked to."""
    offset = state.env.get("line_offset", 0)
    for token in state.tokens:
        if token.map is not None and token.nesting >= 0 and token.level == 0:
            line = token.map[0] + 1 + offset
            token.attrSet("data-line", str(line))
            token.attrSet("data-end", str(token.map[1] + offset))
            if state.env.get("ids", True):
                token.attrSet("id", f"L{line}")


def markdown() -> MarkdownIt:
    """The one renderer: CommonMark, tables, raw HTML off, links checked by markdown-it's
    own validateLink (no javascript: or data: URLs), no typographer, no linkify."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.inline.ruler.before("link", "wikilink", _wikilink)
    md.inline.ruler.before("link", "citation", _citation)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("citation", _render_citation)
    md.core.ruler.push("line_numbers", _line_numbers)
    return md


class Renderer:
    """Renders markdown with the caller's link decisions."""

    def __init__(self, wikilink: WikiLinker, citation: CiteLinker) -> None:
        self.md = markdown()
        self.wikilink = wikilink
        self.citation = citation

    def _env(self, offset: int, ids: bool = True) -> dict[str, Any]:
        return {
            "wikilink": self.wikilink,
            "citation": self.citation,
            "line_offset": offset,
            "ids": ids,
        }

    def render(self, body: str, line_offset: int = 0) -> str:
        """``body`` as HTML; ``line_offset``: the lines above it in the file (frontmatter)."""
        return str(self.md.render(body, self._env(line_offset)))

    def blocks(self, body: str) -> list[str]:
        """The top-level blocks of ``body`` as their source text, in order."""
        lines = body.splitlines(keepends=True)
        out = []
        for token in self.md.parse(body, {"wikilink": self.wikilink, "citation": self.citation}):
            if token.map is not None and token.level == 0 and token.nesting >= 0:
                out.append("".join(lines[token.map[0] : token.map[1]]))
        return out

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        """The rendered diff of two bodies: (``same``, ``add`` or ``del``, the block's
        HTML) in reading order; a changed block shows as its old version removed, then its
        new version added."""
        a, b = self.blocks(old), self.blocks(new)
        out: list[tuple[str, str]] = []
        env = self._env(0, ids=False)
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op == "equal":
                out += [("same", str(self.md.render(s, env))) for s in b[j1:j2]]
                continue
            out += [("del", str(self.md.render(s, env))) for s in a[i1:i2]]
            out += [("add", str(self.md.render(s, env))) for s in b[j1:j2]]
        return out
