"""`llmwiki query`: a streamed, cited answer, then its citation report."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from ..errors import UsageError
from ..providertable import CHAT_PROVIDERS, DEFAULT_CHAT
from .app import _note, _one_of, _require_some_wiki, _workspace, cli

if TYPE_CHECKING:
    from ..answer.query import QueryResult
    from ..answer.service import Stager
    from ..workspace import Workspace


@cli.command()
@click.argument("question", nargs=-1, required=True)
@click.option(
    "--save",
    is_flag=True,
    help="Publish the answer as wiki/queries/<slug>.md in one git commit (after a fresh citation check under the project lock).",
)
@click.option(
    "--review",
    is_flag=True,
    help="With --save: stage the answer as a review candidate branch instead of publishing.",
)
@click.option(
    "--lang",
    default=None,
    metavar="CODE",
    help="Answer language (e.g. ja, zh-CN, German); wins over LLMWIKI_OUTPUT_LANG.",
)
@click.option(
    "--debug",
    is_flag=True,
    help="After the answer, print the retrieval snapshot (pages, chunks, scores, rerank).",
)
@click.option(
    "--provider",
    default=None,
    metavar="NAME",
    help=f"{_one_of(CHAT_PROVIDERS)} (default: LLMWIKI_PROVIDER, config, first with credentials, else {DEFAULT_CHAT}).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON result instead of streaming text."
)
@click.pass_context
def query(
    ctx: click.Context,
    question: tuple[str, ...],
    save: bool,
    review: bool,
    lang: str | None,
    debug: bool,
    provider: str | None,
    as_json: bool,
) -> None:
    """Answer QUESTION from the wiki, citing pages with [[wikilinks]], then report which
    links resolve, are pending review, or are broken.

    QUESTION may be quoted or not: `llmwiki query what is a blob` works too (quote it when
    it holds shell characters such as ? * ' or #).

    \b
    Examples:
      llmwiki query "how is a candidate approved?"
      llmwiki query "what is a blob?" --save
      llmwiki query "what is a tree?" --provider ollama --debug
    """
    if review and not save:
        raise UsageError(
            "--review requires --save", hint='use `llmwiki query "..." --save --review`'
        )
    ws = _workspace(ctx)
    if save:  # before any retrieval or generation: nothing to throw away
        ws.require_git("saving an answer", flag="--save")
    _require_some_wiki(ws)
    note = None if as_json else _note
    stage = None
    if review:
        from ..review.stage import answer_stager

        stage = answer_stager(ws, note)
    result = _answer(
        ws,
        " ".join(question),
        save=save,
        lang=lang,
        debug=debug,
        provider=provider,
        stage=stage,
        streaming=not as_json,
    )
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        _render_query(result, debug)
    ctx.exit(result.exit_code)


def _answer(
    ws: Workspace,
    question: str,
    *,
    save: bool,
    lang: str | None,
    debug: bool,
    provider: str | None,
    stage: Stager | None,
    streaming: bool,
) -> QueryResult:
    """The answer to ``question``; ``streaming``: its pages said and its text printed as it
    arrives (the line ended before an error is said)."""
    from ..answer.service import run_query

    streamed: list[str] = []

    def on_token(chunk: str) -> None:
        streamed.append(chunk)
        click.echo(chunk, nl=False)
        sys.stdout.flush()

    def on_start(result: QueryResult) -> None:
        _note(
            f"Answering with {result.provider} ({result.model}) from {len(result.page_ids)} page(s): "
            + ", ".join(result.page_ids)
        )

    try:
        return run_query(
            ws,
            question,
            save=save,
            lang=lang,
            debug=debug,
            provider=provider,
            stage=stage,
            on_start=on_start if streaming else None,
            on_token=on_token if streaming else None,
            note=_note if streaming else None,
        )
    except BaseException:  # the streamed answer's line is ended before the error is said
        if streamed:
            click.echo()
        raise


def _render_query(result: QueryResult, debug: bool) -> None:
    """The streamed answer's tail: citation report, warnings, debug snapshot, what was written."""
    from ..answer.query import NO_MATCH
    from ..providers.extractive import NO_ANSWER
    from ..wiki.citations import format_report

    if not result.matched:
        click.echo(NO_MATCH)
        for w in result.warnings:
            _note(f"warning: {w['code']}: {w['message']}")
        if result.refusal is not None:
            _note(result.refusal["message"])
        return
    if result.truncated is not None:  # the printed part is kept, and said to be cut short
        click.echo()
        click.echo(f"[answer truncated: {result.truncated['reason']}]", nl=False)
    click.echo()
    click.echo()
    if result.citations is None:
        click.echo("Answer citations: unavailable")
        _note(f"citation report failed: {result.citations_error}")
    else:
        for line in format_report(result.citations):
            click.echo(line)
    for w in result.warnings:
        _note(f"warning: {w['code']}: {w['message']}")
    if debug:
        click.echo()
        for line in _debug_lines(result):
            click.echo(line)
    if result.refusal is not None:
        _note(result.refusal["message"])
    elif result.saved:
        _note(f"Saved query → {result.saved}")
    elif result.candidate_id:
        _note(f"Staged review candidate {result.candidate_id}")
    elif result.answer.strip() != NO_ANSWER:  # "The wiki does not say." is nothing to save
        _note("Tip: use --save to add this answer to your wiki")


def _debug_lines(result: QueryResult) -> list[str]:
    from ..answer.query import debug_json

    if result.debug is None:
        return ["--- Retrieval debug ---", "Source: none"]
    d = debug_json(result.debug)
    lines = [
        "--- Retrieval debug ---",
        f"Source: {result.source}; mode: {d['mode']}; reranked: {'yes' if d['reranked'] else 'no'}",
    ]
    lines += [f"• {p['pageId']} (best chunk score {p['score']:.3f})" for p in d["pages"]]
    previews: dict[tuple[str, int], dict[str, Any]] = {}
    for c in d["chunks"]:
        previews.setdefault((c["pageId"], c["chunk"]), c)
    for (page_id, index), c in previews.items():
        lines.append(
            f"· {page_id}#{index} score={c['score']:.3f} cosine={c['cosine']} bm25={c['bm25']:.3f}"
        )
    return lines
