"""Installing the plain git hooks, ``pre-commit`` and ``pre-merge-commit`` (for users without
the pre-commit framework)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from .errors import LlmwikiError
from .gitstore.git import Git

MARKER = "# llmwiki-git pre-commit hook"  # in both hooks: the same script


def hook_script(
    python: str | None = None, directory: str = ".", wiki_dir: str | None = None
) -> str:
    """The hook script, with the interpreter that has llmwiki installed baked in, and the
    folder (relative to the work-tree root) and ``--wiki-dir`` that ``check`` runs with."""
    text = (Path(__file__).parent / "data" / "pre-commit").read_text(encoding="utf-8")
    text = text.replace("LLMWIKI_DIR=.", f"LLMWIKI_DIR={shlex.quote(directory)}", 1)
    text = text.replace('LLMWIKI_WIKI_DIR=""', f"LLMWIKI_WIKI_DIR={shlex.quote(wiki_dir or '')}", 1)
    return text.replace(
        'LLMWIKI_PYTHON=""', f"LLMWIKI_PYTHON={shlex.quote(python or sys.executable)}", 1
    )


#: The git hooks the gate runs in: every commit, and every merge git commits by itself (a
#: clean ``git merge`` runs ``pre-merge-commit``, not ``pre-commit``, and can join a branch
#: that renames a page with one that links to it).
HOOKS = ("pre-commit", "pre-merge-commit")


def install(
    git: Git, *, force: bool = False, directory: str = ".", wiki_dir: str | None = None
) -> list[Path]:
    """Write the hook as each of :data:`HOOKS` in the repository's hooks folder
    (``core.hooksPath`` respected). Decided before anything is written: a hook that is not
    llmwiki's refuses the whole install unless ``force``."""
    hooks_dir = git.git_path("hooks")
    targets = [hooks_dir / name for name in HOOKS]
    foreign = [
        t
        for t in targets
        if t.exists() and MARKER not in t.read_text(encoding="utf-8", errors="replace")
    ]
    if foreign and not force:
        raise LlmwikiError(
            f"{', '.join(map(str, foreign))} already {'exists' if len(foreign) == 1 else 'exist'} and "
            f"{'is' if len(foreign) == 1 else 'are'} not llmwiki's hook",
            hint="add `llmwiki check --staged --base HEAD` to it yourself, or pass --force to replace it",
        )
    hooks_dir.mkdir(parents=True, exist_ok=True)
    script = hook_script(directory=directory, wiki_dir=wiki_dir)
    for target in targets:
        tmp = target.with_name(f".{target.name}.llmwiki-tmp")
        tmp.write_text(script, encoding="utf-8")
        tmp.chmod(0o755)
        os.replace(tmp, target)
    return targets
