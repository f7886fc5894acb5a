"""`llmwiki view`: the wiki and its review queue in a browser, on 127.0.0.1 (docs/view.md)."""

from __future__ import annotations

import click

from ..errors import MissingDependency
from .app import _workspace, cli


@cli.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="The port to listen on, on 127.0.0.1 only (0: a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in your web browser.")
@click.option(
    "--read-only", is_flag=True, help="Show everything, but no Approve or Reject buttons."
)
@click.pass_context
def view(ctx: click.Context, port: int, open_browser: bool, read_only: bool) -> None:
    """Read the wiki and review candidates in a browser: rendered diffs, provenance, problems,
    the link graph, and Approve/Reject calling what `llmwiki review approve/reject` call.

    Prints its URL with a one-time token (http://127.0.0.1:PORT/?token=...) and serves until
    Ctrl-C. Needs the view extra: pip install '.[view]' from a clone (docs/view.md).
    """
    try:  # the server stack is imported by this command only
        from ..view.app import serve
    except ModuleNotFoundError as exc:
        raise MissingDependency(
            f"llmwiki view needs {exc.name}, which the view extra installs",
            hint="pip install '.[view]' from a clone (docs/view.md)",
        ) from exc

    ws = _workspace(ctx, long_lived=True)
    ws.require_git("viewing the wiki")
    serve(
        ws,
        port=port,
        open_browser=open_browser,
        read_only=read_only,
        say=lambda line: click.echo(line),
    )
