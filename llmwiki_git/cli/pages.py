"""`llmwiki links` (the citation report of a text) and `llmwiki mv` (move pages, rewrite links)."""

from __future__ import annotations

import json
import sys

import click

from ..errors import UsageError
from ..wording import plural
from .app import _note, _read_text_argument, _repo_path, _workspace, cli


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
        raise UsageError("no FILE given, and standard input is a terminal",
                         hint="name a file (`llmwiki links draft.md`) or pipe the text in (`llmwiki links < draft.md`)")
    text = _read_text_argument(ctx, file)
    ws = _workspace(ctx)
    report = links_report(ws, text)
    if as_json:
        click.echo(json.dumps({"version": 1, "citations": [c.to_json() for c in report]}, indent=2, ensure_ascii=False))
    else:
        for line in format_report(report):
            click.echo(line)
    ctx.exit(1 if any(c.status == BROKEN for c in report) else 0)


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
    from ..publication.move import move
    from ..publication.write import Site

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
