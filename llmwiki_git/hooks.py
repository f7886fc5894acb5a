"""Installing the plain git pre-commit hook (for users without the pre-commit framework)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .errors import LlmwikiError
from .git import Git

MARKER = "# llmwiki-git pre-commit hook"


def hook_script(python: str | None = None, directory: str = ".", wiki_dir: str | None = None) -> str:
    """The hook script, with the interpreter that has llmwiki installed baked in, and the
    folder (relative to the work-tree root) and ``--wiki-dir`` that ``check`` runs with."""
    text = (Path(__file__).parent / "data" / "pre-commit").read_text(encoding="utf-8")
    text = text.replace("LLMWIKI_DIR=.", f"LLMWIKI_DIR={shlex.quote(directory)}", 1)
    text = text.replace('LLMWIKI_WIKI_DIR=""', f"LLMWIKI_WIKI_DIR={shlex.quote(wiki_dir or '')}", 1)
    return text.replace('LLMWIKI_PYTHON=""', f"LLMWIKI_PYTHON={shlex.quote(python or sys.executable)}", 1)


def install(git: Git, *, force: bool = False, directory: str = ".", wiki_dir: str | None = None) -> Path:
    """Write the hook to the repository's hooks folder (``core.hooksPath`` respected)."""
    hooks_dir = Path(git.text("rev-parse", "--git-path", "hooks"))
    if not hooks_dir.is_absolute():
        hooks_dir = git.root / hooks_dir
    target = hooks_dir / "pre-commit"
    if target.exists() and not force:
        existing = target.read_text(encoding="utf-8", errors="replace")
        if MARKER not in existing:
            raise LlmwikiError(
                f"{target} already exists and is not llmwiki's hook",
                hint="add `llmwiki check --staged --base HEAD` to it yourself, or pass --force to replace it",
            )
    hooks_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(".pre-commit.llmwiki-tmp")
    tmp.write_text(hook_script(directory=directory, wiki_dir=wiki_dir), encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, target)
    return target
