"""`llmwiki ingest` (files to sources/) and `llmwiki compile` (sources to pages, one candidate)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..providertable import CHAT_PROVIDERS, DEFAULT_CHAT
from ..wording import plural
from .app import _age, _note, _one_of, _workspace, cli

if TYPE_CHECKING:
    from ..compiler.progress import Progress
    from ..compiler.service import CompileResult


@cli.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="Print what was ingested as JSON.")
@click.pass_context
def ingest(ctx: click.Context, files: tuple[str, ...], as_json: bool) -> None:
    """Copy FILE... into sources/<slug>.md as sources to compile from, in one commit.

    Markdown and text are kept as they are, HTML becomes markdown and PDF text (those two
    need the `ingest` extra). Each source gets frontmatter with its original name, type and
    size; past 100,000 characters it is cut and marked `truncated: true`. FILE must be a
    regular file inside the repository (not a symlink, not in a hidden folder); a binary,
    empty or oversize file is refused, and then nothing is written. Ingesting the same
    content again changes nothing.

    \b
    Examples:
      llmwiki ingest inbox/paper.pdf inbox/notes.md
      llmwiki ingest saved/article.html --json
    """
    from ..compiler.ingest import ingest_files

    ws = _workspace(ctx)
    base = ctx.obj["repo"] if ctx.obj["repo"] is not None else Path.cwd()
    paths = [(Path(os.path.abspath(base / name)), name) for name in files]
    result = ingest_files(ws, paths, None if as_json else _note)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return
    for item in result.files:
        cut = ", truncated" if item.truncated else ""
        click.echo(f"{item.status.capitalize()}: {item.name} → {item.target} ({item.kind}, {plural(item.chars, 'character')}{cut})")
    if result.commit is None:
        click.echo("Nothing changed: every source was already there.", err=True)
    else:
        click.echo(f"Committed {result.commit[:12]}. Next: `llmwiki compile` writes wiki pages from the sources.", err=True)


@cli.command("compile")
@click.option("--publish", is_flag=True,
              help="Approve the run's candidate at once, through the same validation as `llmwiki review approve`.")
@click.option("--provider", default=None, metavar="NAME",
              help=f"{_one_of([p for p in CHAT_PROVIDERS if p != DEFAULT_CHAT])} to write concept pages with a model; "
                   f"{DEFAULT_CHAT} for offline source notes (default: LLMWIKI_PROVIDER, config, first with "
                   f"credentials, else {DEFAULT_CHAT}).")
@click.option("--concurrency", type=click.IntRange(1, 16, clamp=True), default=4, show_default=True,
              help="Model requests in flight at once (1 to 16).")
@click.option("--json", "as_json", is_flag=True, help="Print the run (sources, pages, candidate, usage) as JSON.")
@click.pass_context
def compile_(ctx: click.Context, publish: bool, provider: str | None, concurrency: int, as_json: bool) -> None:
    """Write wiki pages from the sources that changed since their pages were written, as ONE
    review candidate branch (kind compile/1); prints its id.

    Offline (no provider configured) each source gets a source note: its title, an
    extractive summary, key passages with line citations ^[name.md:L-L], and [[links]] to
    the pages it mentions. With a model, concepts are extracted per source and one page is
    written or updated per concept. Every page records its sources (frontmatter `sources:`,
    trailers `Llmwiki-Source: <path> <blob>`). A run with no source changed makes no model
    request and no branch.

    \b
    Examples:
      llmwiki compile                  stage a run; then `llmwiki review show <id>`
      llmwiki compile --publish        stage and approve it at once
      llmwiki compile --provider openai --concurrency 8
    """
    from ..compiler.service import compile_wiki

    ws = _workspace(ctx)
    ws.require_git("compiling sources")

    def progress(state: Progress) -> None:
        if as_json:
            return
        eta = state.eta
        left = f", about {_age(eta)} left" if eta is not None and state.done < state.total else ""
        click.echo(f"  {state.phase}: {state.done}/{state.total} {state.current}{left}", err=True)

    result = compile_wiki(ws, provider=provider, publish=publish, concurrency=concurrency, on_progress=progress,
                          note=None if as_json else _note)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        ctx.exit(result.exit_code)
    _render_compile(result)
    ctx.exit(result.exit_code)


def _render_compile(result: CompileResult) -> None:
    for path, why in result.unreadable:
        _note(f"warning: {path} cannot be compiled ({why}); skipped")
    for path, cid in result.staged_elsewhere.items():
        _note(f"{path} is staged already in candidate {cid}: approve or reject it first")
    if not result.compiled:
        click.echo(f"Nothing to compile: {plural(len(result.up_to_date), 'source')} up to date"
                   + (f", {len(result.staged_elsewhere)} staged for review" if result.staged_elsewhere else "") + ".")
        return
    if result.raced:
        click.echo(f"Nothing to compile: another compile recorded or staged {', '.join(result.raced)} meanwhile "
                   "(`llmwiki review list` shows it).")
        return
    usage = result.usage
    if usage.requests:
        _note(f"Model: {result.model}: {plural(usage.requests, 'request')}, {usage.input_tokens} tokens in, "
              f"{usage.output_tokens} out{' (some estimated)' if usage.estimated else ''}.")
    if result.candidate is None:
        click.echo(f"Nothing to stage: the pages of {plural(len(result.compiled), 'source')} already read so.")
        return
    staged = result.candidate
    click.echo(f"Staged {staged.candidate_id}: {plural(len(staged.files), 'page')} from "
               f"{plural(len(result.compiled), 'source')} on {staged.branch}.")
    for page in result.pages:
        _note(f"  {page.target} ({'new' if page.change == 'add' else 'rewritten'}) from {', '.join(page.sources)}")
    if result.approved is not None:
        click.echo(f"Approved {staged.candidate_id} (commit {result.approved.commit[:12]}).")
    elif result.refusal:
        _note(result.refusal)
    else:
        _note(f"Inspect with `llmwiki review show {staged.candidate_id}`, approve with "
              f"`llmwiki review approve {staged.candidate_id}`.")
