"""The query pipeline: retrieve evidence, stream a grounded answer, report its citations.

Publication (``--save``, ``--save --review``) lives in `publish`; this module never writes
wiki pages. Unsaved queries are journaled to ``.llmwiki/activity.log`` so reading the wiki
never dirties the work tree.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DATA_ERRORS
from ..providers.base import AnswerRequest, ChatProvider, Evidence, StreamState
from ..providers.extractive import NO_ANSWER
from ..publication.document import now_iso, query_slug
from ..retrieval.loaded import Loaded
from ..retrieval.pagetable import PageEntry
from ..retrieval.search import SearchResult
from ..retrieval.service import Retrieval
from ..wiki import frontmatter
from ..wiki.citations import Citation, PendingIndex, citation_report
from ..wiki.model import Wiki
from ..wiki.pages import unusable_notes
from ..wiki.slug import parse_target

NO_MATCH = "No matching pages found."


@dataclass
class Retrieved:
    evidence: list[Evidence]
    result: SearchResult | None
    source: str  # "chunk-level" | "page-level" | "lexical"
    warnings: list[dict[str, str]] = field(default_factory=list)
    broken: tuple[str, ...] = ()  # wikilink targets of the evidence that name no page


@dataclass
class QueryResult:
    question: str
    answer: str
    provider: str
    model: str
    page_ids: list[str]
    source: str
    warnings: list[dict[str, str]]
    citations: list[Citation] | None = None
    citations_error: str | None = None
    debug: SearchResult | None = None
    saved: str | None = None
    candidate_id: str | None = None
    refusal: dict[str, Any] | None = None
    exit_code: int = 0  # 1 when publication was refused (the answer is kept)
    truncated: dict[str, Any] | None = None  # the answer was cut short (see truncation())

    @property
    def matched(self) -> bool:
        """Some page grounded the answer (else nothing was asked of the model)."""
        return bool(self.page_ids)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": 1,
            "question": self.question,
            "answer": self.answer,
            "provider": {"name": self.provider, "model": self.model},
            "pageIds": self.page_ids,
            "source": self.source,
            "warnings": self.warnings,
            "truncated": self.truncated,
        }
        if self.citations is not None:
            out["answerCitations"] = {
                "version": 1,
                "citations": [c.to_json() for c in self.citations],
            }
        else:
            out["answerCitations"] = None
            out["citationsError"] = self.citations_error
        if self.debug is not None:
            out["debug"] = debug_json(self.debug)
        out["saved"] = self.saved
        out["candidateId"] = self.candidate_id
        out["publicationRefusal"] = self.refusal
        return out


def debug_json(result: SearchResult) -> dict[str, Any]:
    return {
        "mode": result.mode,
        "reranked": result.reranked,
        "pages": [{"pageId": p, "score": round(s, 4)} for p, s in result.pages],
        "chunks": [
            {
                "pageId": c.page_id,
                "chunk": c.chunk_index,
                "score": round(c.score, 4),
                "cosine": None if c.cosine is None else round(c.cosine, 4),
                "bm25": round(c.bm25, 4),
            }
            for c in result.chunks
        ],
    }


def _select_with_llm(
    provider: ChatProvider, question: str, loaded: Loaded, limit: int = 5
) -> list[str]:
    """Let the model pick pages from titles and summaries (the no-store fallback)."""
    listing = "\n".join(
        f"- **{p.page_id}**: {p.title} — {p.summary}".rstrip(" —") for p in loaded.store.pages
    )
    system = (
        "You choose the wiki pages most relevant to a question. Reply with a JSON array of at most "
        f"{limit} page ids taken from the list, most relevant first, and nothing else."
    )
    reply = provider.complete(
        system, f"Wiki pages:\n{listing}\n\nQuestion: {question}", step="select"
    )
    match = re.search(r"\[.*\]", reply, re.S)
    try:
        chosen = json.loads(match.group(0)) if match else []
    except ValueError:
        return []
    known = {p.page_id for p in loaded.store.pages}
    return [c for c in dict.fromkeys(chosen) if isinstance(c, str) and c in known][:limit]


def _link_for(entry: PageEntry, wiki: Wiki | None) -> str:
    """What the answer writes in ``[[...]]`` to cite ``entry``: a link that resolves to that
    page and no other (``user/index`` when ``index`` would also match the home page)."""
    page = wiki.by_path.get(entry.path) if wiki is not None else None
    return (
        wiki.link_to(page)
        if wiki is not None and page is not None
        else entry.page_id.rsplit("/", 1)[-1]
    )


def is_own_target(page_id: str, question: str) -> bool:
    """``page_id`` is the page that saving an answer to ``question`` would write
    (``queries/<slug>.md``): the answer it would replace."""
    folder, _, stem = page_id.rpartition("/")
    return stem == query_slug(question) and folder.rsplit("/", 1)[-1] == "queries"


#: The warnings that say retrieval fell back from the embeddings (page selection may help).
_DEGRADED = (
    "embedding-store-missing",
    "embedding-store-corrupt",
    "embedding-model-mismatch",
    "embedding-index-outdated",
    "embedding-degraded",
)


def retrieve(retrieval: Retrieval, question: str, provider: ChatProvider) -> Retrieved:
    loaded, result = retrieval.search(question)
    warnings = list(loaded.warnings)
    page_ids, source = _ranked(loaded, result, provider, question, warnings)
    wiki = _wiki_for_links(retrieval, warnings)
    evidence = _evidence(retrieval, loaded, result, page_ids, question, wiki, warnings)
    return Retrieved(evidence, result, source, warnings, _broken_links(evidence, wiki))


def _broken_links(evidence: list[Evidence], wiki: Wiki | None) -> tuple[str, ...]:
    """The wikilink targets of the evidence pages that resolve to no page: an answer quoting
    a sentence with one would cite nothing (and a ``--save`` of it be refused)."""
    if wiki is None:
        return ()
    broken: dict[str, None] = {}
    for item in evidence:
        page = wiki.by_id.get(item.page_id)
        for link in page.scan.links if page is not None else ():
            if link.target and link.target not in broken and not link.target.startswith("#"):
                if not wiki.resolve(parse_target(link.target)).resolved:
                    broken[link.target] = None
    return tuple(broken)


def _ranked(
    loaded: Loaded,
    result: SearchResult,
    provider: ChatProvider,
    question: str,
    warnings: list[dict[str, str]],
) -> tuple[list[str], str]:
    """The pages to ground on, best first, and how they were found; with the embeddings
    degraded (one ``embedding-degraded`` warning for all, replacing ``warnings``' own), a
    generative provider picks the pages itself when it can."""
    degraded = [w for w in warnings + result.warnings if w["code"] in _DEGRADED]
    source = "chunk-level" if (loaded.embedder is not None and not result.warnings) else "lexical"
    page_ids = [p for p, _ in result.pages]
    if not degraded:
        return page_ids, source
    warnings[:] = [w for w in warnings if w not in degraded] + [
        {
            "code": "embedding-degraded",
            "message": "; ".join(w["message"] for w in degraded),
        }
    ]
    if provider.generative and loaded.store.pages:
        try:
            picked = _select_with_llm(provider, question, loaded)
        except DATA_ERRORS as exc:  # selection is best effort: fall back to lexical ranking
            warnings.append({"code": "page-selection-failed", "message": str(exc)})
            picked = []
        if picked:
            return picked, "page-level"
    return page_ids, source


def _wiki_for_links(retrieval: Retrieval, warnings: list[dict[str, str]]) -> Wiki | None:
    """The wiki that names the evidence's links (None: it did not load, said in
    ``warnings``), and its pages that can never be quoted."""
    try:
        wiki = retrieval.wiki()
    except DATA_ERRORS as exc:  # the page names are then the links, as the report will show
        warnings.append(
            {
                "code": "links-unchecked",
                "message": f"could not load the wiki to choose unique links ({exc})",
            }
        )
        return None
    # pages whose text is not UTF-8 (or binary) are never searched or quoted: say which
    warnings += [
        {"code": "page-unreadable", "message": note}
        for note in unusable_notes([(p.path, p.scan) for p in wiki.pages])
    ]
    return wiki


def _evidence(
    retrieval: Retrieval,
    loaded: Loaded,
    result: SearchResult,
    page_ids: list[str],
    question: str,
    wiki: Wiki | None,
    warnings: list[dict[str, str]],
) -> list[Evidence]:
    """Each page of ``page_ids`` as read now, with its excerpts: the grounding. A page that
    cannot be read is left out (said in ``warnings``), and so is the page saving this
    question's answer would replace."""
    by_id = {p.page_id: p for p in loaded.store.pages}
    evidence: list[Evidence] = []
    for page_id in page_ids:
        entry = by_id.get(page_id)
        if entry is None:
            continue
        if is_own_target(page_id, question):
            continue  # re-asking a saved question: never grounded on the answer it replaces
        live = retrieval.read_live(entry)
        if live.text is None:
            if not live.missing:
                warnings.append(
                    {
                        "code": "page-unreadable",
                        "message": f"{entry.path}: {live.why}; left out of the grounding",
                    }
                )
            continue
        meta = frontmatter.parse(live.text)
        body = live.text[meta.body_offset :]
        chunk_texts = _excerpts(entry, meta.data, body, result, page_id)
        evidence.append(
            Evidence(page_id, _link_for(entry, wiki), entry.title, body.strip(), tuple(chunk_texts))
        )
    return evidence


def _excerpts(
    entry: PageEntry, meta: Mapping[str, Any], body: str, result: SearchResult | None, page_id: str
) -> list[str]:
    from ..retrieval.chunking import live_chunks

    if result is None:
        return []
    live = live_chunks(entry.title, meta, body)
    out = []
    for hit in result.chunks:
        if hit.page_id == page_id and hit.chunk_index < len(entry.hashes):
            text = live.get(entry.hashes[hit.chunk_index])
            if text:
                out.append(text)
    return out


NOTHING_TO_PUBLISH = (
    "Nothing to publish: the answer says the wiki does not answer this question, so no page "
    "was written. Add the missing knowledge to the wiki, then ask again."
)


def self_citation(question: str, citations: list[Citation] | None) -> dict[str, Any] | None:
    """The refusal for an answer that cites the page it would replace, else None."""
    own = [c.target for c in citations or [] if c.page_id and is_own_target(c.page_id, question)]
    if not own:
        return None
    return {
        "code": "self-citation",
        "targets": own,
        "message": f"Answer publication refused: the answer cites the page it would replace "
        f"({', '.join(f'[[{t}]]' for t in own)}); ask again, or run without --save",
    }


def declines(
    answer: str, generative: bool, result: SearchResult | None, citations: list[Citation] | None
) -> bool:
    """The answer is a non-answer: the offline answerer said the wiki does not say, or a
    model cited nothing for a question whose terms no retrieved passage contains."""
    if answer.strip() == NO_ANSWER or not answer.strip():
        return True
    if not generative or citations:
        return False
    return result is None or not any(hit.bm25 > 0 for hit in result.chunks)


def answer_stream(
    provider: ChatProvider,
    question: str,
    retrieved: Retrieved,
    language: str | None,
    state: StreamState | None = None,
) -> Iterator[str]:
    return provider.stream_answer(
        AnswerRequest(
            question,
            tuple(retrieved.evidence),
            language,
            (query_slug(question), *retrieved.broken),
        ),
        state,
    )


def truncation(
    answer: str, state: StreamState, repeated: bool, period: int
) -> dict[str, Any] | None:
    """What cut the answer short, for the result's ``truncated`` and its warning: the
    stream repeating itself (cut here, the connection closed) or the server stopping at the
    output limit (``LLMWIKI_MAX_TOKENS``); None for a whole answer."""
    if not repeated and state.finish != "length":
        return None
    tokens = (
        f"{state.output_tokens} tokens"
        if state.output_tokens is not None
        else f"about {len(answer) // 4} tokens (estimated)"
    )
    if repeated:
        reason = "repetition"
        what = (
            f"the model repeated the same {period} word(s) over and over: the answer was cut "
            f"after {len(answer)} characters ({tokens}) and the request stopped; ask again, "
            "or use a larger model"
        )
    else:
        reason = "max-tokens"
        what = (
            f"the answer reached the output limit ({tokens}, {len(answer)} characters); "
            "raise LLMWIKI_MAX_TOKENS (e.g. answer=2048) for longer answers"
        )
    return {
        "reason": reason,
        "characters": len(answer),
        "outputTokens": state.output_tokens,
        "message": what,
    }


def report(
    answer: str, load_wiki: Callable[[], Wiki], pending: PendingIndex | None
) -> tuple[list[Citation] | None, str | None]:
    """The citation report on a fresh snapshot, or (None, error) when it cannot be collected."""
    try:
        return citation_report(answer, load_wiki(), pending), None
    except DATA_ERRORS as exc:  # the answer stays; the report is "unavailable"
        return None, f"{exc.__class__.__name__}: {exc}"


def log_activity(
    state_dir: os.PathLike[str] | str, question: str, page_ids: list[str], provider: str
) -> dict[str, str] | None:
    """Append one JSON line to ``.llmwiki/activity.log`` (never in git, never fatal, never
    through a symlink: a refused log is returned as a warning)."""
    from ..errors import PathRefused
    from ..statedir import append_line

    line = json.dumps(
        {
            "at": now_iso(ms=False),
            "operation": "query",
            "question": question,
            "pages": page_ids,
            "provider": provider,
        }
    )
    try:
        append_line(Path(state_dir), "activity.log", line)
    except PathRefused as exc:
        return {"code": "activity-log-refused", "message": f"{exc}; the query was not logged"}
    except OSError:
        pass
    return None
