"""The `llmwiki` command line: parse, call one service, render; errors translated here only."""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .providertable import CHAT_PROVIDERS, DEFAULT_CHAT
from .errors import Interrupted, LlmwikiError, NotARepository, PathRefused, UsageError, missing_extra
from .terminal import raw_stream
from .workspace import Workspace
from .wording import plural

if TYPE_CHECKING:
    from .answer.query import QueryResult
    from .checks import CheckResult
    from .compiler.progress import Progress
    from .compiler.service import CompileResult

EXIT_INTERNAL = 3


def _one_of(names: Sequence[str]) -> str:
    """``a, b or c`` (the names, for help text)."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


EXIT_INTERRUPTED = Interrupted.exit_code  # 128 + SIGINT


class LlmwikiGroup(click.Group):
    """Translates the one exception tree into messages and exit codes, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        from .terminal import safe_streams

        with safe_streams():  # nothing from a file, model, branch or trailer reaches the terminal raw
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LlmwikiError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C: 130, as a shell reports SIGINT (not 1, "problems found")
            said = f": {exc}" if isinstance(exc, Interrupted) else ""
            click.echo(f"\nInterrupted{said}.", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            missing = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None
            if missing is not None:
                click.echo(f"Error: {missing}", err=True)
                ctx.exit(missing.exit_code)
            if ctx.find_root().params.get("traceback"):
                raise
            if os.environ.get("LLMWIKI_DEBUG"):
                import traceback  # only on this path (~3 ms of imports off every command)

                click.echo(traceback.format_exc(), err=True)
            exc_type, exc_value, _ = sys.exc_info()
            click.echo(
                f"Internal error: {exc_type.__name__ if exc_type else 'error'}: {exc_value}\n"
                "This is a bug in llmwiki. Re-run with --traceback and report it.",
                err=True,
            )
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=LlmwikiGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-C", "--repo", "repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Run as if started in this folder (like git -C).")
@click.option("--wiki-dir", default=None, metavar="DIR",
              help="Wiki root, relative to the project folder (the nearest folder holding .llmwiki/, else the repository root). Default: wiki/ if it exists, else the project folder; or wiki_dir in .llmwiki/config.toml.")
@click.option("--traceback", is_flag=True, help="Show the Python traceback of an internal error.")
@click.version_option(package_name="llmwiki-git", prog_name="llmwiki")
@click.pass_context
def cli(ctx: click.Context, repo: Path | None, wiki_dir: str | None, traceback: bool) -> None:
    """Keep an LLM-maintained markdown wiki in git honest.

    \b
    Examples:
      llmwiki check                      broken [[wikilinks]] in the work tree
      llmwiki check --staged --base HEAD what the pre-commit hook runs
      llmwiki links draft.md             which links of a draft resolve
    """
    ctx.obj = {"repo": repo, "wiki_dir": wiki_dir}


def _read_text_argument(ctx: click.Context, name: str) -> str:
    """FILE as text (``-`` = standard input); a relative FILE is taken from -C, like git -C."""
    from . import confine

    if name == "-":
        data = sys.stdin.buffer.read(confine.MAX_READ_BYTES + 1)
        if len(data) > confine.MAX_READ_BYTES:
            raise UsageError(f"standard input is over the {confine.MAX_READ_BYTES // 1048576} MB limit")
        return _text_of(data, "standard input")
    path = Path(name)
    if ctx.obj["repo"] is not None and not path.is_absolute():
        path = ctx.obj["repo"] / path
    try:  # a FIFO, a device (/dev/zero) or an oversize file is refused, not read forever
        data = confine.read_file(path, name=name)
    except PathRefused as exc:
        reason = exc.reason.removeprefix("cannot read: ")
        raise UsageError(f"cannot read {name}: {reason}", hint="name a file that exists, or - for standard input") from exc
    return _text_of(data, name)


def _text_of(data: bytes, name: str) -> str:
    """``data`` as markdown text: a binary file is refused; bytes that are not UTF-8 are
    replaced, and a warning names where (never silently)."""
    from .wiki.pages import decode

    text, issues = decode(data)
    if text is None:
        raise UsageError(f"cannot read {name}: it is a binary file (it contains NUL bytes), not markdown text",
                         hint="name a markdown file")
    for issue in issues:
        _note(f"warning: {name}:{issue.line}: {issue.message}")
    return text


def _workspace(ctx: click.Context, **kwargs: Any) -> Workspace:
    ws = Workspace.open(ctx.obj["repo"], wiki_dir=ctx.obj["wiki_dir"], **kwargs)
    state = (ws.project or ws.root) / ".llmwiki"
    # An interrupted write is finished or rolled back first (one stat if there is no state
    # folder: the write layer is not even imported, which the hook's time budget notices).
    if ws.git is not None and state.is_dir():
        from .gitstore.transaction import pending

        if pending(state):
            from .publication.write import recover_pending

            try:
                said = recover_pending(ws.git, ws.root, state)
            except (LlmwikiError, OSError) as exc:  # never block this command (the hook's, say): say it, go on
                said = f"llmwiki: could not finish an interrupted write yet ({exc}); the next command retries"
            if said:
                _note(said)
    return ws


def _note(text: str) -> None:
    click.echo(text, err=True)


def _require_some_wiki(ws: Workspace, pages: int | None = None) -> None:
    """Outside git, a folder with no markdown page is no wiki: say so instead of reporting
    success on nothing (and before anything is written to .llmwiki/)."""
    if ws.git is not None:
        return
    if pages is None:
        pages = len(ws.wiki("worktree").pages)
    if pages == 0:
        raise NotARepository(f"no wiki here: {ws.root} is not in a git repository and holds no markdown page",
                             hint="run llmwiki inside your wiki's repository, or point -C at it")


def _render_text(result: CheckResult, base: str | None, scope: str) -> None:
    if result.problems:  # one write: a line each cost a flush each (~5 ms per 1,000 problems)
        click.echo("\n".join(f"{p.location}: {'' if p.severity == 'error' else 'warning: '}{p.message}"
                              for p in result.problems))
    errors, warnings = len(result.errors), len(result.warnings)
    what = f"new in {scope} since {base}" if base else f"in {scope}"
    if errors:
        unchecked = sum(1 for p in result.errors if p.code == "unchecked-page")
        links = sum(1 for p in result.errors if p.code in ("broken-link", "empty-link", "broken-relative-link"))
        other = errors - unchecked - links  # codes set to `error` in [check.severity]
        # a page that cannot be checked is no broken link (it said "4 broken links" for 2)
        found = [plural(links, "broken link")] if links else []
        found += [plural(other, "other error")] if other else []
        found += [f"{plural(unchecked, 'page')} that cannot be checked"] if unchecked else []
        steps = ["fix the links, or create the missing pages"] if links else []
        steps += ["fix the other errors (codes: docs/check.md)"] if other else []
        steps += ["save those pages as UTF-8 text within the size limit, or keep them out of the wiki"] if unchecked else []
        click.echo(f"{plural(result.checked, 'page')} checked: {' and '.join(found)} {what}, "
                   f"{plural(warnings, 'warning')}; {'; '.join(steps)}.", err=True)
    else:
        click.echo(f"{plural(result.checked, 'page')} checked: no broken links {what}, {plural(warnings, 'warning')}.", err=True)


def _write_github_files(result: CheckResult) -> None:
    from . import github

    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(github.summary(result.problems, result.checked))
    output_path = os.environ.get("GITHUB_OUTPUT")
    if output_path:
        with open(output_path, "a", encoding="utf-8") as handle:
            handle.write(f"broken={len(result.errors)}\nwarnings={len(result.warnings)}\nchecked={result.checked}\n")


@cli.command()
@click.option("--staged", is_flag=True, help="Check the git index: exactly what the next commit will contain.")
@click.option("--rev", default=None, metavar="COMMIT", help="Check the tree of a commit instead of the work tree.")
@click.option("--base", default=None, metavar="COMMIT",
              help="Report only problems that are new since this commit (links newly broken, including by renames and deletions).")
@click.option("--head", default=None, metavar="COMMIT", help="With --base: the commit to compare (default: the work tree, or the index with --staged).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="text: path:line:col lines; json: the v1 envelope; github: workflow annotations plus a step summary.")
@click.option("--json", "as_json", is_flag=True, help="Shorthand for --format json.")
@click.option("--no-cache", is_flag=True, help="Do not use or update the scan cache in the git directory.")
@click.pass_context
def check(ctx: click.Context, staged: bool, rev: str | None, base: str | None, head: str | None,
          fmt: str, as_json: bool, no_cache: bool) -> None:
    """Report broken [[wikilinks]] with path:line:col.

    Exit 0 when no link is broken, 1 when some are, 2 on a usage error. Broken heading
    anchors, malformed frontmatter and unreadable pages are warnings: reported, not fatal.

    \b
    Examples:
      llmwiki check
      llmwiki check --json
      llmwiki check --staged --base HEAD
      llmwiki check --base origin/main --head HEAD --format github
    """
    if sum(bool(x) for x in (staged, rev, head)) > 1:
        raise UsageError("use only one of --staged, --rev and --head")
    if head and not base:
        raise UsageError("--head needs --base", hint="to check one commit use --rev")
    scope = "index" if staged else (rev or head or "worktree")
    ws = _workspace(ctx, use_cache=not no_cache)
    if _ONE_COMMAND:  # the process ends after this command: nothing it builds (scans and
        # cache records by the hundred thousand, none in cycles) needs the cycle collector,
        # whose passes over them cost ~0.3 s on 10,000 pages; frozen, they are not walked
        # again at interpreter exit either (docs/benchmarks.md)
        gc.disable()
    result = ws.check(scope, base)
    if _ONE_COMMAND:
        gc.freeze()
    _require_some_wiki(ws, result.checked)
    renames = _rename_hints(ws, result) if scope == "index" else []
    fmt = "json" if as_json else fmt
    if fmt == "json":
        envelope: dict[str, Any] = {"version": 1, "checked": result.checked,
                                    "problems": [p.to_json() for p in result.problems]}
        if renames:
            envelope["renames"] = [hint.to_json() for hint in renames]
        click.echo(json.dumps(envelope, indent=2, ensure_ascii=False))
    elif fmt == "github":
        from . import github
        from .terminal import echo_command

        for line in github.problem_annotations(result.problems):
            echo_command(line)  # llmwiki's own commands: the only lines that may start with "::"
        _write_github_files(result)
        _render_summary_line(result)
    else:
        _render_text(result, base, {"index": "the index", "worktree": "the work tree"}.get(scope, scope))
    for hint in renames:  # the hook's output too: a staged rename broke these links
        old, new = (os.path.relpath(ws.root / p) if (ws.root / p).resolve().is_relative_to(Path.cwd().resolve())
                    else p for p in (hint.old, hint.new))
        click.echo(f"{hint.old} was renamed to {hint.new}, which breaks {plural(hint.broken, 'link')}; "
                   f"to rewrite them in one commit, run: llmwiki mv {old} {new}", err=True)
    ctx.exit(1 if result.errors else 0)


def _rename_hints(ws: Workspace, result: CheckResult) -> list[Any]:
    """Staged renames that broke links (checks/renames.py)."""
    if not result.renames:
        return []
    from .checks.renames import rename_hints

    return rename_hints(list(result.renames), result)


def _render_summary_line(result: CheckResult) -> None:
    click.echo(f"{plural(result.checked, 'page')} checked: {len(result.errors)} broken, {plural(len(result.warnings), 'warning')}.", err=True)


@cli.command()
@click.argument("file", default="-", metavar="[FILE]")
@click.option("--json", "as_json", is_flag=True, help="Print the v1 citation envelope as JSON.")
@click.pass_context
def links(ctx: click.Context, file: str, as_json: bool) -> None:
    """The citation report for FILE (or standard input): each unique [[link]] resolved,
    pending review, or broken, in order of first appearance.

    FILE is relative to -C when -C is given. Exit 0 when nothing is broken, 1 otherwise.

    \b
    Examples:
      llmwiki links draft-answer.md
      echo 'See [[alpha]] and [[missing]].' | llmwiki links --json
    """
    from .publication.candidates import pending_index
    from .wiki.citations import BROKEN, citation_report, format_report

    if file == "-" and sys.stdin.isatty():
        raise UsageError("no FILE given, and standard input is a terminal",
                         hint="name a file (`llmwiki links draft.md`) or pipe the text in (`llmwiki links < draft.md`)")
    text = _read_text_argument(ctx, file)
    ws = _workspace(ctx)
    report = citation_report(text, ws.wiki("worktree"), pending_index(ws.git) if ws.git else None)
    if as_json:
        click.echo(json.dumps({"version": 1, "citations": [c.to_json() for c in report]}, indent=2, ensure_ascii=False))
    else:
        for line in format_report(report):
            click.echo(line)
    ctx.exit(1 if any(c.status == BROKEN for c in report) else 0)


def _repo_path(ctx: click.Context, ws: Workspace, name: str) -> str:
    """A path argument (relative to -C, else to the current folder) from the repository root."""
    path = Path(name)
    if not path.is_absolute():
        path = (ctx.obj["repo"] or Path.cwd()) / path
    full = Path(os.path.normpath(os.path.abspath(path)))
    try:
        return full.relative_to(ws.root.resolve()).as_posix()
    except ValueError:
        raise UsageError(f"{name} is outside the repository {ws.root}") from None


@cli.command("mv")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option("-n", "--dry-run", is_flag=True, help="Print the moves and every link rewrite; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan (and the commit) as JSON.")
@click.pass_context
def mv(ctx: click.Context, old: str, new: str, dry_run: bool, as_json: bool) -> None:
    """Move a page, a file or a folder and rewrite every link to it, in one commit.

    Rewrites [[OLD]], [[OLD|label]], [[OLD#Heading]], ![[OLD]], path-style [[folder/OLD]] and
    relative markdown links [text](../OLD.md) in every page (labels and anchors kept; never
    inside code), and the relative links of a moved page. Refused before anything moves when
    NEW exists, when a link would become ambiguous, or when a file the commit touches has
    uncommitted edits. A rename you already made (git mv) is finished the same way.

    \b
    Examples:
      llmwiki mv wiki/concepts/old-name.md wiki/concepts/new-name.md
      llmwiki mv wiki/concepts/ml wiki/concepts/machine-learning --dry-run
    """
    from .publication.move import move
    from .publication.write import Site

    ws = _workspace(ctx)
    site = Site.of(ws, "llmwiki mv")
    site.load_wiki = ws.cached_wiki  # every page is read: scans come from the checker's cache
    done = move(site, _repo_path(ctx, ws, old), _repo_path(ctx, ws, new), dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=2, ensure_ascii=False))
        ctx.exit(1 if done.refused else 0)
    for note in [*done.plan.notes, *done.notes]:
        _note(note)
    moved = plural(len(done.plan.moves), "file")
    links_text = f"{plural(done.plan.links, 'link')} in {plural(len(done.plan.edited_files), 'page')}"
    if not dry_run:
        click.echo(f"Moved {done.old} → {done.new} ({moved}); rewrote {links_text} (commit {(done.commit or '')[:12]}).")
        return
    click.echo(f"Would move {done.old} → {done.new} ({moved}):")
    for path, edit in done.edits():
        click.echo(f"  {path}:{edit.line}:{edit.col}: {edit.old} → {edit.new}")
    for reason in done.plan.refusals:
        click.echo(f"refused: {reason}", err=True)
    if done.refused:
        click.echo("Nothing was changed; llmwiki mv would refuse this move.", err=True)
        ctx.exit(1)
    click.echo(f"Would rewrite {links_text}. Nothing was changed; run it without --dry-run to commit.", err=True)


@cli.command()
@click.option("--full", is_flag=True, help="Re-embed every chunk instead of reusing unchanged ones.")
@click.option("--fast", is_flag=True,
              help="Lexical index only (BM25, no embeddings): for very large wikis; semantic ranking is off. Sticky: later plain `llmwiki index` runs keep the index lexical until `llmwiki index --full`.")
@click.option("--publish", is_flag=True,
              help="Then write the index's vectors as a commit on refs/llmwiki/index (no branch or file touched; push it with `git push origin refs/llmwiki/index`).")
@click.option("--fetch", is_flag=True,
              help="First fetch refs/llmwiki/index from --remote and take every unchanged chunk's vector from it instead of embedding it.")
@click.option("--remote", default="origin", show_default=True, metavar="NAME",
              help="The remote --fetch reads (a remote name or URL).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def index(ctx: click.Context, full: bool, fast: bool, publish: bool, fetch: bool, remote: str, as_json: bool) -> None:
    """Build or refresh the search index and regenerate wiki/index.md (only where llmwiki
    owns it: absent or generated; a hand-written index.md is never touched, llmwiki's table
    of contents then goes to .llmwiki/index.md).

    Chunks whose content did not change are never re-embedded. The store lives in
    .llmwiki/ (embeddings.json, embeddings.bin, bm25/), which git ignores.

    After `--fast`, the index stays lexical: a plain `llmwiki index` refreshes it without
    embedding (embedding a large wiki can take an hour); `--full`, or setting
    LLMWIKI_EMBEDDING_PROVIDER, embeds it.

    An index published on refs/llmwiki/index (`--publish`, then pushed) travels with git:
    `--fetch` in a fresh clone takes every unchanged chunk's vector from it; a plain
    `llmwiki index` uses that ref too when it is there.

    \b
    Examples:
      llmwiki index
      llmwiki index --full
      LLMWIKI_EMBEDDING_PROVIDER=none llmwiki index   # same as --fast
      llmwiki index --publish && git push origin refs/llmwiki/index
      llmwiki index --fetch                            # in a fresh clone
    """
    ws = _workspace(ctx)
    _require_some_wiki(ws)
    retrieval = ws.retrieval()
    bar: Any = None

    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if as_json:
            return
        if bar is None:  # chunks done/total, rate and time left (click's ETA)
            if total > 8:  # more than a page's worth: say so first, with a rough time (and the way around a long one)
                click.echo(_embedding_estimate(total, os.cpu_count() or 1), err=True)
            # The bar is our own text, and its carriage returns and cursor codes are the point:
            # it goes to the terminal itself, not through the filter that makes control
            # characters from files and models visible (which printed it as "\x0d\x1b[?25l...").
            bar = click.progressbar(length=total, label=f"Embedding {total} chunks", file=raw_stream(sys.stderr),
                                    show_pos=True, show_eta=True, item_show_func=lambda rate: rate)
            bar.__enter__()
        rate = done / max(time.monotonic() - started, 1e-6)
        bar.update(done - bar.pos, f"{rate:.1f} chunks/s")

    try:
        summary, written = retrieval.index(full=full, fast=fast, progress=progress, publish=publish,
                                           fetch=remote if fetch else None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        click.echo(json.dumps({"version": 1, "pages": summary.pages, "chunks": summary.chunks,
                               "embedded": summary.embedded, "reused": summary.reused, "fetched": summary.fetched,
                               "seconds": round(summary.seconds, 3), "backend": summary.backend,
                               "indexPage": written, "notes": list(summary.notes),
                               "published": _publication_json(summary.publication)}, indent=2))
        return
    taken = f", {summary.fetched} from refs/llmwiki/index" if summary.fetched else ""
    click.echo(f"Indexed {plural(summary.pages, 'page')}: {plural(summary.chunks, 'chunk')} ({summary.embedded} embedded, "
               f"{summary.reused} reused{taken}) in {summary.seconds:.1f} s [{summary.backend}].")
    _echo_publication(summary.publication)
    for note in summary.notes:
        click.echo(f"note: {note}", err=True)
    if fast:
        click.echo("note: the index is now lexical-only, and plain `llmwiki index` runs keep it so; "
                   "run `llmwiki index --full` to embed it for semantic ranking", err=True)
    if written:
        click.echo(f"Regenerated {written}.")


def _publication_json(done: Any) -> dict[str, Any] | None:
    """`index --json`'s ``published``: what `--publish` wrote (None: not asked)."""
    if done is None:
        return None
    return {"ref": "refs/llmwiki/index", "commit": done.commit, "changed": done.changed, "chunks": done.chunks,
            "bytes": done.bytes}


def _echo_publication(done: Any) -> None:
    if done is None:
        return
    if not done.changed:
        click.echo(f"refs/llmwiki/index already holds these {plural(done.chunks, 'vector')} ({done.commit[:12]}): "
                   "nothing new published.")
        return
    click.echo(f"Published {plural(done.chunks, 'vector')} ({done.bytes / 1e6:.1f} MB) as {done.commit[:12]} on "
               "refs/llmwiki/index; share it with `git push origin refs/llmwiki/index`.")


def _embedding_estimate(total: int, cores: int) -> str:
    """What `index` says before embedding ``total`` chunks: how long, roughly, with the local
    model (~6 chunks/s per idle core, docs/embeddings.md); the lexical-only way around a
    wait of more than a minute."""
    seconds = total / (6 * cores)
    if seconds < 60:
        return f"Embedding {total} new chunks, roughly {max(1, round(seconds))} s with the local model on {cores} idle cores."
    return (f"Embedding {total} new chunks, roughly {round(seconds / 60)} min with the local model on {cores} idle "
            "cores; `llmwiki index --fast` builds a lexical-only index in seconds instead.")


@cli.command()
@click.argument("prompt")
@click.option("--json", "as_json", is_flag=True, help="Print the v1 JSON envelope (wins over --format).")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True,
              help="Output format.")
@click.option("--budget", type=click.IntRange(min=100), default=8000, show_default=True,
              help="Token budget (characters / 4); over it, neighbours, source windows, chunks, then pages are trimmed.")
@click.option("--depth", type=click.IntRange(0, 2, clamp=True), default=1, show_default=True,
              help="Wikilink graph expansion depth (0 to 2).")
@click.option("--top-pages", type=click.IntRange(0, 20, clamp=True), default=5, show_default=True,
              help="Primary pages to include (at most 20).")
@click.option("--top-chunks", type=click.IntRange(0, 50, clamp=True), default=8, show_default=True,
              help="Excerpts to include across the primary pages (at most 50).")
@click.option("--include-sources", is_flag=True,
              help="Add line windows of cited files under sources/ (paths confined to that folder).")
@click.option("--omit-root", is_flag=True, help="Leave the absolute project path out (project.root = null).")
@click.pass_context
def context(ctx: click.Context, prompt: str, as_json: bool, fmt: str, budget: int, depth: int,
            top_pages: int, top_chunks: int, include_sources: bool, omit_root: bool) -> None:
    """The evidence pack for PROMPT, without generating an answer: primary pages with
    excerpts, graph neighbours, gaps, warnings and next actions.

    \b
    Examples:
      llmwiki context "how are review candidates approved?"
      llmwiki context "trailers" --json --budget 4000 --depth 2
    """
    ws = _workspace(ctx)
    _require_some_wiki(ws)
    ws.listing.prefetch()  # git lists the work tree while the retrieval modules load
    preload = ws.preload_model()  # and the local model starts on the other core
    # One search needs no BLAS thread pool, and starting OpenBLAS's cost a fresh process
    # 0.03-0.08 s of CPU (benchmarks/refresh.py, fresh context); a user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from .retrieval.context import ContextOptions, render_markdown

    options = ContextOptions(budget, depth, top_pages, top_chunks, include_sources, omit_root)
    try:
        pack = ws.retrieval(preload=preload).context(prompt, options)
    finally:
        if preload is not None:
            preload.settle()
    if as_json or fmt == "json":
        click.echo(json.dumps(pack, indent=2, ensure_ascii=False))
    else:
        click.echo(render_markdown(pack), nl=False)


@cli.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--save", is_flag=True, help="Publish the answer as wiki/queries/<slug>.md in one git commit (after a fresh citation check under the project lock).")
@click.option("--review", is_flag=True, help="With --save: stage the answer as a review candidate branch instead of publishing.")
@click.option("--lang", default=None, metavar="CODE", help="Answer language (e.g. ja, zh-CN, German); wins over LLMWIKI_OUTPUT_LANG.")
@click.option("--debug", is_flag=True, help="After the answer, print the retrieval snapshot (pages, chunks, scores, rerank).")
@click.option("--provider", default=None, metavar="NAME", help=f"{_one_of(CHAT_PROVIDERS)} (default: LLMWIKI_PROVIDER, config, first with credentials, else {DEFAULT_CHAT}).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON result instead of streaming text.")
@click.pass_context
def query(ctx: click.Context, question: tuple[str, ...], save: bool, review: bool, lang: str | None, debug: bool,
          provider: str | None, as_json: bool) -> None:
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
    from .answer.service import run_query

    if review and not save:
        raise UsageError("--review requires --save", hint='use `llmwiki query "..." --save --review`')
    ws = _workspace(ctx)
    if save:  # before any retrieval or generation: nothing to throw away
        ws.require_git("saving an answer", flag="--save")
    _require_some_wiki(ws)
    note = None if as_json else _note
    stage = None
    if review:
        from .review.stage import stage_candidate

        def stage(q: str, answer: str, pending: Any) -> Any:
            return stage_candidate(ws, q, answer, pending, note=note)
    streamed: list[str] = []

    def on_token(chunk: str) -> None:
        streamed.append(chunk)
        click.echo(chunk, nl=False)
        sys.stdout.flush()

    def on_start(result: QueryResult) -> None:
        _note(f"Answering with {result.provider} ({result.model}) from {len(result.page_ids)} page(s): "
              + ", ".join(result.page_ids))

    try:
        result = run_query(ws, " ".join(question), save=save, lang=lang, debug=debug, provider=provider, stage=stage,
                           on_start=None if as_json else on_start, on_token=None if as_json else on_token, note=note)
    except BaseException:  # the streamed answer's line is ended before the error is said
        if streamed:
            click.echo()
        raise
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        _render_query(result, debug)
    ctx.exit(result.exit_code)


def _render_query(result: QueryResult, debug: bool) -> None:
    """The streamed answer's tail: citation report, warnings, debug snapshot, what was written."""
    from .answer.query import NO_MATCH
    from .providers.extractive import NO_ANSWER
    from .wiki.citations import format_report

    if not result.matched:
        click.echo(NO_MATCH)
        for w in result.warnings:
            _note(f"warning: {w['code']}: {w['message']}")
        if result.refusal is not None:
            _note(result.refusal["message"])
        return
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
    from .answer.query import debug_json

    if result.debug is None:
        return ["--- Retrieval debug ---", "Source: none"]
    d = debug_json(result.debug)
    lines = ["--- Retrieval debug ---",
             f"Source: {result.source}; mode: {d['mode']}; reranked: {'yes' if d['reranked'] else 'no'}"]
    lines += [f"• {p['pageId']} (best chunk score {p['score']:.3f})" for p in d["pages"]]
    previews: dict[tuple[str, int], dict[str, Any]] = {}
    for c in d["chunks"]:
        previews.setdefault((c["pageId"], c["chunk"]), c)
    for (page_id, index), c in previews.items():
        lines.append(f"· {page_id}#{index} score={c['score']:.3f} cosine={c['cosine']} bm25={c['bm25']:.3f}")
    return lines


@cli.group()
def review() -> None:
    """Review candidates: answers (`query --save --review`) and page edits (`review stage`,
    MCP propose_page) staged as `llmwiki/review/<id>` branches."""


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


@review.command("stage")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--from", "started_from", default=None, metavar="BLOB|COMMIT",
              help="The version the editor read: a blob id, a commit, or 'absent' (default: the page at HEAD).")
@click.option("--restore", is_flag=True, help="After staging, put the staged pages in the work tree back to HEAD.")
@click.option("--json", "as_json", is_flag=True, help="Print the staged candidates as JSON.")
@click.pass_context
def review_stage(ctx: click.Context, paths: tuple[Path, ...], started_from: str | None, restore: bool,
                 as_json: bool) -> None:
    """Stage work-tree page edits as review candidates: one `llmwiki/review/<id>` branch per
    page (default: every changed page under the wiki root), one commit on the current tip.
    A deleted page becomes a deletion candidate. The work tree keeps the edits unless
    --restore is given."""
    from .review.stagepage import restore as restore_pages, stage_pages, worktree_edits

    ws = _workspace(ctx)
    top = Path(ws.root).resolve()
    rels = []
    for path in paths:
        full = Path(os.path.abspath(path))
        try:
            rels.append(full.relative_to(top).as_posix())
        except ValueError:
            raise UsageError(f"{path} is outside the repository {top}") from None
    edits = worktree_edits(ws, rels, started_from)
    staged = stage_pages(ws, edits, None if as_json else _note)
    kept = restore_pages(ws, edits) if restore else []
    if as_json:
        click.echo(json.dumps({"version": 1, "staged": [{"id": s.candidate_id, "branch": s.branch, "commit": s.commit,
                                                          "target": s.target, "precondition": s.precondition}
                                                         for s in staged], "keptInWorktree": kept}, indent=2))
        return
    for s in staged:
        click.echo(f"Staged {s.target} as {s.branch} ({s.precondition}).")
    for rel in kept:
        click.echo(f"warning: {rel} changed again after staging; left as it is", err=True)
    click.echo("Inspect with `llmwiki review show <id>`, approve with `llmwiki review approve <id>`.", err=True)


@review.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the candidates as JSON.")
@click.pass_context
def review_list(ctx: click.Context, as_json: bool) -> None:
    """Open candidates, oldest first: id, kind, target, age, citation status now, base."""
    import time

    from .review.service import list_view

    ws = _workspace(ctx)
    rows = list_view(ws)
    if as_json:
        click.echo(json.dumps({"version": 1, "candidates": [r.to_json() for r in rows]}, indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("No pending candidates.")
        return
    now = time.time()
    for row in rows:
        for note in row.notes:
            click.echo(f"warning: {row.id}: {note}", err=True)
        click.echo(f"{row.id}  {row.kind or '?'}  {row.target or '?'}  {_age(now - row.committed_at)}  "
                   f"{row.citation_status}  base {row.base[:12] if row.base else '?'}")
    click.echo("Inspect one with `llmwiki review show <id>`.", err=True)


@review.command("show")
@click.argument("candidate_id")
@click.option("--json", "as_json", is_flag=True, help="Print metadata, citation report, diff and verdict as JSON.")
@click.option("--onto", default=None, metavar="REF",
              help="Judge approval onto this branch or commit instead of the current branch (CI checkouts are detached).")
@click.pass_context
def review_show(ctx: click.Context, candidate_id: str, as_json: bool, onto: str | None) -> None:
    """Metadata, the citation report as it stands now, the diff against the current tip, and
    whether approval would pass (and why not)."""
    from .review.service import show_view
    from .wiki.citations import format_report

    ws = _workspace(ctx)
    view = show_view(ws, candidate_id, onto)
    if as_json:
        click.echo(json.dumps(view.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(f"Candidate {view.candidate.id}")
        for key, value in view.metadata().items():
            if key == "question" and not value:
                continue  # a page edit asks no question (it printed an empty "question:" line)
            if value is not None or not view.pages:
                click.echo(f"{key}: {value}")
        provenance = view.provenance()
        for source in provenance.get("sources", []):
            click.echo(f"source: {source['path']} (blob {source['blob']})")
        for key in ("model", "prompt"):
            if provenance.get(key):
                click.echo(f"{key}: {provenance[key]}")
        click.echo("")
        if view.verdict.citations is not None:
            for line in format_report(view.verdict.citations):
                click.echo(line)
        click.echo("")
        if view.pages and "threeWay" not in view.verdict.details:  # a compile run: page by page
            for number, item in enumerate(view.pages, 1):
                titled = f" \"{item['title']}\"" if item.get("title") else ""
                click.echo(f"=== page {number}/{len(view.pages)}: {item['target']}{titled} (was: {item['precondition']}) ===")
                click.echo(item["diff"].rstrip("\n") or "(no change against the current tip)")
                click.echo("")
        else:
            click.echo(view.diff.rstrip("\n"))
            click.echo("")
        verdict = view.verdict
        click.echo(("Approval would pass: " if verdict.ok else f"Approval would be refused ({verdict.code}): ") + verdict.message)
    ctx.exit(0)


@review.command("approve")
@click.argument("candidate_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def review_approve(ctx: click.Context, candidate_id: str, as_json: bool) -> None:
    """Publish a candidate: a validated fast-forward of the current branch (the candidate
    commit itself, or the same change replayed on the new tip) plus a commit refreshing
    wiki/index.md and log.md where llmwiki owns them, moved onto the branch at once as one
    transaction. Any refusal changes nothing and exits 1; after a crash, the next llmwiki
    command finishes or rolls back the approval."""
    from .review.service import approve_candidate

    ws = _workspace(ctx)
    done = approve_candidate(ws, candidate_id, None if as_json else _note)
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=2))
        return
    if done.already:
        click.echo(f"{candidate_id} was already on the branch (commit {done.commit[:12]}); finished its remaining steps.")
        click.echo(f"Candidate {candidate_id} cleared.")
        return
    how = "replayed on the current tip" if done.replayed else "fast-forward"
    what = done.target if len(done.targets) <= 1 else f"{len(done.targets)} pages: {', '.join(done.targets)}"
    click.echo(f"Approved {candidate_id} → {what} ({how}, commit {done.commit[:12]}).")
    click.echo(f"Candidate {candidate_id} cleared.")


@review.command("reject")
@click.argument("candidate_id")
@click.pass_context
def review_reject(ctx: click.Context, candidate_id: str) -> None:
    """Close a candidate: its branch moves to refs/llmwiki/rejected/<id> (the commit is kept)."""
    from .review.service import reject_candidate

    done = reject_candidate(_workspace(ctx), candidate_id)
    click.echo(f"Rejected {done.candidate_id}; its commit is kept at {done.ref}.")


# -- growing the wiki from sources: ingest, compile (docs/compile.md) -------------------------


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
    from .compiler.ingest import ingest_files

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
    from .compiler.service import compile_wiki

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


@cli.command()
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="The wiki to serve: any folder inside its repository (default: -C, else the current folder).")
@click.pass_context
def serve(ctx: click.Context, root: Path | None) -> None:
    """Serve the wiki to AI agents over MCP on stdio: context packs, cited answers, search,
    pages, link checks, review candidates and status.

    Needs the optional MCP SDK: pip install '.[local,mcp]' from a clone. Register the command
    `llmwiki serve --root /path/to/wiki` with your agent client (see docs/mcp.md).
    """
    from .mcp_server import main as serve_stdio

    serve_stdio(root or ctx.obj["repo"] or Path.cwd(), wiki_dir=ctx.obj["wiki_dir"])


@cli.group()
def hooks() -> None:
    """Git hooks that keep broken links out of commits."""


@hooks.command("install")
@click.option("--force", is_flag=True, help="Replace existing pre-commit / pre-merge-commit hooks that are not llmwiki's.")
@click.pass_context
def hooks_install(ctx: click.Context, force: bool) -> None:
    """Install the plain git pre-commit and pre-merge-commit hooks (no pre-commit framework
    needed).

    Both run `llmwiki check --staged --base HEAD` and refuse a commit, or a merge git would
    commit by itself, that adds broken links. With the pre-commit framework, use the
    `llmwiki-check` hook instead (docs/hooks.md: install it for merges too).
    """
    from .hooks import install

    ws = _workspace(ctx)
    git = ws.require_git("installing a hook")
    start = (ctx.obj["repo"] or Path.cwd()).resolve()
    directory = start.relative_to(ws.root.resolve()).as_posix() if start != ws.root.resolve() else "."
    paths = install(git, force=force, directory=directory, wiki_dir=ctx.obj["wiki_dir"])
    where = "" if directory == "." else f" (they check the wiki of {directory}, as `llmwiki -C {directory} check` does)"
    click.echo(f"Installed the pre-commit and pre-merge-commit hooks at {paths[0].parent}{where}.")
    click.echo("Commits and merges that add broken [[wikilinks]] will now be refused; skip once with "
               "`git commit --no-verify` (`git merge --no-verify`).")


_ONE_COMMAND = False  # True in the `llmwiki` process itself (not when cli is called in-process)


def main() -> None:
    global _ONE_COMMAND
    _ONE_COMMAND = True
    cli(prog_name="llmwiki")
