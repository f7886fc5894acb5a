"""`llmwiki index` (build the search index) and `llmwiki context` (an evidence pack)."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from ..wording import plural
from .app import _require_some_wiki, _workspace, cli
from .progress import Progress


@cli.command()
@click.option(
    "--full", is_flag=True, help="Re-embed every chunk instead of reusing unchanged ones."
)
@click.option(
    "--fast",
    is_flag=True,
    help="Lexical index only (BM25, no embeddings): for very large wikis; semantic ranking is off. Sticky: later plain `llmwiki index` runs keep the index lexical until `llmwiki index --full`.",
)
@click.option(
    "--publish",
    is_flag=True,
    help="Then write the index (its vectors, page table and lexical index; with a shared vector store, the page table and lexical index alone) as a commit on refs/llmwiki/index (no branch or file touched; push it with `git push origin refs/llmwiki/index`).",
)
@click.option(
    "--fetch",
    is_flag=True,
    help="First fetch refs/llmwiki/index from --remote and take every unchanged chunk's vector from it instead of embedding it.",
)
@click.option(
    "--remote",
    default="origin",
    show_default=True,
    metavar="NAME",
    help="The remote --fetch reads (a remote name or URL).",
)
@click.option(
    "--compact",
    is_flag=True,
    help="Also merge the lexical index's appended postings into plain files (done on its own once they pass a fifth of the index; docs/formats.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def index(
    ctx: click.Context,
    full: bool,
    fast: bool,
    publish: bool,
    fetch: bool,
    remote: str,
    compact: bool,
    as_json: bool,
) -> None:
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
    with _EmbedProgress(as_json) as progress:
        summary, written = ws.retrieval().index(
            full=full,
            fast=fast,
            progress=progress,
            publish=publish,
            fetch=remote if fetch else None,
            compact=compact,
        )
    if as_json:
        click.echo(json.dumps(_index_json(summary, written), indent=2))
        return
    _echo_index(summary, written, fast)


class _EmbedProgress(Progress):
    """`index`'s progress: chunks embedded of how many (on a terminal a bar with the rate and
    the time left, with ``--json`` the ``embed`` progress lines), said first with a rough
    time when more than a page's worth is to be embedded."""

    def __init__(self, as_json: bool) -> None:
        super().__init__("embed", "Embedding", as_json=as_json, off_terminal=True, unit="chunks")
        self._said = False

    def __call__(self, done: int, total: int, item: str | None = None) -> None:
        if not self._said and not self.as_json:
            self._said = True
            self.label = f"Embedding {total} chunks"
            if total > 8:  # more than a page's worth: a rough time, and the way around a long one
                click.echo(_embedding_estimate(total, os.cpu_count() or 1), err=True)
        super().__call__(done, total, item)


def _index_json(summary: Any, written: str | None) -> dict[str, Any]:
    """`index --json`'s document (docs/json.md)."""
    return {
        "version": 1,
        "pages": summary.pages,
        "chunks": summary.chunks,
        "read": summary.read,
        "embedded": summary.embedded,
        "reused": summary.reused,
        "fetched": summary.fetched,
        "seconds": round(summary.seconds, 3),
        "backend": summary.backend,
        "indexPage": written,
        "notes": list(summary.notes),
        "published": _publication_json(summary.publication),
    }


def _echo_index(summary: Any, written: str | None, fast: bool) -> None:
    """`index`'s summary for a person."""
    taken = f", {summary.fetched} from refs/llmwiki/index" if summary.fetched else ""
    changed = (
        f" ({summary.read} read: the others did not change)" if summary.read < summary.pages else ""
    )
    click.echo(
        f"Indexed {plural(summary.pages, 'page')}{changed}: {plural(summary.chunks, 'chunk')} ({summary.embedded} embedded, "
        f"{summary.reused} reused{taken}) in {summary.seconds:.1f} s [{summary.backend}]."
    )
    _echo_publication(summary.publication)
    for note in summary.notes:
        click.echo(f"note: {note}", err=True)
    if fast:
        click.echo(
            "note: the index is now lexical-only, and plain `llmwiki index` runs keep it so; "
            "run `llmwiki index --full` to embed it for semantic ranking",
            err=True,
        )
    if written:
        click.echo(f"Regenerated {written}.")


def _publication_json(done: Any) -> dict[str, Any] | None:
    """`index --json`'s ``published``: what `--publish` wrote (None: not asked)."""
    if done is None:
        return None
    return {
        "ref": "refs/llmwiki/index",
        "commit": done.commit,
        "changed": done.changed,
        "chunks": done.chunks,
        "bytes": done.bytes,
        "shared": done.shared,
    }


def _echo_publication(done: Any) -> None:
    if done is None:
        return
    what = (
        "the page table and lexical index (the vectors are in the shared store)"
        if done.shared
        else plural(done.chunks, "vector")
    )
    if not done.changed:
        click.echo(
            f"refs/llmwiki/index already holds {what} ({done.commit[:12]}): nothing new published."
        )
        return
    click.echo(
        f"Published {what} ({done.bytes / 1e6:.1f} MB) as {done.commit[:12]} on "
        "refs/llmwiki/index; share it with `git push origin refs/llmwiki/index`."
    )


def _embedding_estimate(total: int, cores: int) -> str:
    """What `index` says before embedding ``total`` chunks: how long, roughly, with the local
    model (~6 chunks/s per idle core, docs/embeddings.md); the lexical-only way around a
    wait of more than a minute."""
    seconds = total / (6 * cores)
    if seconds < 60:
        return f"Embedding {total} new chunks, roughly {max(1, round(seconds))} s with the local model on {cores} idle cores."
    return (
        f"Embedding {total} new chunks, roughly {round(seconds / 60)} min with the local model on {cores} idle "
        "cores; `llmwiki index --fast` builds a lexical-only index in seconds instead."
    )


@cli.command()
@click.argument("prompt")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the v1 JSON envelope (wins over --format)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--budget",
    type=click.IntRange(min=100),
    default=8000,
    show_default=True,
    help="Token budget (characters / 4); over it, neighbours, source windows, chunks, then pages are trimmed.",
)
@click.option(
    "--depth",
    type=click.IntRange(0, 2, clamp=True),
    default=1,
    show_default=True,
    help="Wikilink graph expansion depth (0 to 2).",
)
@click.option(
    "--top-pages",
    type=click.IntRange(0, 20, clamp=True),
    default=5,
    show_default=True,
    help="Primary pages to include (at most 20).",
)
@click.option(
    "--top-chunks",
    type=click.IntRange(0, 50, clamp=True),
    default=8,
    show_default=True,
    help="Excerpts to include across the primary pages (at most 50).",
)
@click.option(
    "--include-sources",
    is_flag=True,
    help="Add line windows of cited files under sources/ (paths confined to that folder).",
)
@click.option(
    "--omit-root", is_flag=True, help="Leave the absolute project path out (project.root = null)."
)
@click.pass_context
def context(
    ctx: click.Context,
    prompt: str,
    as_json: bool,
    fmt: str,
    budget: int,
    depth: int,
    top_pages: int,
    top_chunks: int,
    include_sources: bool,
    omit_root: bool,
) -> None:
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
    from ..retrieval.context import ContextOptions, render_markdown

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
