"""The candidate-kind table: every kind of review candidate llmwiki stages, in one place.

A row names the kind (its ``Llmwiki-Kind`` trailer), how it is staged (the command and the
``"module:function"`` under ``llmwiki_git`` that stages it), what approval holds it to (the
shared policy it goes through, the promise it makes about the base, and the
``"module:function"`` that checks that promise), which trailers it carries beyond the
common ones, and how it shows (``review list``/``show``, MCP ``review_list``, the Action's
candidate step, the docs). Trailer parsing (``trailers.py``), validation
(``candidates.py``), approval (``review/approve.py``, ``review/filespolicy.py``), listing
and showing (``review/service.py``) read the row instead of comparing kind names: a new
kind is its row here and its own module (the stager, and its check if it makes a promise
of its own).

Import-light on purpose, like ``providertable.py``: functions are named, imported only when
called (``call``), so this table sits below ``review/`` and ``compiler/`` that implement them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANSWER",
    "CITATIONS",
    "LINKS",
    "BY_NAME",
    "COMPILE_KIND",
    "FILES",
    "KIND",
    "KINDS",
    "KIND_ROWS",
    "MERGE_KIND",
    "MOVE_KIND",
    "MULTI_KINDS",
    "PAGE",
    "PAGE_KIND",
    "RETRACT_KIND",
    "REWRITE_KINDS",
    "KindRow",
    "call",
    "row",
]

#: The approval policies a kind goes through (``review/approve.py`` maps each to its code):
#: a validated answer (citations), a page edit (one file, links), a multi-file run (every
#: file listed, all or nothing: ``review/filespolicy.py``).
ANSWER, PAGE, FILES = "answer", "page", "files"
#: What ``review list`` shows as a candidate's status: its citation counts or its link counts.
CITATIONS, LINKS = "citations", "links"


@dataclass(frozen=True)
class KindRow:
    """One candidate kind.

    ``stager``/``check``: ``"module:function"`` under ``llmwiki_git`` (``check`` None: the
    shared policy is all it promises). ``files``: several files in its one commit, each
    listed with its own target, precondition and digest (else exactly one). ``deletes``: it
    may delete a page. ``rewrites_links``: a move or merge (``Llmwiki-Move-From``/``-To``
    trailers; its commit must be exactly the plan made from them at its base; it may
    rewrite links in a vault's own ``index.md``/``log.md``). ``retracts``: it carries
    ``Llmwiki-Retracts`` and deletes that one source. ``allow_broken``: ``--allow-broken``
    applies (only to links to the pages it deletes). ``question``: its commit body starts
    with the question it answers. ``pending``: the pages it adds count in the pending
    index (links to them are pending, not broken). ``restage``: how to make a refused one
    anew (``{from}``/``{to}``: a move's or merge's trailers, shell-quoted)."""

    name: str
    shows_as: str
    command: str
    stager: str
    policy: str
    promise: str
    check: str | None = None
    files: bool = False
    deletes: bool = False
    rewrites_links: bool = False
    retracts: bool = False
    allow_broken: bool = False
    question: bool = False
    status: str = LINKS
    restage: str = "stage it again on the current tip, then reject this candidate"
    #: a move or merge: the verb of its messages, its candidate ids' prefix, its planner
    #: (``"module:function"``, see ``review/rewrites.run_at``), its commit subject and summary
    #: (``str.format`` templates over the plan), how messages name it (``refers``) and how
    #: ``review show`` heads its plan (``shows_plan``), whether it
    #: renames files in the work tree (a rename already made there stands in its way).
    verb: str = ""
    id_prefix: str = ""
    planner: str = ""
    subject: str = ""
    summary: str = ""
    refers: str = "{from}"
    shows_plan: str = ""
    renames_files: bool = False


#: The kinds' names, for the code that stages each (and modules importing them from
#: ``trailers``); nothing dispatches on them: what differs between kinds is in their row.
KIND = "validated-answer/1"
PAGE_KIND = "page/1"
COMPILE_KIND = "compile/1"
MOVE_KIND = "move/1"
MERGE_KIND = "merge/1"
RETRACT_KIND = "retraction/1"

KIND_ROWS: tuple[KindRow, ...] = (
    KindRow(
        KIND,
        "answer",
        'llmwiki query "…" --save --review (MCP query_wiki)',
        "review.stage:answer_stager",
        ANSWER,
        "writes exactly one query page, never deletes; every citation resolves",
        question=True,
        status=CITATIONS,
        restage='regenerate and restage the answer with `llmwiki query "…" --save --review`, '
        "then reject this candidate",
    ),
    KindRow(
        PAGE_KIND,
        "page edit",
        "llmwiki review stage (MCP propose_page)",
        "review.stagepage:stage_pages",
        PAGE,
        "adds, replaces or deletes one page it read; breaks no link",
        deletes=True,
        restage="re-read the page, propose the edit again on the current tip, "
        "then reject this candidate",
    ),
    KindRow(
        COMPILE_KIND,
        "compile run",
        "llmwiki compile",
        "compiler.service:compile_wiki",
        FILES,
        "adds or replaces pages written from sources; never deletes a file",
        check="review.promises:compile_problem",
        files=True,
        restage="run `llmwiki compile` again on the current tip, then reject this candidate",
    ),
    KindRow(
        MOVE_KIND,
        "move",
        "llmwiki mv OLD NEW --review",
        "review.stagerewrite:stage_move",
        FILES,
        "exactly the move planned from its base: the page moved, every link to it rewritten",
        files=True,
        deletes=True,
        rewrites_links=True,
        restage="run `llmwiki mv {from} {to} --review` again on the current tip, "
        "then reject this candidate",
        verb="move",
        id_prefix="mv",
        planner="review.rewrites:move_at",
        subject="llmwiki: mv {from} -> {to}",
        summary="Moved {moved}; {rewrote}.",
        shows_plan="plan: move {from} → {to}",
        renames_files=True,
    ),
    KindRow(
        MERGE_KIND,
        "page merge",
        "llmwiki merge-pages KEEP FOLD",
        "review.stagerewrite:stage_merge",
        FILES,
        "exactly the merge planned from its base: one page folded into another and deleted, "
        "every link to it rewritten",
        files=True,
        deletes=True,
        rewrites_links=True,
        restage="run `llmwiki merge-pages {to} {from}` again on the current tip, "
        "then reject this candidate",
        verb="merge",
        id_prefix="merge",
        planner="review.rewrites:merge_at",
        subject="llmwiki: merge {from} into {to}",
        summary='Folded {from} into {to} (under the heading "{heading}"; aliases added: '
        "{aliases}); deleted {from}; {rewrote}.",
        refers="{from} into {to}",
        shows_plan='plan: fold {from} into {to} under the heading "{heading}"; '
        "aliases added: {aliases}; {from} deleted",
    ),
    KindRow(
        RETRACT_KIND,
        "retraction",
        "llmwiki retract sources/…",
        "compiler.retract:retract",
        FILES,
        "deletes the retracted source and only the pages whose recorded sources at its base "
        "are exactly that source; rewrites only pages that named or cited it; "
        "--allow-broken breaks only links to the pages it deletes",
        check="review.promises:retraction_problem",
        files=True,
        deletes=True,
        retracts=True,
        allow_broken=True,
        restage="run `llmwiki retract` again on the current tip, then reject this candidate",
    ),
)

#: Each row by its kind's name.
BY_NAME = {r.name: r for r in KIND_ROWS}
#: Every kind's name, in table order.
KINDS = tuple(BY_NAME)
MULTI_KINDS = frozenset(r.name for r in KIND_ROWS if r.files)
REWRITE_KINDS = frozenset(r.name for r in KIND_ROWS if r.rewrites_links)


def row(kind: str | None) -> KindRow | None:
    """The row of ``kind``; None for a kind llmwiki does not know (a forged or newer one)."""
    return BY_NAME.get(kind) if kind is not None else None


def call(path: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names (``module`` under ``llmwiki_git``), imported now."""
    module, _, attribute = path.partition(":")
    found = getattr(importlib.import_module(f"{__package__.rsplit('.', 1)[0]}.{module}"), attribute)
    assert callable(found), path
    return found  # type: ignore[no-any-return]
