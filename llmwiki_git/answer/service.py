"""`llmwiki query`, end to end: provider, retrieval, streamed answer, citation report,
debug snapshot, and publication. It returns a `QueryResult`; the answer's tokens stream
through a callback as they arrive. The CLI and the MCP server render the result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..config import Settings
from ..errors import BEST_EFFORT_ERRORS
from ..providers.base import ChatProvider, StreamState
from ..providers.limits import RepeatGuard
from ..providers.registry import select_provider
from ..publication.save import Published, Refusal, precheck, profile_refusal, publish
from ..publication.write import Project, Site
from ..retrieval.service import Retrieval
from ..wiki.citations import PendingIndex
from ..wiki.pages import acceptance_problem
from .query import (
    NOTHING_TO_PUBLISH,
    QueryResult,
    Retrieved,
    answer_stream,
    declines,
    log_activity,
    report,
    retrieve,
    self_citation,
    truncation,
)


class QueryProject(Project, Protocol):
    """What answering takes from the workspace: the write site's project, the settings (the
    default chat provider), the environment (provider keys, ``LLMWIKI_OUTPUT_LANG``: passed
    in, never read from ``os.environ`` here) and the retrieval service."""

    @property
    def settings(self) -> Settings: ...
    @property
    def environ(self) -> Mapping[str, str]: ...
    def retrieval(self) -> Retrieval: ...


def pending_index(ws: Project) -> PendingIndex | None:
    """Open review candidates (branches); none outside git."""
    from ..publication.candidates import pending_index as from_branches

    return from_branches(ws.git) if ws.git is not None else None


Stager = Callable[
    [str, str, "PendingIndex | None"], Any
]  # (question, answer, pending) -> Staged | Refusal
Note = Callable[[str], None]


def run_query(
    ws: QueryProject,
    question: str,
    *,
    save: bool,
    lang: str | None,
    debug: bool,
    provider: str | None,
    stage: Stager | None = None,
    on_start: Callable[[QueryResult], None] | None = None,
    on_token: Callable[[str], None] | None = None,
    note: Note | None = None,
) -> QueryResult:
    """Answer ``question``; with ``save``, publish it (or hand it to ``stage``: --review).
    ``on_start`` sees the result (provider, pages) before the answer streams, ``on_token``
    each piece of it; ``note`` hears what the write says along the way (recovery, ownership).
    The result's ``exit_code`` is 1 when publication was refused."""
    # bytes that are not UTF-8 in the command line arrive as lone surrogates: make them U+FFFD
    question = question.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    environ = ws.environ
    language = lang or environ.get("LLMWIKI_OUTPUT_LANG") or None
    chat = select_provider(provider, environ, ws.settings.chat_provider, settings=ws.settings)
    if save and stage is None and profile_refusal(ws.state_dir) is None:
        _precheck(ws, question, note)
    retrieval = ws.retrieval()
    retrieved = retrieve(retrieval, question, chat)
    result = QueryResult(
        question,
        "",
        chat.name,
        chat.model,
        [e.page_id for e in retrieved.evidence],
        retrieved.source,
        retrieved.warnings,
        debug=retrieved.result if debug else None,
    )
    if language and not chat.generative:
        result.warnings.append(
            {
                "code": "language-ignored",
                "message": (
                    f"answer language {language!r} ignored: the {chat.name} answerer quotes the wiki as written "
                    "and cannot translate; choose a chat provider (--provider) to answer in another language"
                ),
            }
        )
    if not retrieved.evidence:
        if save:
            result.refusal = {"code": "no-answer", "targets": [], "message": NOTHING_TO_PUBLISH}
        return result
    if on_start is not None:
        on_start(result)
    _stream(chat, retrieved, language, result, on_token)
    pending = pending_index(ws)
    result.citations, result.citations_error = report(result.answer, retrieval.wiki, pending)
    _conclude(ws, result, chat, retrieved, save=save, pending=pending, stage=stage, note=note)
    return result


def _precheck(ws: QueryProject, question: str, note: Note | None) -> None:
    """A page in the way refuses the save before the model is paid."""
    early = Site.of(ws, "saving an answer")
    try:
        precheck(early, question)
    finally:
        if note is not None:  # e.g. the recovery of an interrupted write, done under its lock
            for text in early.notes:
                note(text)


def _stream(
    chat: ChatProvider,
    retrieved: Retrieved,
    language: str | None,
    result: QueryResult,
    on_token: Callable[[str], None] | None,
) -> None:
    """The answer into ``result``, each piece to ``on_token`` as it arrives; a model that
    repeats itself is cut off, and a cut answer says why (``answer-truncated``)."""
    pieces: list[str] = []
    state = StreamState()
    guard = RepeatGuard()
    repeated = False
    stream = answer_stream(chat, result.question, retrieved, language, state)
    try:
        for chunk in stream:
            pieces.append(chunk)
            if on_token is not None:
                on_token(chunk)
            if chat.generative and guard.feed(chunk):
                repeated = True
                break
    finally:  # a cut, Ctrl-C or an error: the connection closes, the server stops generating
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    result.answer = "".join(pieces)
    result.truncated = truncation(result.answer, state, repeated, guard.period)
    if result.truncated is not None:
        result.warnings.append({"code": "answer-truncated", "message": result.truncated["message"]})


def _conclude(
    ws: QueryProject,
    result: QueryResult,
    chat: ChatProvider,
    retrieved: Retrieved,
    *,
    save: bool,
    pending: PendingIndex | None,
    stage: Stager | None,
    note: Note | None,
) -> None:
    """After the answer: with ``save``, its refusal or its publication; without, the
    activity log."""
    question = result.question
    cites_itself = self_citation(question, result.citations) if save else None
    if save and declines(result.answer, chat.generative, retrieved.result, result.citations):
        result.refusal = {"code": "no-answer", "targets": [], "message": NOTHING_TO_PUBLISH}
        log_activity(ws.state_dir, question, result.page_ids, chat.name)
    elif cites_itself is not None:
        result.refusal, result.exit_code = cites_itself, 1
    elif save and result.truncated is not None:
        reason = result.truncated["reason"]
        result.refusal = {
            "code": "truncated",
            "targets": [],
            "message": "Answer publication refused: the answer was cut short "
            f"({reason}); nothing was written. Ask again"
            + (", or raise LLMWIKI_MAX_TOKENS" if reason == "max-tokens" else ""),
        }
        result.exit_code = 1
    elif save:
        result.exit_code = _save(ws, result, pending, stage, note)
    else:
        refused = log_activity(ws.state_dir, question, result.page_ids, chat.name)
        if refused is not None:
            result.warnings.append(refused)


def _unsavable(result: QueryResult, max_bytes: int) -> Refusal | None:
    """Why the answer may never be a page (None: it may)."""
    why = acceptance_problem(result.question + "\n" + result.answer, max_bytes=max_bytes)
    if (
        why is not None
    ):  # the one acceptance rule: never write a page the gate or approval would refuse
        return Refusal(
            "uncheckable",
            [],
            f"Answer publication refused: {why}; a saved page must be fully "
            "checkable; nothing was written",
        )
    if "\ufffd" in result.question + result.answer:  # "na\ufffdve" was committed for "naïve"
        return Refusal(
            "replacement-characters",
            [],
            (
                "Answer publication refused: it holds U+FFFD replacement characters (bytes that were not valid UTF-8, "
                "in the question or in a page), which would be committed in place of the real letters; nothing was "
                "written. Save the page as UTF-8, or ask the question in UTF-8"
            ),
        )
    return None


def _save(
    ws: QueryProject,
    result: QueryResult,
    pending: PendingIndex | None,
    stage: Stager | None,
    note: Note | None,
) -> int:
    unsavable = _unsavable(result, ws.settings.max_page_bytes)
    if unsavable is not None:
        result.refusal = unsavable.to_json()
        return 1
    if stage is not None:  # --review: the caller's staging (the review feature), not ours
        outcome = stage(result.question, result.answer, pending)
        if hasattr(outcome, "candidate_id"):
            result.candidate_id = outcome.candidate_id
            return 0
        result.refusal = outcome.to_json()
        return 1
    refusal = profile_refusal(ws.state_dir)
    if refusal is not None:
        result.refusal = refusal.to_json()
        return 0
    site = Site.of(ws, "saving an answer")
    try:
        published = publish(
            site,
            question=result.question,
            answer=result.answer,
            page_ids=result.page_ids,
            pending=pending,
        )
    finally:
        if note is not None:
            for text in site.notes:
                note(text)
    if isinstance(published, Published):
        result.saved = published.path
        _refresh_index(ws, result)
        return 0
    result.refusal = published.to_json()
    return 1


def _refresh_index(ws: QueryProject, result: QueryResult) -> None:
    """The search index after a saved answer, best effort (the commit stands; the index
    catches up on the next run)."""
    try:
        retrieval = ws.retrieval()
        # Never a silent full embedding (issue 15): a wiki that was never indexed gets the
        # lexical index (seconds), and is told how to embed it.
        never = not (ws.state_dir / "embeddings.json").exists()
        retrieval.index(
            page=False, fast=never
        )  # the search index only: the commit wrote the table of contents
        if never:
            result.warnings.append(
                {
                    "code": "index-lexical-only",
                    "message": "the wiki had no search index: built a lexical one (no embedding); "
                    "run `llmwiki index` to embed it for semantic search",
                }
            )
    except BEST_EFFORT_ERRORS as exc:  # the commit stands; the index catches up on the next run
        result.warnings.append(
            {"code": "embeddings-refresh-failed", "message": f"{exc}; run `llmwiki index`"}
        )
