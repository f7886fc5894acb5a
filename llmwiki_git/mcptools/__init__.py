"""The MCP server's tools, each declared once (name, title, description, input and output
schemas, handler: `base.Tool`) in the module of its family, and listed here in the order
clients see them. A new tool: its declaration (and handler) in a module of this package, a
line here, a section in docs/mcp.md (tests/mcptools/test_mcp.py checks every argument is documented)."""

from __future__ import annotations

from .answering import QUERY_WIKI
from .base import Tool
from .evidence import CONTEXT_PACK, SEARCH_PAGES
from .pages import CHECK_LINKS, PROPOSE_PAGE, READ_PAGE
from .status import REVIEW_LIST, WIKI_STATUS

TOOLS: tuple[Tool, ...] = (
    CONTEXT_PACK,
    QUERY_WIKI,
    SEARCH_PAGES,
    READ_PAGE,
    CHECK_LINKS,
    REVIEW_LIST,
    PROPOSE_PAGE,
    WIKI_STATUS,
)

__all__ = ["TOOLS", "Tool"]
