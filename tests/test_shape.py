"""Meta-tests: the check path stays import-light, the API is complete, every command documented."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


#: The layers, top to bottom (docs/architecture.md draws them). A module may import its own
#: package and anything in a LOWER tier; never its own tier (peers stay independent) nor a
#: higher one. Keys are top-level modules or packages of llmwiki_git; a new one must be placed.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),  # entry points: parse, call one service, render, translate errors
    ("mcp_server", "action", "__init__"),  # entry points too (cli starts the MCP server); __init__ = the library API
    ("workspace",),  # the composition root: finds the repository, builds what services take
    ("compiler",),  # ingest and compile: a service that stages and approves through review's
    ("answer", "review"),  # services
    ("checks",),  # the check engine: checker, caches, staged delta (a service, below the other two)
    ("publication", "retrieval"),  # domain
    ("wiki",),
    ("providers", "hooks", "github", "terminal", "statedir"),  # adapters and ground
    ("gitstore",),  # git plumbing, the repository lock, the write journal
    ("confine",),  # the one security boundary: paths, symlinks, bounded reads
    ("git", "config", "problems", "wording", "markup"),
    ("errors",),
)

#: Known back-edges owned by another change, each named exactly; the test fails when one
#: disappears so the entry is removed with it.
ALLOWED_BACK_EDGES = {
    ("providers/extractive.py", "retrieval"),  # the offline answerer borrows the BM25 tokenizer (issue 13a moves it)
}


def _unit(module: str) -> str | None:
    """``llmwiki_git.a.b`` -> ``a``; anything outside the package -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "llmwiki_git" and len(parts) > 1 else None


def package_imports(package: Path) -> list[tuple[str, int, str]]:
    """(file, line, imported top-level unit) for EVERY import of the package's own modules,
    module-level, inside functions or under TYPE_CHECKING alike."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        here = ["llmwiki_git", *rel[:-3].split("/")]
        parent = here[:-1]  # the package a module is in (for __init__: the package itself)
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    names = [node.module or ""]
                else:
                    base = parent[: len(parent) - node.level + 1]
                    names = (['.'.join([*base, node.module])] if node.module
                             else ['.'.join([*base, a.name]) for a in node.names])
            for name in names:
                unit = _unit(name)
                if unit is not None:
                    found.append((rel, node.lineno, unit))
    return found


def layering_violations(package: Path) -> list[str]:
    tier = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    bad, seen = [], set()
    for rel, line, target in package_imports(package):
        source = rel.split("/")[0].removesuffix(".py") if "/" in rel else rel.removesuffix(".py")
        if source not in tier:
            bad.append(f"{rel}: {source} is in no layer of LAYERS (place it)")
            continue
        if target == source:
            continue
        if target not in tier:
            bad.append(f"{rel}:{line} imports {target}, which is in no layer of LAYERS (place it)")
        elif tier[target] <= tier[source]:
            if (rel, target) in ALLOWED_BACK_EDGES:
                seen.add((rel, target))
                continue
            how = "a peer in its own layer" if tier[target] == tier[source] else "a higher layer"
            bad.append(f"{rel}:{line} imports {target} ({how}: {source} is in layer {tier[source]}, "
                       f"{target} in layer {tier[target]})")
    bad += [f"{rel} no longer imports {target}: drop it from ALLOWED_BACK_EDGES"
            for rel, target in sorted(ALLOWED_BACK_EDGES - seen)]
    return bad


def test_dependencies_point_one_way() -> None:
    """entry points -> composition -> services -> domain -> adapters, for every import."""
    assert layering_violations(REPO_ROOT / "llmwiki_git") == []


def test_layering_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The checker itself: a back-edge hidden in a function body is found."""
    package = tmp_path / "llmwiki_git"
    (package / "wiki").mkdir(parents=True)
    (package / "wiki" / "model.py").write_text("def f():\n    from ..review import approve\n")
    (package / "review").mkdir()
    (package / "review" / "approve.py").write_text("from ..wiki.model import f\nfrom .. import errors\n")
    found = [v for v in layering_violations(package) if "ALLOWED_BACK_EDGES" not in v]
    assert found == ["wiki/model.py:2 imports review (a higher layer: wiki is in layer 8, review in layer 5)"]


def test_architecture_doc_names_every_layered_module() -> None:
    """docs/architecture.md draws the same layers: every module of LAYERS is in it."""
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text()
    package = REPO_ROOT / "llmwiki_git"
    for unit in (u for layer in LAYERS for u in layer):
        name = f"`{unit}/`" if (package / unit).is_dir() else f"`{unit}.py`" if unit != "__main__" else "`__main__`"
        assert name in doc, f"docs/architecture.md does not name {name}"


def test_one_http_retry_loop() -> None:
    """Chat (streamed or not) and embeddings retry through one loop: the only code under
    providers/ and retrieval/ that waits between attempts is ``providers.http._exchange``."""
    package = Path(__file__).resolve().parent.parent / "llmwiki_git"
    waiting: list[str] = []
    for folder in ("providers", "retrieval"):
        for path in sorted((package / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for call in ast.walk(node):
                    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                            and call.func.attr == "sleep"):
                        waiting.append(f"{folder}/{path.name}:{node.name}")
    assert sorted(set(waiting)) == ["providers/http.py:_exchange"]


def test_corpus_tests_find_the_corpora_one_way() -> None:
    """Every corpus test gets its corpus from ``tests/corpora/conftest.corpus()``, which
    honours LLMWIKI_CORPORA (and fails under CI instead of skipping); none builds its own path
    to ../shared/corpora (test_root_layout_foam.py did, and ignored LLMWIKI_CORPORA)."""
    suite = REPO_ROOT / "tests" / "corpora"
    own = [p.name for p in sorted(suite.glob("test_*.py"))
           if any(isinstance(node, ast.Constant) and node.value in ("shared", "corpora")
                  for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert own == []
