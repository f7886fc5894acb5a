"""`llmwiki links` (the citation report of a text), `llmwiki mv` (move pages, rewrite links;
with --review as a move/1 candidate) and `llmwiki merge-pages` (fold one page into another
as a merge/1 candidate, or suggest which)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from ..errors import UsageError
from ..wording import plural
from ..workspace import Workspace
from .app import _note, _read_text_argument, _repo_path, _workspace, cli
from .review import plan_lines

if TYPE_CHECKING:
    from ..publication.move import Moved
    from ..review.stagerewrite import StagedRewrite


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
    from ..pages.service import links_report
    from ..wiki.citations import BROKEN, format_report

    if file == "-" and sys.stdin.isatty():
        raise UsageError(
            "no FILE given, and standard input is a terminal",
            hint="name a file (`llmwiki links draft.md`) or pipe the text in (`llmwiki links < draft.md`)",
        )
    text = _read_text_argument(ctx, file)
    ws = _workspace(ctx)
    report = links_report(ws, text)
    if as_json:
        click.echo(
            json.dumps(
                {"version": 1, "citations": [c.to_json() for c in report]},
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        for line in format_report(report):
            click.echo(line)
    ctx.exit(1 if any(c.status == BROKEN for c in report) else 0)


@cli.command("mv")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option(
    "-n", "--dry-run", is_flag=True, help="Print the moves and every link rewrite; change nothing."
)
@click.option(
    "--review",
    is_flag=True,
    help="Stage the move as a review candidate branch (kind move/1) instead of committing it; "
    "`llmwiki review approve <id>` commits it. Pages only.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the plan (and the commit or the candidate) as JSON.",
)
@click.pass_context
def mv(ctx: click.Context, old: str, new: str, dry_run: bool, review: bool, as_json: bool) -> None:
    """Move a page, a file or a folder and rewrite every link to it, in one commit.

    Rewrites [[OLD]], [[OLD|label]], [[OLD#Heading]], ![[OLD]], path-style [[folder/OLD]] and
    relative markdown links [text](../OLD.md) in every page (labels and anchors kept; never
    inside code), and the relative links of a moved page. Refused before anything moves when
    NEW exists, when a link would become ambiguous, or when a file the commit touches has
    uncommitted edits. A rename you already made (git mv) is finished the same way. With
    --review the same move becomes a review candidate (its pages deleted and added, every
    linking page rewritten), approved all or nothing with `llmwiki review approve`.

    \b
    Examples:
      llmwiki mv wiki/concepts/old-name.md wiki/concepts/new-name.md
      llmwiki mv wiki/concepts/ml wiki/concepts/machine-learning --dry-run
      llmwiki mv wiki/concepts/old-name.md wiki/concepts/new-name.md --review
    """
    from ..publication.move import move
    from ..publication.write import Site

    ws = _workspace(ctx)
    if review:
        from ..review.stagerewrite import stage_move

        staged = stage_move(
            ws,
            _repo_path(ctx, ws, old),
            _repo_path(ctx, ws, new),
            dry_run=dry_run,
            load_wiki=ws.cached_wiki,
            note=None if as_json else _note,
        )
        _render_staged_rewrite(ctx, staged, as_json)
        return
    site = Site.of(ws, "llmwiki mv")
    site.load_wiki = ws.cached_wiki  # every page is read: scans come from the checker's cache
    done = move(
        site,
        _repo_path(ctx, ws, old),
        _repo_path(ctx, ws, new),
        dry_run=dry_run,
        around=ws.neighbourhood,  # after a check: only the pages the move touches are read
    )
    _render_move(ctx, done, dry_run, as_json)


def _render_move(ctx: click.Context, done: Moved, dry_run: bool, as_json: bool) -> None:
    """The output of `mv` (without --review): the commit, or the plan of a dry run."""
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=2, ensure_ascii=False))
        ctx.exit(1 if done.refused else 0)
    for note in [*done.plan.notes, *done.notes]:
        _note(note)
    moved = plural(len(done.plan.moves), "file")
    links_text = (
        f"{plural(done.plan.links, 'link')} in {plural(len(done.plan.edited_files), 'page')}"
    )
    if not dry_run:
        click.echo(
            f"Moved {done.old} → {done.new} ({moved}); rewrote {links_text} (commit {(done.commit or '')[:12]})."
        )
        return
    click.echo(f"Would move {done.old} → {done.new} ({moved}):")
    for path, edit in done.edits():
        click.echo(f"  {path}:{edit.line}:{edit.col}: {edit.old} → {edit.new}")
    for reason in done.plan.refusals:
        click.echo(f"refused: {reason}", err=True)
    if done.refused:
        click.echo("Nothing was changed; llmwiki mv would refuse this move.", err=True)
        ctx.exit(1)
    click.echo(
        f"Would rewrite {links_text}. Nothing was changed; run it without --dry-run to commit.",
        err=True,
    )


@cli.command("merge-pages")
@click.argument("keep", metavar="A", required=False)
@click.argument("fold", metavar="B", required=False)
@click.option(
    "-n",
    "--dry-run",
    is_flag=True,
    help="Print what A gains and every link rewrite; stage nothing.",
)
@click.option(
    "--suggest",
    is_flag=True,
    help="List pages that look like one concept written twice (one title, an alias naming another "
    "page, titles one plural or typo apart; never numbered or dated ones) with the command that "
    "merges each group.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the plan and the candidate (or the suggestions) as JSON.",
)
@click.pass_context
def merge_pages(
    ctx: click.Context,
    keep: str | None,
    fold: str | None,
    dry_run: bool,
    suggest: bool,
    as_json: bool,
) -> None:
    """Fold page B into page A on a review candidate branch (kind merge/1): B's body appended
    to A under a heading of B's title, B's title and aliases added to A's aliases (A's other
    frontmatter kept byte for byte), B deleted, and every link to B rewritten to A ([[B#x]]
    becomes [[A#x]]: the heading moved with B's body). Never automatic: approve it with
    `llmwiki review approve <id>`. A and B are page paths or page names.

    \b
    Examples:
      llmwiki merge-pages --suggest
      llmwiki merge-pages wiki/concepts/transformer.md wiki/concepts/transformers.md --dry-run
      llmwiki merge-pages "Gradient descent" "Gradient descent 2"
    """
    ws = _workspace(ctx)
    if suggest:
        if keep or fold or dry_run:
            raise UsageError(
                "--suggest takes no pages and no --dry-run",
                hint="run `llmwiki merge-pages --suggest`",
            )
        _render_suggestions(ws, as_json)
        return
    if not keep or not fold:
        raise UsageError(
            "merge-pages needs two pages: A (kept) and B (folded into A)",
            hint="llmwiki merge-pages A B, or llmwiki merge-pages --suggest to find candidates",
        )
    from ..review.stagerewrite import stage_merge

    staged = stage_merge(
        ws,
        _page_argument(ctx, ws, keep),
        _page_argument(ctx, ws, fold),
        dry_run=dry_run,
        load_wiki=ws.cached_wiki,
        note=None if as_json else _note,
    )
    _render_staged_rewrite(ctx, staged, as_json)


def _page_argument(ctx: click.Context, ws: Workspace, name: str) -> str:
    """A page path (relative to -C, else to the current folder) or a page name ([[name]]),
    as a path from the repository root."""
    path = _repo_path(ctx, ws, name)
    ws.require_git("merge-pages")
    if name.endswith(".md"):
        return path
    from ..wiki.slug import parse_target

    found = ws.cached_wiki("HEAD").resolve(parse_target(name))
    if found.page is None or found.alternatives:
        what = (
            f"names {', '.join((found.ref or '',) + found.alternatives)}"
            if found.alternatives
            else "names no page"
        )
        raise UsageError(
            f"{name!r} is not a committed page path, and as a page name it {what}",
            hint="give the page's path (wiki/concepts/x.md)",
        )
    return found.page.path


def _render_staged_rewrite(ctx: click.Context, staged: StagedRewrite, as_json: bool) -> None:
    """The output of `mv --review` and `merge-pages`."""
    run = staged.run
    if as_json:
        click.echo(json.dumps(staged.to_json(), indent=2, ensure_ascii=False))
        ctx.exit(1 if run.refusals else 0)
    for note in run.notes:
        _note(note)
    for line in plan_lines(run.plan):
        click.echo(line)
    if staged.dry_run:
        for reason in run.refusals:
            click.echo(f"refused: {reason}", err=True)
        if run.refusals:
            click.echo("Nothing was staged; this would be refused.", err=True)
            ctx.exit(1)
        click.echo("Nothing was staged; run it without --dry-run to stage the candidate.", err=True)
        return
    done = staged.staged
    assert done is not None  # staged unless a dry run (a refusal raises)
    click.echo(
        f"Staged {done.branch} ({plural(len(done.files), 'page')}); nothing on your branch changed."
    )
    click.echo(
        f"Inspect with `llmwiki review show {done.candidate_id}`, approve with "
        f"`llmwiki review approve {done.candidate_id}`.",
        err=True,
    )


def _render_suggestions(ws: Workspace, as_json: bool) -> None:
    from ..checks.duplicates import suggest

    around = ws.neighbourhood("worktree")  # after a check: the names the checker keeps
    try:
        groups = around.suggest() if around is not None else None
    except ValueError:  # damaged facts (checks/parts.py): read every page instead
        groups = None
    if groups is None:
        groups = suggest(ws.cached_wiki("worktree"))
    if as_json:
        click.echo(
            json.dumps(
                {"version": 1, "groups": [g.to_json() for g in groups]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not groups:
        click.echo("No pages look like duplicates.")
        return
    click.echo(
        f"{plural(len(groups), 'group')} of pages that may be one concept (the most linked page is kept):"
    )
    for group in groups:
        named = "; ".join(f'"{n}"' for n in group.names[:3])
        click.echo(f"- {', '.join(group.reasons)}: {named}")
        for page, inbound in group.pages:
            click.echo(f"    {page.path} ({plural(inbound, 'link')} in)")
        for command in group.commands():
            click.echo(f"    {command}")
    click.echo(
        "Each command stages a review candidate; inspect it with `llmwiki review show <id>`.",
        err=True,
    )
