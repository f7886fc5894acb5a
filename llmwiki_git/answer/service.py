"""`llmwiki query`, end to end: provider, retrieval, streamed answer, citation report,
debug snapshot, and publication. Output goes through a small printer interface so the
service stays free of click."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import BEST_EFFORT_ERRORS, LlmwikiError, ProviderError
from ..providers.registry import select_provider
from ..wiki.citations import PendingIndex, format_report
from ..publication.save import Published, Refusal, precheck, profile_refusal, publish
from ..publication.write import Site
from ..wiki.pages import uncheckable
from .query import (NO_MATCH, NOTHING_TO_PUBLISH, QueryResult, answer_stream, debug_json, declines, log_activity, report,
                    retrieve, self_citation)


class Printer(Protocol):
    def text(self, chunk: str) -> None: ...
    def line(self, text: str = "") -> None: ...
    def note(self, text: str) -> None: ...


def pending_index(ws) -> PendingIndex | None:  # type: ignore[no-untyped-def]
    """Open review candidates (branches); none outside git."""
    from ..publication.candidates import pending_index as from_branches

    return from_branches(ws.git) if ws.git is not None else None


def _debug_lines(result: QueryResult) -> list[str]:
    if result.debug is None:
        return ["--- Retrieval debug ---", "Source: none"]
    d = debug_json(result.debug)
    lines = ["--- Retrieval debug ---",
             f"Source: {result.source}; mode: {d['mode']}; reranked: {'yes' if d['reranked'] else 'no'}"]
    lines += [f"• {p['pageId']} (best chunk score {p['score']:.3f})" for p in d["pages"]]
    previews = {}
    for c in d["chunks"]:
        previews.setdefault((c["pageId"], c["chunk"]), c)
    for (page_id, index), c in previews.items():
        lines.append(f"· {page_id}#{index} score={c['score']:.3f} cosine={c['cosine']} bm25={c['bm25']:.3f}")
    return lines


Stager = Callable[[str, str, "PendingIndex | None"], Any]  # (question, answer, pending) -> Staged | Refusal


def site_of(ws) -> Site:  # type: ignore[no-untyped-def]
    """The write site of a workspace (publication's view of it)."""
    return Site(ws.require_git("saving an answer"), ws.root, ws.state_dir, ws.project_prefix, ws.wiki)


def run_query(ws, question: str, *, save: bool, review: bool, lang: str | None, debug: bool,  # type: ignore[no-untyped-def]
              provider: str | None, as_json: bool, out: Printer, stage: Stager | None = None) -> int:
    # bytes that are not UTF-8 in the command line arrive as lone surrogates: make them U+FFFD
    question = question.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    environ = os.environ
    language = lang or environ.get("LLMWIKI_OUTPUT_LANG") or None
    chat = select_provider(provider, environ, ws.settings.chat_provider)
    if save and not review and profile_refusal(ws.state_dir) is None:
        precheck(site_of(ws), question)  # a page in the way refuses before the model is paid
    retrieval = ws.retrieval()
    retrieved = retrieve(retrieval, question, chat)
    result = QueryResult(question, "", chat.name, chat.model, [e.page_id for e in retrieved.evidence],
                         retrieved.source, retrieved.warnings, debug=retrieved.result if debug else None)
    if language and not chat.generative:
        result.warnings.append({"code": "language-ignored", "message": (
            f"answer language {language!r} ignored: the {chat.name} answerer quotes the wiki as written "
            "and cannot translate; choose a chat provider (--provider) to answer in another language")})
    if not retrieved.evidence:
        if save:
            result.refusal = {"code": "no-answer", "targets": [], "message": NOTHING_TO_PUBLISH}
        if as_json:
            out.line(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        else:
            out.line(NO_MATCH)
            for w in result.warnings:
                out.note(f"warning: {w['code']}: {w['message']}")
            if result.refusal is not None:
                out.note(result.refusal["message"])
        return 0
    if not as_json:
        out.note(f"Answering with {chat.name} ({chat.model}) from {len(retrieved.evidence)} page(s): "
                 + ", ".join(result.page_ids))
    pieces: list[str] = []
    try:
        for chunk in answer_stream(chat, question, retrieved, language):
            pieces.append(chunk)
            if not as_json:
                out.text(chunk)
    except ProviderError:
        if pieces and not as_json:
            out.line()
        raise
    result.answer = "".join(pieces)
    if not as_json:
        out.line()
    pending = pending_index(ws)
    result.citations, result.citations_error = report(result.answer, lambda: ws.wiki("worktree"), pending)
    code = 0
    cites_itself = self_citation(question, result.citations) if save else None
    if save and declines(result.answer, chat.name, retrieved.result, result.citations):
        result.refusal = {"code": "no-answer", "targets": [], "message": NOTHING_TO_PUBLISH}
        log_activity(ws.state_dir, question, result.page_ids, chat.name)
    elif cites_itself is not None:
        result.refusal, code = cites_itself, 1
    elif save:
        if review and stage is None:
            raise LlmwikiError("--save --review needs the review feature to stage the answer", hint="use `llmwiki query --save --review`")
        code = _save(ws, result, pending, stage if review else None, out, as_json)
    else:
        refused = log_activity(ws.state_dir, question, result.page_ids, chat.name)
        if refused is not None:
            result.warnings.append(refused)
    if as_json:
        out.line(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return code
    out.line()
    if result.citations is None:
        out.line("Answer citations: unavailable")
        out.note(f"citation report failed: {result.citations_error}")
    else:
        for line in format_report(result.citations):
            out.line(line)
    for w in result.warnings:
        out.note(f"warning: {w['code']}: {w['message']}")
    if debug:
        out.line()
        for line in _debug_lines(result):
            out.line(line)
    if result.refusal is not None:
        out.note(result.refusal["message"])
    elif result.saved:
        out.note(f"Saved query → {result.saved}")
    elif result.candidate_id:
        out.note(f"Staged review candidate {result.candidate_id}")
    else:
        out.note("Tip: use --save to add this answer to your wiki")
    return code


def _save(ws, result: QueryResult, pending: PendingIndex | None, stage: Stager | None,  # type: ignore[no-untyped-def]
          out: Printer, as_json: bool) -> int:
    why = uncheckable(result.question + "\n" + result.answer)
    if why is not None:  # the gate fails closed: never write a page the checker would skip
        result.refusal = Refusal("uncheckable", [], f"Answer publication refused: {why}, so the saved page could not "
                                                    "be link-checked; nothing was written").to_json()
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
    site = site_of(ws)
    try:
        outcome = publish(site, question=result.question, answer=result.answer, page_ids=result.page_ids,
                          pending=pending)
    finally:
        if not as_json:
            for note in site.notes:
                out.note(note)
    if isinstance(outcome, Published):
        result.saved = outcome.path
        try:
            retrieval = ws.retrieval()
            # Never a silent full embedding (issue 15): a wiki that was never indexed gets the
            # lexical index (seconds), and is told how to embed it.
            never = not (ws.state_dir / "embeddings.json").exists()
            retrieval.index(page=False, fast=never)  # the search index only: the commit wrote the table of contents
            if never:
                result.warnings.append({"code": "index-lexical-only",
                                        "message": "the wiki had no search index: built a lexical one (no embedding); "
                                                   "run `llmwiki index` to embed it for semantic search"})
        except BEST_EFFORT_ERRORS as exc:  # the commit stands; the index catches up on the next run
            result.warnings.append({"code": "embeddings-refresh-failed", "message": f"{exc}; run `llmwiki index`"})
        return 0
    result.refusal = outcome.to_json()
    return 1
