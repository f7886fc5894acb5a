"""`llmwiki serve` (the MCP server) and `llmwiki hooks install` (git hooks)."""

from __future__ import annotations

from pathlib import Path

import click

from .app import _workspace, cli


@cli.command()
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The wiki to serve: any folder inside its repository (default: -C, else the current folder).",
)
@click.pass_context
def serve(ctx: click.Context, root: Path | None) -> None:
    """Serve the wiki to AI agents over MCP on stdio: context packs, cited answers, search,
    pages, link checks, review candidates and status.

    Needs the optional MCP SDK: pip install '.[local,mcp]' from a clone. Register the command
    `llmwiki serve --root /path/to/wiki` with your agent client (see docs/mcp.md).
    """
    from ..mcp_server import main as serve_stdio

    serve_stdio(root or ctx.obj["repo"] or Path.cwd(), wiki_dir=ctx.obj["wiki_dir"])


@cli.group()
def hooks() -> None:
    """Git hooks that keep broken links out of commits."""


@hooks.command("install")
@click.option(
    "--force",
    is_flag=True,
    help="Replace existing pre-commit / pre-merge-commit hooks that are not llmwiki's.",
)
@click.pass_context
def hooks_install(ctx: click.Context, force: bool) -> None:
    """Install the plain git pre-commit and pre-merge-commit hooks (no pre-commit framework
    needed).

    Both run `llmwiki check --staged --base HEAD` and refuse a commit, or a merge git would
    commit by itself, that adds broken links. With the pre-commit framework, use the
    `llmwiki-check` hook instead (docs/hooks.md: install it for merges too).
    """
    from ..hooks import install

    ws = _workspace(ctx)
    git = ws.require_git("installing a hook")
    start = (ctx.obj["repo"] or Path.cwd()).resolve()
    directory = (
        start.relative_to(ws.root.resolve()).as_posix() if start != ws.root.resolve() else "."
    )
    paths = install(git, force=force, directory=directory, wiki_dir=ctx.obj["wiki_dir"])
    where = (
        ""
        if directory == "."
        else f" (they check the wiki of {directory}, as `llmwiki -C {directory} check` does)"
    )
    click.echo(f"Installed the pre-commit and pre-merge-commit hooks at {paths[0].parent}{where}.")
    click.echo(
        "Commits and merges that add broken [[wikilinks]] will now be refused; skip once with "
        "`git commit --no-verify` (`git merge --no-verify`)."
    )
