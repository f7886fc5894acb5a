"""The project's ``.llmwiki/`` folder: created on first write with a ``.gitignore`` that keeps
everything but ``config.toml`` out of git (DESIGN §2). A ``.llmwiki`` that is a symlink is
refused (confine.py): nothing is ever written through it."""

from __future__ import annotations

from pathlib import Path

from . import confine
from .errors import PathRefused

GITIGNORE = "# llmwiki local state: only config.toml is committed (this file ignores itself)\n*\n!config.toml\n"


def ensure(state_dir: Path) -> Path:
    confine.ensure_dir(state_dir.parent, state_dir.name)
    try:
        confine.create(state_dir, ".gitignore", GITIGNORE.encode("utf-8"))
    except (OSError, PathRefused):
        pass
    return state_dir


def append_line(state_dir: Path, name: str, line: str) -> None:
    """Append one line to ``<state_dir>/<name>`` (never through a symlink)."""
    ensure(state_dir)
    confine.append(state_dir, name, (line + "\n").encode("utf-8"))
