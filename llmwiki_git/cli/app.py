"""The root of the `llmwiki` command line: the group, its options, the one place errors
become messages and exit codes, and the helpers every command family uses (opening the
workspace, notes on standard error, a FILE argument read as text)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import (
    Interrupted,
    LlmwikiError,
    NotARepository,
    PathRefused,
    UsageError,
    missing_extra,
)
from ..workspace import Workspace

#: True in the `llmwiki` process itself (`main`), not when the group is called in-process.
ONE_COMMAND = False

EXIT_INTERNAL = 3


def _one_of(names: Sequence[str]) -> str:
    """``a, b or c`` (the names, for help text)."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


EXIT_INTERRUPTED = Interrupted.exit_code  # 128 + SIGINT


class LlmwikiGroup(click.Group):
    """Translates the one exception tree into messages and exit codes, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        from ..terminal import safe_streams

        with (
            safe_streams()
        ):  # nothing from a file, model, branch or trailer reaches the terminal raw
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LlmwikiError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except (
            KeyboardInterrupt
        ) as exc:  # Ctrl-C: 130, as a shell reports SIGINT (not 1, "problems found")
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
@click.option(
    "-C",
    "--repo",
    "repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run as if started in this folder (like git -C).",
)
@click.option(
    "--wiki-dir",
    default=None,
    metavar="DIR",
    help="Wiki root, relative to the project folder (the nearest folder holding .llmwiki/, else the repository root). Default: wiki/ if it exists, else the project folder; or wiki_dir in .llmwiki/config.toml.",
)
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
    from .. import confine

    if name == "-":
        data = sys.stdin.buffer.read(confine.MAX_READ_BYTES + 1)
        if len(data) > confine.MAX_READ_BYTES:
            raise UsageError(
                f"standard input is over the {confine.MAX_READ_BYTES // 1048576} MB limit"
            )
        return _text_of(data, "standard input")
    path = Path(name)
    if ctx.obj["repo"] is not None and not path.is_absolute():
        path = ctx.obj["repo"] / path
    try:  # a FIFO, a device (/dev/zero) or an oversize file is refused, not read forever
        data = confine.read_file(path, name=name)
    except PathRefused as exc:
        reason = exc.reason.removeprefix("cannot read: ")
        raise UsageError(
            f"cannot read {name}: {reason}", hint="name a file that exists, or - for standard input"
        ) from exc
    return _text_of(data, name)


def _text_of(data: bytes, name: str) -> str:
    """``data`` as markdown text: a binary file is refused; bytes that are not UTF-8 are
    replaced, and a warning names where (never silently)."""
    from ..wiki.pages import decode

    text, issues = decode(data)
    if text is None:
        raise UsageError(
            f"cannot read {name}: it is a binary file (it contains NUL bytes), not markdown text",
            hint="name a markdown file",
        )
    for issue in issues:
        _note(f"warning: {name}:{issue.line}: {issue.message}")
    return text


def _workspace(ctx: click.Context, **kwargs: Any) -> Workspace:
    ws = Workspace.open(ctx.obj["repo"], wiki_dir=ctx.obj["wiki_dir"], **kwargs)
    state = (ws.project or ws.root) / ".llmwiki"
    # An interrupted write is finished or rolled back first (one stat if there is no state
    # folder: the write layer is not even imported, which the hook's time budget notices).
    if ws.git is not None and state.is_dir():
        from ..gitstore.transaction import pending

        if pending(state):
            from ..publication.write import recover_pending

            try:
                said = recover_pending(ws.git, ws.root, state)
            except (
                LlmwikiError,
                OSError,
            ) as exc:  # never block this command (the hook's, say): say it, go on
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
        raise NotARepository(
            f"no wiki here: {ws.root} is not in a git repository and holds no markdown page",
            hint="run llmwiki inside your wiki's repository, or point -C at it",
        )


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


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
