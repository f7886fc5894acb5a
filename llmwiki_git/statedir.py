"""The project's ``.llmwiki/`` folder: created on first write with a ``.gitignore`` that keeps
everything but ``config.toml`` out of git (DESIGN §2)."""

from __future__ import annotations

from pathlib import Path

GITIGNORE = "# llmwiki local state: only config.toml is committed (this file ignores itself)\n*\n!config.toml\n"


def ensure(state_dir: Path) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    ignore = state_dir / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text(GITIGNORE, encoding="utf-8")
        except OSError:
            pass
    return state_dir
