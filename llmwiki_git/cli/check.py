"""`llmwiki check`: broken links and other problems, as text, JSON or GitHub annotations."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import UsageError
from ..wording import plural
from ..workspace import Workspace
from . import app
from .app import _require_some_wiki, _workspace, cli

if TYPE_CHECKING:
    from ..checks import CheckResult
    from ..checks.renames import RenameHint


def _render_text(result: CheckResult, base: str | None, scope: str) -> None:
    if result.problems:  # one write: a line each cost a flush each (~5 ms per 1,000 problems)
        click.echo(
            "\n".join(
                f"{p.location}: {'' if p.severity == 'error' else 'warning: '}{p.message}"
                for p in result.problems
            )
        )
    errors, warnings = len(result.errors), len(result.warnings)
    what = f"new in {scope} since {base}" if base else f"in {scope}"
    if errors:
        unchecked = sum(1 for p in result.errors if p.code == "unchecked-page")
        links = sum(
            1
            for p in result.errors
            if p.code in ("broken-link", "empty-link", "broken-relative-link")
        )
        other = errors - unchecked - links  # codes set to `error` in [check.severity]
        # a page that cannot be checked is no broken link (it said "4 broken links" for 2)
        found = [plural(links, "broken link")] if links else []
        found += [plural(other, "other error")] if other else []
        found += [f"{plural(unchecked, 'page')} that cannot be checked"] if unchecked else []
        steps = ["fix the links, or create the missing pages"] if links else []
        steps += ["fix the other errors (codes: docs/check.md)"] if other else []
        steps += (
            ["save those pages as UTF-8 text within the size limit, or keep them out of the wiki"]
            if unchecked
            else []
        )
        click.echo(
            f"{plural(result.checked, 'page')} checked: {' and '.join(found)} {what}, "
            f"{plural(warnings, 'warning')}; {'; '.join(steps)}.",
            err=True,
        )
    else:
        click.echo(
            f"{plural(result.checked, 'page')} checked: no broken links {what}, {plural(warnings, 'warning')}.",
            err=True,
        )


def _write_github_files(result: CheckResult) -> None:
    from .. import github

    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(summary_path, "a", encoding="utf-8") as handle:
            handle.write(github.summary(result.problems, result.checked))
    output_path = os.environ.get("GITHUB_OUTPUT")
    if output_path:
        with open(output_path, "a", encoding="utf-8") as handle:
            handle.write(
                f"broken={len(result.errors)}\nwarnings={len(result.warnings)}\nchecked={result.checked}\n"
            )


@cli.command()
@click.option(
    "--staged", is_flag=True, help="Check the git index: exactly what the next commit will contain."
)
@click.option(
    "--rev",
    default=None,
    metavar="COMMIT",
    help="Check the tree of a commit instead of the work tree.",
)
@click.option(
    "--base",
    default=None,
    metavar="COMMIT",
    help="Report only problems that are new since this commit (links newly broken, including by renames and deletions).",
)
@click.option(
    "--head",
    default=None,
    metavar="COMMIT",
    help="With --base: the commit to compare (default: the work tree, or the index with --staged).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text: path:line:col lines; json: the v1 envelope; github: workflow annotations plus a step summary.",
)
@click.option("--json", "as_json", is_flag=True, help="Shorthand for --format json.")
@click.option(
    "--no-cache", is_flag=True, help="Do not use or update the scan cache in the git directory."
)
@click.pass_context
def check(
    ctx: click.Context,
    staged: bool,
    rev: str | None,
    base: str | None,
    head: str | None,
    fmt: str,
    as_json: bool,
    no_cache: bool,
) -> None:
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
    if app.ONE_COMMAND:  # the process ends after this command: nothing it builds (scans and
        # cache records by the hundred thousand, none in cycles) needs the cycle collector,
        # whose passes over them cost ~0.3 s on 10,000 pages; frozen, they are not walked
        # again at interpreter exit either (docs/benchmarks.md)
        gc.disable()
    result = ws.check(scope, base)
    if app.ONE_COMMAND:
        gc.freeze()
    _require_some_wiki(ws, result.checked)
    renames = _rename_hints(ws, result) if scope == "index" else []
    fmt = "json" if as_json else fmt
    if fmt == "json":
        _render_json(ws, result, renames)
    elif fmt == "github":
        _render_github(result)
    else:
        _render_text(
            result, base, {"index": "the index", "worktree": "the work tree"}.get(scope, scope)
        )
    _render_rename_hints(ws, renames)  # the hook's output too: a staged rename broke these links
    ctx.exit(1 if result.errors else 0)


def _render_json(ws: Workspace, result: CheckResult, renames: list[RenameHint]) -> None:
    envelope: dict[str, Any] = {
        "version": 1,
        "checked": result.checked,
        "problems": [p.to_json() for p in result.problems],
    }
    if renames:
        envelope["renames"] = [hint.to_json() for hint in renames]
    if ws.flavour.name != "plain":
        envelope["flavour"] = ws.flavour.name  # whose rules were applied (wikilinks.md)
    click.echo(json.dumps(envelope, indent=2, ensure_ascii=False))


def _render_github(result: CheckResult) -> None:
    from .. import github
    from ..terminal import echo_command

    for line in github.problem_annotations(result.problems):
        echo_command(line)  # llmwiki's own commands: the only lines that may start with "::"
    _write_github_files(result)
    _render_summary_line(result)


def _render_rename_hints(ws: Workspace, renames: list[RenameHint]) -> None:
    """Each staged rename that broke links, and the `llmwiki mv` that rewrites them."""
    for hint in renames:
        old, new = (
            os.path.relpath(ws.root / p)
            if (ws.root / p).resolve().is_relative_to(Path.cwd().resolve())
            else p
            for p in (hint.old, hint.new)
        )
        click.echo(
            f"{hint.old} was renamed to {hint.new}, which breaks {plural(hint.broken, 'link')}; "
            f"to rewrite them in one commit, run: llmwiki mv {old} {new}",
            err=True,
        )


def _rename_hints(ws: Workspace, result: CheckResult) -> list[RenameHint]:
    """Staged renames that broke links (checks/renames.py)."""
    if not result.renames:
        return []
    from ..checks.renames import rename_hints

    return rename_hints(list(result.renames), result)


def _render_summary_line(result: CheckResult) -> None:
    click.echo(
        f"{plural(result.checked, 'page')} checked: {len(result.errors)} broken, {plural(len(result.warnings), 'warning')}.",
        err=True,
    )
