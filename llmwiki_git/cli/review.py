"""`llmwiki review`: stage, list, show, approve and reject review candidates."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import UsageError
from ..publication import kinds
from ..wording import plural
from .app import EXIT_INTERRUPTED, _age, _note, _workspace, cli

if TYPE_CHECKING:
    from ..review.approve import Approved
    from ..review.service import CandidateView
    from ..review.stage import Staged
    from ..workspace import Workspace


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A move's or merge's plan (review/rewrites.py) as lines: what moves or is folded where,
    then each link rewrite as path:line:col: old → new (`review show`, `mv --review`,
    `merge-pages`)."""
    row = kinds.row(str(plan.get("kind")))
    fields = {
        "from": plan.get("from", "?"),
        "to": plan.get("to", plan.get("into", "?")),
        "heading": plan.get("heading", ""),
        "aliases": ", ".join(plan.get("aliasesAdded") or []) or "none",
    }
    lines = [(row.shows_plan if row else "plan: {from} → {to}").format_map(fields)]
    lines += [
        f"  moves {m['from']} → {m['to']}"
        for m in plan.get("moves", [])
        if m["from"] != plan["from"]
    ]
    lines += [
        f"  {e['path']}:{e['line']}:{e['col']}: {e['old']} → {e['new']}"
        for e in plan.get("edits", [])
    ]
    lines.append(
        f"  {plural(int(plan.get('links', 0)), 'link')} rewritten in {plural(int(plan.get('pages', 0)), 'page')}"
    )
    return lines


@cli.group()
def review() -> None:
    """Review candidates staged as `llmwiki/review/<id>` branches: answers (`query --save
    --review`), page edits (`review stage`, MCP propose_page), compile runs, moves, page
    merges and retractions."""


@review.command("stage")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--from",
    "started_from",
    default=None,
    metavar="BLOB|COMMIT",
    help="The version the editor read: a blob id, a commit, or 'absent' (default: the page at HEAD).",
)
@click.option(
    "--restore",
    is_flag=True,
    help="After staging, put the staged pages in the work tree back to HEAD.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the staged candidates as JSON.")
@click.pass_context
def review_stage(
    ctx: click.Context,
    paths: tuple[Path, ...],
    started_from: str | None,
    restore: bool,
    as_json: bool,
) -> None:
    """Stage work-tree page edits as review candidates: one `llmwiki/review/<id>` branch per
    page (default: every changed page under the wiki root), one commit on the current tip.
    A deleted page becomes a deletion candidate. The work tree keeps the edits unless
    --restore is given."""
    from ..review.stagepage import restore as restore_pages
    from ..review.stagepage import stage_pages, worktree_edits

    ws = _workspace(ctx)
    edits = worktree_edits(ws, _repository_paths(ws, paths), started_from)
    staged = stage_pages(ws, edits, None if as_json else _note)
    kept = restore_pages(ws, edits) if restore else []
    _render_staged(staged, kept, as_json=as_json)


def _repository_paths(ws: Workspace, paths: tuple[Path, ...]) -> list[str]:
    """``paths`` (from the current folder) as paths in the repository; UsageError for one
    outside it."""
    top = Path(ws.root).resolve()
    rels = []
    for path in paths:
        full = Path(os.path.abspath(path))
        try:
            rels.append(full.relative_to(top).as_posix())
        except ValueError:
            raise UsageError(f"{path} is outside the repository {top}") from None
    return rels


def _render_staged(staged: list[Staged], kept: list[str], *, as_json: bool) -> None:
    if as_json:
        click.echo(
            json.dumps(
                {
                    "version": 1,
                    "staged": [
                        {
                            "id": s.candidate_id,
                            "branch": s.branch,
                            "commit": s.commit,
                            "target": s.target,
                            "precondition": s.precondition,
                        }
                        for s in staged
                    ],
                    "keptInWorktree": kept,
                },
                indent=2,
            )
        )
        return
    for s in staged:
        click.echo(f"Staged {s.target} as {s.branch} ({s.precondition}).")
    for rel in kept:
        click.echo(f"warning: {rel} changed again after staging; left as it is", err=True)
    click.echo(
        "Inspect with `llmwiki review show <id>`, approve with `llmwiki review approve <id>`.",
        err=True,
    )


@review.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the candidates as JSON.")
@click.pass_context
def review_list(ctx: click.Context, as_json: bool) -> None:
    """Open candidates, oldest first: id, kind, target, age, citation status now, base."""

    from ..review.service import list_view

    ws = _workspace(ctx)
    rows = list_view(ws)
    if as_json:
        click.echo(
            json.dumps(
                {"version": 1, "candidates": [r.to_json() for r in rows]},
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    if not rows:
        click.echo("No pending candidates.")
        return
    now = time.time()
    for row in rows:
        for note in row.notes:
            click.echo(f"warning: {row.id}: {note}", err=True)
        many = len(row.targets) > 3  # a compile run of 18 pages: one path a line, not one line
        target = f"{len(row.targets)} pages" if many else row.target
        click.echo(
            f"{row.id}  {row.kind or '?'}  {target or '?'}  {_age(now - row.committed_at)}  "
            f"{row.citation_status}  base {row.base[:12] if row.base else '?'}"
        )
        for path in row.targets if many else ():
            click.echo(f"    {path}")
    click.echo("Inspect one with `llmwiki review show <id>`.", err=True)


@review.command("show")
@click.argument("candidate_id")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print metadata, citation report, diff and verdict as JSON.",
)
@click.option(
    "--onto",
    default=None,
    metavar="REF",
    help="Judge approval onto this branch or commit instead of the current branch (CI checkouts are detached).",
)
@click.pass_context
def review_show(ctx: click.Context, candidate_id: str, as_json: bool, onto: str | None) -> None:
    """Metadata, the citation report as it stands now, the diff against the current tip, and
    whether approval would pass (and why not)."""
    from ..review.service import show_view

    ws = _workspace(ctx)
    view = show_view(ws, candidate_id, onto)
    if as_json:
        click.echo(json.dumps(view.to_json(), indent=2, ensure_ascii=False))
    else:
        _render_show(view)
    ctx.exit(0)


def _render_show(view: CandidateView) -> None:
    """The candidate as `review show` prints it: metadata, provenance, plan, citation
    report, diff (page by page for a multi-file run), and the verdict."""
    from ..wiki.citations import format_report

    click.echo(f"Candidate {view.candidate.id}")
    for key, value in view.metadata().items():
        if key == "question" and not value:
            continue  # a page edit asks no question (it printed an empty "question:" line)
        if value is not None or not view.pages:
            click.echo(f"{key}: {value}")
    provenance = view.provenance()
    for source in provenance.get("sources", []):
        click.echo(f"source: {source['path']} (blob {source['blob']})")
    for key in ("model", "prompt", "retracts"):
        if provenance.get(key):
            click.echo(f"{key}: {provenance[key]}")
    for line in plan_lines(view.plan) if view.plan is not None else ():  # a move or merge
        click.echo(line)
    click.echo("")
    if view.verdict.citations is not None:
        for line in format_report(view.verdict.citations):
            click.echo(line)
    click.echo("")
    if view.pages and "threeWay" not in view.verdict.details:  # a compile run: page by page
        _render_show_pages(view, provenance.get("retracts"))
    else:
        click.echo(view.diff.rstrip("\n"))
        click.echo("")
    verdict = view.verdict
    click.echo(
        ("Approval would pass: " if verdict.ok else f"Approval would be refused ({verdict.code}): ")
        + verdict.message
    )


def _render_show_pages(view: CandidateView, retracts: object) -> None:
    """Each file of a multi-file run with its diff (``retracts``: the source it deletes)."""
    pages = view.pages
    for number, item in enumerate(pages, 1):
        what = "retracted source" if item["target"] == retracts else "page"
        titled = f' "{item["title"]}"' if item.get("title") else ""
        click.echo(
            f"=== {what} {number}/{len(pages)}: {item['target']}{titled} (was: {item['precondition']}) ==="
        )
        if item.get("repairs"):
            click.echo(f"repaired by compile: {item['repairs']}")
        if item.get("uncited") and what == "page":
            click.echo("warning: this page cites no source line; read it before approving")
        click.echo(item["diff"].rstrip("\n") or "(no change against the current tip)")
        click.echo("")


@review.command("approve")
@click.argument("candidate_id")
@click.option(
    "--allow-broken",
    is_flag=True,
    help="A retraction only: approve it although links to the pages it deletes break (they are listed).",
)
@click.option(
    "--no-index",
    "no_index",
    is_flag=True,
    help="Do not refresh the search index after approving (reads and `llmwiki index` catch up).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def review_approve(
    ctx: click.Context, candidate_id: str, allow_broken: bool, no_index: bool, as_json: bool
) -> None:
    """Publish a candidate: a validated fast-forward of the current branch (the candidate
    commit itself, or the same change replayed on the new tip) plus a commit refreshing
    wiki/index.md and log.md where llmwiki owns them, moved onto the branch at once as one
    transaction. Any refusal changes nothing and exits 1; after a crash, the next llmwiki
    command finishes or rolls back the approval.

    "Approved" is printed as soon as the branch has moved. The search index then follows
    the approved pages (lexically, embedding at most a few chunks; more waits for the next
    `llmwiki index`); --no-index skips that, and Ctrl-C during it leaves the approval as it is.
    """
    done = _approve(
        ctx, candidate_id, allow_broken=allow_broken, no_index=no_index, as_json=as_json
    )
    if as_json:
        click.echo(json.dumps(done.to_json(), indent=2))


def _approve(
    ctx: click.Context, candidate_id: str, *, allow_broken: bool, no_index: bool, as_json: bool
) -> Approved:
    """The approval, said as soon as the branch has moved; Ctrl-C while the index follows
    leaves it approved (and exits with EXIT_INTERRUPTED)."""
    from ..review.service import approve_candidate

    ws = _workspace(ctx)
    approved: list[Approved] = []

    def say(done: Approved) -> None:
        approved.append(done)
        if not as_json:
            _say_approved(candidate_id, done)
            if not no_index and sys.stderr.isatty():
                click.echo(
                    "Refreshing the search index (Ctrl-C skips it; the approval stands)…",
                    err=True,
                )

    try:
        return approve_candidate(
            ws,
            candidate_id,
            None if as_json else _note,
            allow_broken=allow_broken,
            on_approved=say,
            refresh_index=not no_index,
        )
    except KeyboardInterrupt:
        if not approved:
            raise
        click.echo(
            f"\nInterrupted after the approval: {candidate_id} is approved (commit "
            f"{approved[0].commit[:12]}) and stays so; the search index catches up on the next "
            "read or `llmwiki index`.",
            err=True,
        )
        ctx.exit(EXIT_INTERRUPTED)


def _say_approved(candidate_id: str, done: Approved) -> None:
    if done.already:
        click.echo(
            f"{candidate_id} was already on the branch (commit {done.commit[:12]}); finished its remaining steps."
        )
        click.echo(f"Candidate {candidate_id} cleared.")
        return
    how = "replayed on the current tip" if done.replayed else "fast-forward"
    what = (
        done.target
        if len(done.targets) <= 1
        else f"{len(done.targets)} pages: {', '.join(done.targets)}"
    )
    click.echo(f"Approved {candidate_id} → {what} ({how}, commit {done.commit[:12]}).")
    click.echo(f"Candidate {candidate_id} cleared.")


@review.command("reject")
@click.argument("candidate_id")
@click.pass_context
def review_reject(ctx: click.Context, candidate_id: str) -> None:
    """Close a candidate: its branch moves to refs/llmwiki/rejected/<id> (the commit is kept)."""
    from ..review.service import reject_candidate

    done = reject_candidate(_workspace(ctx), candidate_id)
    click.echo(f"Rejected {done.candidate_id}; its commit is kept at {done.ref}.")


# -- growing the wiki from sources: ingest, compile (docs/compile.md) -------------------------
