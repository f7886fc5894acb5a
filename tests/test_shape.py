"""Meta-tests: the check path stays import-light, the API is complete, every command documented."""

from __future__ import annotations

import ast
import subprocess
import sys

import click

import llmwiki_git
from llmwiki_git.cli import cli

from .conftest import REPO_ROOT, Repo

HEAVY = ("numpy", "httpx", "openai", "anthropic", "onnxruntime", "tokenizers", "git", "frontmatter")


def test_check_path_imports_nothing_heavy(repo: Repo) -> None:
    repo.write("wiki/a.md", "[[b]]\n")
    code = (
        "import sys\n"
        "from llmwiki_git.cli import main\n"
        "sys.argv = ['llmwiki', 'check']\n"
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        f"bad = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('light')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo.root, capture_output=True, text=True)
    assert proc.stdout.endswith("light\n"), proc.stderr


def test_public_api_sorted_and_complete() -> None:
    assert llmwiki_git.__all__ == sorted(llmwiki_git.__all__)
    for name in llmwiki_git.__all__:
        assert getattr(llmwiki_git, name).__doc__, name


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, f"{prefix}{name} "))
    return found


def test_every_command_and_option_has_help_and_docs() -> None:
    docs = "\n".join(p.read_text() for p in (REPO_ROOT / "docs").glob("*.md")) + (REPO_ROOT / "README.md").read_text()
    for name, command in _commands(cli):
        assert command.help, name
        assert f"llmwiki {name}" in docs, f"no docs mention `llmwiki {name}`"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts}"


def test_layering_entry_points_only_at_the_top() -> None:
    """Nothing below the entry points imports click or the CLI; the wiki model imports no
    services (entry points -> services -> domain -> adapters)."""
    package = REPO_ROOT / "llmwiki_git"
    for path in package.rglob("*.py"):
        rel = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add(("." * node.level) + (node.module or ""))
        if rel not in ("cli.py", "__main__.py"):
            assert "click" not in imported and not any(m.endswith("cli") for m in imported), rel
        if rel.startswith("wiki/"):
            assert not any(m.lstrip(".") in ("workspace", "checks", "cli", "hooks") for m in imported), rel
