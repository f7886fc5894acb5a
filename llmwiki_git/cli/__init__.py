"""The `llmwiki` command line: parse, call one service, render; errors translated in one
place (`app.LlmwikiGroup`). One module per command family:

    app.py           the root group, error translation, shared helpers
    check.py         check
    pages.py         links, mv, merge-pages
    search.py        index, context
    query.py         query
    review.py        review stage | list | show | approve | reject
    sources.py       ingest, compile, retract
    integrations.py  serve, hooks install
    view.py          view (a browser page: the view extra)
"""

from __future__ import annotations

from . import app, check, integrations, pages, query, review, search, sources, view  # noqa: F401 - each registers its commands
from .app import EXIT_INTERNAL, EXIT_INTERRUPTED, LlmwikiGroup, cli

__all__ = ["EXIT_INTERNAL", "EXIT_INTERRUPTED", "LlmwikiGroup", "cli", "main"]


def main() -> None:
    """The `llmwiki` process: one command, then exit."""
    app.ONE_COMMAND = True
    cli(prog_name="llmwiki")
