"""`llmwiki ingest` (files to sources/) and `llmwiki compile` (sources to pages, one candidate)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import UsageError
from ..providertable import CHAT_PROVIDERS, DEFAULT_CHAT
from ..wording import plural
from .app import _age, _note, _one_of, _workspace, cli
from .progress import Progress as ProgressLines

if TYPE_CHECKING:
    from ..compiler.progress import Progress
    from ..compiler.retract import RetractResult
    from ..compiler.service import CompileResult


@cli.command()
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|FOLDER|URL...")
@click.option("--json", "as_json", is_flag=True, help="Print what was ingested as JSON.")
@click.pass_context
def ingest(ctx: click.Context, inputs: tuple[str, ...], as_json: bool) -> None:
    """Copy documents into sources/<slug>.md as sources to compile from, in one commit.

    Each argument is a file (anywhere: naming it is asking for it to be read), a folder
    (every .md, .markdown, .txt, .html, .htm, .xhtml and .pdf file in it, recursively;
    hidden folders and symbolic links left out), or an http(s):// URL (fetched within 30
    seconds a read and 32 MB, HTML, markdown, text or PDF by its content type). Markdown and
    text are kept as they are, HTML becomes markdown and PDF text (those two need the
    `ingest` extra: in a clone, pip install '.[ingest]'). Control characters are removed, and
    said so; HTML links that are not http(s) (javascript:, data:…) keep only their text.
    Each source gets frontmatter with its original name, type and size; past 100,000
    characters it is cut and marked `truncated: true`. A symlink, a binary, empty or oversize
    file, or a file in the repository's sources/ or a hidden folder is refused, and then
    nothing is written. Ingesting the same content again changes nothing.

    \b
    Examples:
      llmwiki ingest inbox/paper.pdf ~/Downloads/notes.md
      llmwiki ingest /usr/share/doc/git/html/ --json
      llmwiki ingest https://example.org/article.html
    """
    from ..compiler.ingest import ingest_files
    from ..compiler.inputs import collect
    from ..wiki.provenance import sources_dir

    ws = _workspace(ctx)
    base = ctx.obj["repo"] if ctx.obj["repo"] is not None else Path.cwd()
    top = Path(ws.root)
    paths = collect(
        Path(os.path.abspath(base)), inputs, [top / ".git", top / sources_dir(ws.project_prefix)]
    )
    with ProgressLines("ingest", "Reading", as_json=as_json) as shown:  # docs/json.md
        result = ingest_files(ws, paths, None if as_json else _note, progress=shown)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return
    for item in result.files:
        cut = ", truncated" if item.truncated else ""
        click.echo(
            f"{item.status.capitalize()}: {item.name} → {item.target} ({item.kind}, {plural(item.chars, 'character')}{cut})"
        )
    if result.commit is None:
        click.echo("Nothing changed: every source was already there.", err=True)
    else:
        click.echo(
            f"Committed {result.commit[:12]}. Next: `llmwiki compile` writes wiki pages from the sources.",
            err=True,
        )


def _compile_progress(as_json: bool) -> Callable[[Progress], None]:
    """Compile's progress: JSON lines on stderr with --json (docs/json.md), else a line per
    step on stderr with the time left."""
    lines = ProgressLines("compile", "Compiling", as_json=True)

    def progress(state: Progress) -> None:
        if as_json:
            return lines(state.done, state.total, state.current)
        eta = state.eta
        left = f", about {_age(eta)} left" if eta is not None and state.done < state.total else ""
        click.echo(f"  {state.phase}: {state.done}/{state.total} {state.current}{left}", err=True)

    return progress


@cli.command("compile")
@click.option(
    "--publish",
    is_flag=True,
    help="Approve the run's candidate at once, through the same validation as `llmwiki review approve`.",
)
@click.option(
    "--provider",
    default=None,
    metavar="NAME",
    help=f"{_one_of([p for p in CHAT_PROVIDERS if p != DEFAULT_CHAT])} to write concept pages with a model; "
    f"{DEFAULT_CHAT} for offline source notes (default: LLMWIKI_PROVIDER, config, first with "
    f"credentials, else {DEFAULT_CHAT}).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 16, clamp=True),
    default=4,
    show_default=True,
    help="Model requests in flight at once (1 to 16).",
)
@click.option(
    "--stale",
    is_flag=True,
    help="Rewrite only the pages whose sources changed since they were written (those `llmwiki check` "
    "flags stale-page), and nothing else.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List what the run would compile or rewrite; no model request, no branch.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the run (sources, pages, candidate, usage) as JSON.",
)
@click.pass_context
def compile_(
    ctx: click.Context,
    publish: bool,
    provider: str | None,
    concurrency: int,
    stale: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Write wiki pages from the sources that changed since their pages were written, as ONE
    review candidate branch (kind compile/1); prints its id.

    Offline (no provider configured) each source gets a source note: its title, an
    extractive summary, key passages with line citations ^[name.md:L-L], and [[links]] to
    the pages it mentions. With a model, concepts are extracted per source and one page is
    written or updated per concept. Every page records its sources (frontmatter `sources:`,
    trailers `Llmwiki-Source: <path> <blob>`). A run with no source changed makes no model
    request and no branch.

    With --stale, only the pages recording an older blob of a source than the source's now
    are rewritten (a source note from its source; any other page needs a model), on one
    candidate as well.

    \b
    Examples:
      llmwiki compile                  stage a run; then `llmwiki review show <id>`
      llmwiki compile --publish        stage and approve it at once
      llmwiki compile --provider openai --concurrency 8
      llmwiki compile --stale --dry-run   the stale pages and the sources that changed under them
    """
    from ..compiler.service import compile_wiki

    ws = _workspace(ctx)
    ws.require_git("compiling sources")

    if dry_run and publish:
        raise UsageError("--dry-run and --publish do not go together", hint="drop one of them")
    result = compile_wiki(
        ws,
        provider=provider,
        publish=publish,
        concurrency=concurrency,
        on_progress=_compile_progress(as_json),
        note=None if as_json else _note,
        stale=stale,
        dry_run=dry_run,
    )
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
    if result.mode == "stale" and (result.dry_run or not result.stale):
        _render_stale(result)
        return
    if result.dry_run:
        click.echo(
            f"Would compile {plural(len(result.compiled), 'source')}"
            + (":" if result.compiled else ".")
        )
        for path in result.compiled:
            click.echo(f"  {path}")
        return
    for path in result.needs_model:
        _note(
            f"{path} is stale but only a model rewrites it: run with --provider (see docs/compile.md)"
        )
    if _render_compiled_nothing(result):
        return
    usage = result.usage
    if usage.requests:
        _note(
            f"Model: {result.model}: {plural(usage.requests, 'request')}, {usage.input_tokens} tokens in, "
            f"{usage.output_tokens} out{' (some estimated)' if usage.estimated else ''}."
        )
    _render_compile_candidate(result)


def _render_compiled_nothing(result: CompileResult) -> bool:
    """Why the run compiled nothing, if it did not (False: it compiled)."""
    if result.mode == "stale" and not result.pages and not result.raced:
        click.echo(
            f"Nothing staged: {plural(len(result.needs_model), 'stale page')} "
            f"{'needs' if len(result.needs_model) == 1 else 'need'} a model to rewrite "
            f"{'it' if len(result.needs_model) == 1 else 'them'}."
        )
        return True
    if not result.compiled:
        click.echo(
            f"Nothing to compile: {plural(len(result.up_to_date), 'source')} up to date"
            + (
                f", {len(result.staged_elsewhere)} staged for review"
                if result.staged_elsewhere
                else ""
            )
            + "."
        )
        return True
    if result.raced:
        click.echo(
            f"Nothing to compile: another compile recorded or staged {', '.join(result.raced)} meanwhile "
            "(`llmwiki review list` shows it)."
        )
        return True
    return False


def _render_compile_candidate(result: CompileResult) -> None:
    """The run's candidate: refused by the gate, not needed, or staged with its pages (and
    approved, or refused, or what to do next)."""
    if result.gate is not None:
        click.echo(
            f"Nothing staged: approval would refuse this run: {result.gate}. Fix the sources "
            "(or set the code's severity in [check.severity], docs/check.md), then compile again."
        )
        return
    if result.candidate is None:
        click.echo(
            f"Nothing to stage: the pages of {plural(len(result.compiled), 'source')} already read so."
        )
        return
    staged = result.candidate
    click.echo(
        f"Staged {staged.candidate_id}: {plural(len(staged.files), 'page')} from "
        f"{plural(len(result.compiled), 'source')} on {staged.branch}."
    )
    for page in result.pages:
        _note(
            f"  {page.target} ({'new' if page.change == 'add' else 'rewritten'}) from {', '.join(page.sources)}"
        )
        if page.repairs:
            _note(f"    repaired: {page.repairs.line()}")
    if result.approved is not None:
        click.echo(f"Approved {staged.candidate_id} (commit {result.approved.commit[:12]}).")
    elif result.refusal:
        _note(result.refusal)
    else:
        _note(
            f"Inspect with `llmwiki review show {staged.candidate_id}`, approve with "
            f"`llmwiki review approve {staged.candidate_id}`."
        )


def _render_stale(result: CompileResult) -> None:
    """`compile --stale --dry-run`, or `--stale` with nothing stale: the stale pages."""
    rows = result.stale_json(result.source_blobs)
    if not rows:
        click.echo("Nothing is stale: every page records the blob of its sources as they are now.")
        return
    sources = {fed.source for fed in result.stale}
    click.echo(f"Stale: {plural(len(rows), 'page')} from {plural(len(sources), 'changed source')}:")
    for row in rows:
        for source in row["sources"]:
            click.echo(
                f"  {row['page']}  {source['path']}  blob {source['recordedBlob'][:12]} -> {str(source['blob'])[:12]}"
            )
    click.echo("Run `llmwiki compile --stale` to rewrite them on one review candidate.", err=True)


@cli.command()
@click.argument("source", metavar="SOURCE")
@click.option(
    "--provider",
    default=None,
    metavar="NAME",
    help=f"{_one_of([p for p in CHAT_PROVIDERS if p != DEFAULT_CHAT])} to rewrite the pages that drew on "
    f"several sources; {DEFAULT_CHAT} to mark them instead (default: as for compile).",
)
@click.option(
    "--publish",
    is_flag=True,
    help="Approve the retraction at once, through the same validation as `llmwiki review approve`.",
)
@click.option(
    "--allow-broken",
    is_flag=True,
    help="With --publish: approve although links to the deleted pages break (they are listed).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List what the retraction would delete, rewrite and break; no branch.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 16, clamp=True),
    default=4,
    show_default=True,
    help="Model requests in flight at once (1 to 16).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the retraction (pages, links it breaks, candidate) as JSON.",
)
@click.pass_context
def retract(
    ctx: click.Context,
    source: str,
    provider: str | None,
    publish: bool,
    allow_broken: bool,
    dry_run: bool,
    concurrency: int,
    as_json: bool,
) -> None:
    """Withdraw SOURCE (a file in sources/) and what it fed, as ONE review candidate (kind
    retraction/1): the source deleted, every page written from it alone deleted, and every
    other page that names or cites it rewritten -- by the model from the sources it has left,
    or offline marked `retracted:` with its citations of SOURCE removed (`llmwiki check` then
    flags it stale-page until someone reviews it).

    Links to the deleted pages are listed: approval refuses until they are fixed, or until
    `review approve --allow-broken` says to break them.

    \b
    Examples:
      llmwiki retract sources/paper.md --dry-run
      llmwiki retract sources/paper.md            then `llmwiki review show <id>`
      llmwiki retract sources/paper.md --publish --allow-broken
    """
    from ..compiler.retract import retract as retract_source

    if allow_broken and not publish:
        raise UsageError(
            "--allow-broken needs --publish", hint="or pass it to `llmwiki review approve` later"
        )
    if dry_run and publish:
        raise UsageError("--dry-run and --publish do not go together", hint="drop one of them")
    ws = _workspace(ctx)
    ws.require_git("retracting a source")
    cwd = ctx.obj["repo"] if ctx.obj["repo"] is not None else Path.cwd()
    result = retract_source(
        ws,
        source,
        cwd=Path(os.path.abspath(cwd)),
        provider=provider,
        publish=publish,
        allow_broken=allow_broken,
        dry_run=dry_run,
        concurrency=concurrency,
        note=None if as_json else _note,
    )
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        ctx.exit(result.exit_code)
    _render_retract(result, dry_run=dry_run)
    ctx.exit(result.exit_code)


def _render_retract(result: RetractResult, *, dry_run: bool) -> None:
    """What the retraction deletes, rewrites, leaves alone and breaks; then its candidate."""
    click.echo(
        f"Retracting {result.source}"
        + ("" if result.blob else " (already deleted: only its pages)")
        + ":"
    )
    for path in result.deleted:
        click.echo(f"  delete   {path} (written from it alone)")
    for item in result.rewritten:
        click.echo(
            f"  rewrite  {item.target} ({'by the model' if item.how == 'model' else 'marked retracted, its citations removed'})"
        )
    for path in result.left_alone:
        _note(
            f"  {path} names or cites it, but is yours (llmwiki never writes it): edit it by hand"
        )
    if result.breaks:
        click.echo(
            f"Approval would break {plural(len(result.breaks), 'link')} to the deleted pages (it refuses until "
            "they are fixed, or --allow-broken):"
        )
        for problem in result.breaks:
            click.echo(f"  {problem.location}: {problem.message}")
    if not dry_run:
        _render_retract_candidate(result)


def _render_retract_candidate(result: RetractResult) -> None:
    """The retraction's candidate: staged, approved or refused, and what to do next."""
    staged = result.candidate
    if staged is None:
        click.echo("Nothing to stage.")
        return
    click.echo(f"Staged {staged.candidate_id} on {staged.branch}.")
    if result.approved is not None:
        click.echo(f"Approved {staged.candidate_id} (commit {result.approved.commit[:12]}).")
    elif result.refusal:
        _note(result.refusal)
    else:
        fix = " (fix those links first, or add --allow-broken)" if result.breaks else ""
        _note(
            f"Inspect with `llmwiki review show {staged.candidate_id}`, approve with "
            f"`llmwiki review approve {staged.candidate_id}`{fix}."
        )
