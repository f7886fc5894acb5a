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

#: Our own modules that must stay off the check path: model providers and retrieval (numpy).
OWN_HEAVY = (
    "llmwiki_git.providers",
    "llmwiki_git.retrieval",
    "llmwiki_git.answer",
    "llmwiki_git.compiler",
)


def heavy_modules() -> list[str]:
    """The top-level modules of every distribution an extra adds to the base install
    (pyproject's optional-dependencies, ``test`` aside): what `llmwiki check` must not import.
    Derived, so the list names real dependencies only and follows pyproject."""
    import importlib.metadata
    import re

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    base = {re.split(r"[<>=!~; \[]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    extra = {
        re.split(r"[<>=!~; \[]", d, maxsplit=1)[0].lower()
        for name, deps in project["optional-dependencies"].items()
        if name != "test"
        for d in deps
    } - base
    modules = [
        module
        for module, dists in importlib.metadata.packages_distributions().items()
        if any(dist.lower() in extra for dist in dists) and not module.startswith("_")
    ]
    found = {
        dist.lower()
        for dists in importlib.metadata.packages_distributions().values()
        for dist in dists
    }
    assert extra <= found, f"extras not installed in the test environment: {sorted(extra - found)}"
    return sorted(modules)


def test_heavy_modules_are_the_extras() -> None:
    """The list the check-path test uses holds exactly the extras' modules (numpy, httpx,
    onnxruntime, the MCP SDK, ...), never a module no extra installs."""
    heavy = heavy_modules()
    assert {
        "numpy",
        "httpx",
        "onnxruntime",
        "tokenizers",
        "mcp",
        "jsonschema",
        "pypdf",
        "bs4",
        "psycopg",
        "pgvector",
    } <= set(heavy)
    assert not {"click", "yaml"} & set(heavy)  # the base install is allowed


def test_check_path_imports_nothing_heavy(repo: Repo) -> None:
    repo.write("wiki/a.md", "[[b]]\n")
    heavy = (*heavy_modules(), *OWN_HEAVY)
    code = (
        "import sys\n"
        "from llmwiki_git.cli import main\n"
        "sys.argv = ['llmwiki', 'check']\n"
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        f"bad = [m for m in {heavy!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('light')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=repo.root, capture_output=True, text=True
    )
    assert proc.stdout.endswith("light\n"), proc.stderr


def test_public_api_sorted_and_complete() -> None:
    """``__all__`` is written out sorted in the source (not computed), names exactly what
    ``_EXPORTS`` maps and the TYPE_CHECKING block imports, and each name is defined, with a
    docstring, in the module ``_EXPORTS`` says."""
    source = (REPO_ROOT / "llmwiki_git" / "__init__.py").read_text()
    written: list[str] | None = None
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            written = ast.literal_eval(
                node.value
            )  # a call such as sorted(...) is no literal: fails here
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            imported.update(a.name for a in node.names)
    assert written is not None and written == sorted(written)
    assert set(written) == set(llmwiki_git._EXPORTS) == imported
    assert llmwiki_git.__all__ == written
    for name in written:
        value = getattr(llmwiki_git, name)
        assert value.__doc__, name
        defined_in = llmwiki_git._EXPORTS[name].lstrip(".")
        assert value.__module__ in (
            f"llmwiki_git.{defined_in}",
            f"llmwiki_git.{defined_in}.__init__",
        ) or value.__module__.startswith(f"llmwiki_git.{defined_in}."), (name, value.__module__)


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, f"{prefix}{name} "))
    return found


def test_every_command_and_option_has_help_and_docs() -> None:
    docs = (
        "\n".join(p.read_text() for p in (REPO_ROOT / "docs").glob("*.md"))
        + (REPO_ROOT / "README.md").read_text()
    )
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
        if not rel.startswith("cli/") and rel != "__main__.py":
            assert "click" not in imported and not any(m.endswith("cli") for m in imported), rel
        if rel.startswith("wiki/"):
            assert not any(
                m.lstrip(".") in ("workspace", "checks", "cli", "hooks") for m in imported
            ), rel


#: The layers, top to bottom (docs/architecture.md draws them). A module may import its own
#: package and anything in a LOWER tier; never its own tier (peers stay independent) nor a
#: higher one. Keys are top-level modules or packages of llmwiki_git; a new one must be placed.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),  # entry points: parse, call one service, render, translate errors
    ("view",),  # entry point too: `llmwiki view`, the browser page (cli starts it)
    (
        "mcp_server",
        "action",
        "__init__",
    ),  # entry points too (cli starts the MCP server); __init__ = the library API
    ("mcptools",),  # the MCP tools, one declaration each (schemas + handler), called by mcp_server
    ("workspace",),  # the composition root: finds the repository, builds what services take
    ("compiler",),  # ingest and compile: a service that stages and approves through review's
    (
        "answer",
        "review",
        "pages",
    ),  # services (pages: find, read confined, status; shared by CLI and MCP)
    ("checks",),  # the check engine: checker, caches, staged delta (a service, below the other two)
    ("publication", "retrieval"),  # domain
    ("wiki",),
    ("providers", "hooks", "github", "terminal", "statedir"),  # adapters and ground
    ("gitstore",),  # git plumbing, the repository lock, the write journal
    ("confine",),  # the one security boundary: paths, symlinks, bounded reads
    ("config", "problems", "wording", "markup", "terms", "controls"),
    (
        "errors",
        "providertable",
    ),  # the exception tree; the provider table (names and import paths only)
)

#: Known back-edges owned by another change, each named exactly; the test fails when one
#: disappears so the entry is removed with it. None today: the last one (the offline answerer
#: borrowing the BM25 tokenizer from retrieval/) went with issue 24 (``terms.py``).
ALLOWED_BACK_EDGES: set[tuple[str, str]] = set()


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
                    names = (
                        [".".join([*base, node.module])]
                        if node.module
                        else [".".join([*base, a.name]) for a in node.names]
                    )
            for name in names:
                unit = _unit(name)
                if unit is not None:
                    found.append((rel, node.lineno, unit))
    return found


def _module_imports(package: Path) -> list[tuple[str, int, str]]:
    """(file, line, module) for EVERY import of the package's own modules, module-level,
    inside functions or under TYPE_CHECKING alike: the module a name is imported from, or
    the module itself when ``from package import module`` names one."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        here = [package.name, *rel[:-3].split("/")]
        parent = here[:-1]
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (
                    (node.module or "").split(".")
                    if node.level == 0
                    else [
                        *parent[: len(parent) - node.level + 1],
                        *([node.module] if node.module else []),
                    ]
                )
                for alias in node.names:
                    sub = [*base, alias.name]
                    is_module = (package.parent / "/".join(sub)).with_suffix(".py").is_file() or (
                        package.parent / "/".join(sub) / "__init__.py"
                    ).is_file()
                    names.append(".".join(sub if is_module else base))
            found += [(rel, node.lineno, n) for n in names if n.split(".")[0] == package.name]
    return found


def module_cycles(package: Path) -> list[list[str]]:
    """Every cycle of modules (files) of the package that import each other, through any
    import (`_module_imports`): each as its modules, sorted. A package's ``__init__`` is
    the package's name."""
    graph: dict[str, set[str]] = {}
    for rel, _line, target in _module_imports(package):
        source = ".".join([package.name, *rel[:-3].split("/")]).removesuffix(".__init__")
        if target != source:
            graph.setdefault(source, set()).add(target)
    return _cycles(graph)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for target in sorted(graph.get(unit, ())):
            if target not in index:
                visit(target)
                low[unit] = min(low[unit], low[target])
            elif target in stack:
                low[unit] = min(low[unit], index[target])
        if low[unit] == index[unit]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == unit:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return sorted(cycles)


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
            bad.append(
                f"{rel}:{line} imports {target} ({how}: {source} is in layer {tier[source]}, "
                f"{target} in layer {tier[target]})"
            )
    bad += [
        f"{rel} no longer imports {target}: drop it from ALLOWED_BACK_EDGES"
        for rel, target in sorted(ALLOWED_BACK_EDGES - seen)
    ]
    return bad


def test_dependencies_point_one_way() -> None:
    """entry points -> composition -> services -> domain -> adapters, for every import."""
    assert layering_violations(REPO_ROOT / "llmwiki_git") == []


def package_cycles(package: Path) -> list[list[str]]:
    """Every cycle of the graph of top-level units (packages and modules) that import each
    other, whatever LAYERS says: each as the units in it, sorted (Tarjan's strongly connected
    components of more than one unit)."""
    graph: dict[str, set[str]] = {}
    for rel, _line, target in package_imports(package):
        source = rel.split("/")[0].removesuffix(".py")
        if target != source:
            graph.setdefault(source, set()).add(target)
    return _cycles(graph)


def test_no_package_cycles() -> None:
    """No two packages (or top-level modules) import each other, even through others and
    even inside a function: the one cycle there was (providers <-> retrieval) is gone."""
    assert package_cycles(REPO_ROOT / "llmwiki_git") == []


def test_no_module_cycles() -> None:
    """Issue 35 item 4: no module imports another that imports it back, through any import
    (even inside a function or under TYPE_CHECKING), inside a package as across them: the
    one there was (retrieval/service.py <-> retrieval/refseed.py) is gone."""
    assert module_cycles(REPO_ROOT / "llmwiki_git") == []


def test_module_cycles_are_found(tmp_path: Path) -> None:
    """The checker itself: a cycle of modules of one package, closed by an import inside a
    function or under TYPE_CHECKING, is found; ``from . import module`` names the module."""
    package = tmp_path / "llmwiki_git"
    (package / "retrieval").mkdir(parents=True)
    (package / "retrieval" / "__init__.py").write_text("")
    (package / "retrieval" / "service.py").write_text("from . import refseed\n")
    (package / "retrieval" / "refseed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .service import Retrieval\n"
    )
    (package / "retrieval" / "warm.py").write_text("def f():\n    from .store import load\n")
    (package / "retrieval" / "store.py").write_text(
        "from .. import retrieval\nfrom .warm import f\n"
    )
    assert module_cycles(package) == [
        ["llmwiki_git.retrieval.refseed", "llmwiki_git.retrieval.service"],
        ["llmwiki_git.retrieval.store", "llmwiki_git.retrieval.warm"],
    ]


def test_package_cycles_are_found(tmp_path: Path) -> None:
    package = tmp_path / "llmwiki_git"
    for folder in ("providers", "retrieval", "wiki"):
        (package / folder).mkdir(parents=True)
    (package / "providers" / "extractive.py").write_text(
        "def f():\n    from ..retrieval.lexical import tokenize\n"
    )
    (package / "retrieval" / "lexical.py").write_text("from ..wiki import model\n")
    (package / "wiki" / "model.py").write_text("from ..providers import extractive\n")
    assert package_cycles(package) == [["providers", "retrieval", "wiki"]]


def test_layering_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The checker itself: a back-edge hidden in a function body is found."""
    package = tmp_path / "llmwiki_git"
    (package / "wiki").mkdir(parents=True)
    (package / "wiki" / "model.py").write_text("def f():\n    from ..review import approve\n")
    (package / "review").mkdir()
    (package / "review" / "approve.py").write_text(
        "from ..wiki.model import f\nfrom .. import errors\n"
    )
    found = [v for v in layering_violations(package) if "ALLOWED_BACK_EDGES" not in v]
    tier = {unit: i for i, units in enumerate(LAYERS) for unit in units}
    assert found == [
        f"wiki/model.py:2 imports review (a higher layer: wiki is in layer {tier['wiki']}, "
        f"review in layer {tier['review']})"
    ]


def test_architecture_doc_names_every_layered_module() -> None:
    """docs/architecture.md draws the same layers: every module of LAYERS is in it."""
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text()
    package = REPO_ROOT / "llmwiki_git"
    for unit in (u for layer in LAYERS for u in layer):
        name = (
            f"`{unit}/`"
            if (package / unit).is_dir()
            else f"`{unit}.py`"
            if unit != "__main__"
            else "`__main__`"
        )
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
                    if (
                        isinstance(call, ast.Call)
                        and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "sleep"
                    ):
                        waiting.append(f"{folder}/{path.name}:{node.name}")
    assert sorted(set(waiting)) == ["providers/http.py:_exchange"]


def test_corpus_tests_find_the_corpora_one_way() -> None:
    """Every corpus test gets its corpus from ``tests/corpora/conftest.corpus()``, which
    honours LLMWIKI_CORPORA (and fails under CI instead of skipping); none builds its own path
    to ../shared/corpora (test_root_layout_foam.py did, and ignored LLMWIKI_CORPORA)."""
    suite = REPO_ROOT / "tests" / "corpora"
    own = [
        p.name
        for p in sorted(suite.glob("test_*.py"))
        if any(
            isinstance(node, ast.Constant) and node.value in ("shared", "corpora")
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        )
    ]
    assert own == []


def raw_git_calls(package: Path) -> list[str]:
    """``git.run(...)``, ``.text``, ``.spawn`` or ``.call`` on a git object (a name or
    attribute called ``git``, or ``require_git(...)``) outside ``gitstore/``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("gitstore/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("run", "text", "spawn", "call")
            ):
                continue
            receiver = node.func.value
            name = (
                receiver.id
                if isinstance(receiver, ast.Name)
                else receiver.attr
                if isinstance(receiver, ast.Attribute)
                else receiver.func.attr
                if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)
                else ""
            )
            if name == "git" or name.endswith("_git") or name == "require_git":
                found.append(f"{rel}:{node.lineno}")
    return found


MAX_MODULE_LINES = 800  # docs/architecture.md: formatted lines; a module past this holds two jobs


def long_modules(package: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    return [
        f"{path.relative_to(package).as_posix()}: {n} lines"
        for path in sorted(package.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    ]


def test_no_module_over_800_lines(tmp_path: Path) -> None:
    assert long_modules(REPO_ROOT / "llmwiki_git") == []
    (tmp_path / "big.py").write_text("x = 1\n" * 801)  # the check sees one
    assert long_modules(tmp_path) == ["big.py: 801 lines"]


# A function's length in lines, from its ``def`` to its last line (decorators, such as a
# command's click options, not counted), as ruff formats it: docs/architecture.md.
MAX_FUNCTION_LINES = 60
# The functions allowed past it, at most 5; each is still long (or leaves the list).
LONG_FUNCTIONS: frozenset[str] = frozenset()


def long_functions(package: Path, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``module:function`` -> lines, for each function of ``package`` over ``limit``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                count = node.end_lineno - node.lineno + 1
                if count > limit:
                    found[f"{path.relative_to(package).as_posix()}:{node.name}"] = count
    return found


def test_at_most_five_long_functions(tmp_path: Path) -> None:
    assert len(LONG_FUNCTIONS) <= 5
    found = long_functions(REPO_ROOT / "llmwiki_git")
    assert sorted(set(found) - LONG_FUNCTIONS) == [], "break these into named steps"
    assert sorted(LONG_FUNCTIONS - set(found)) == [], "no longer long: drop from LONG_FUNCTIONS"
    lines = "".join(f"    x{i} = {i}\n" for i in range(59))
    # 60 lines under a decorator: not long; 63 lines holding 60 statements: long.
    short = f"@decorated\ndef short():\n{lines[: lines.rindex('    x58')]}    return 1\n"
    long = f"def f():\n{lines}    y = (\n        1\n    )\n"
    (tmp_path / "m.py").write_text(f"{short}\n\n{long}")
    assert long_functions(tmp_path) == {"m.py:f": 63}


# What module level holds across calls, each for the life of one process and none of it a
# service's state (docs/architecture.md, "Nothing a service needs is kept in module globals").
MODULE_STATE = frozenset(
    {
        "checks/links.py:_KEYS",  # memo: a markdown link's key by (folder, destination)
        "gitstore/git.py:_COMMON_DIRS",  # memo: the common git dir find_root learnt
        "gitstore/lock.py:_HELD",  # the lock descriptors this process holds (forks close them)
        "gitstore/transaction.py:_passed",  # crash points passed (the crash tests' counter)
        "providers/base.py:user_agent",  # memo (lru_cache): the User-Agent string
        "providers/http.py:_TLS",  # the TLS context, built once (~0.2 s each)
        "providers/http.py:_OPEN",  # the model requests in flight, closed on Ctrl-C
        "providers/http.py:_STOPPING",  # set while those are being closed
        "terms.py:_word_with_marks",  # memo (lru_cache): a compiled pattern
        "wiki/slug.py:slugify",  # memo (lru_cache) of a pure function
    }
)
_MUTATORS = frozenset(
    {"append", "add", "update", "clear", "pop", "popitem", "setdefault", "discard", "remove"}
    | {"extend", "insert"}
)


def module_state(package: Path) -> set[str]:
    """``module:name`` of each module-level name that changes after import: one a function
    declares ``global``, a module-level container some code adds to (``name[k] = v``,
    ``name.append(...)``, ...), a function memoized with ``lru_cache``/``cache``."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(package).as_posix()
        top: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Assign):
                top.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                top.add(node.target.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    called = decorator.func if isinstance(decorator, ast.Call) else decorator
                    name = getattr(called, "attr", getattr(called, "id", ""))
                    if name in ("lru_cache", "cache"):
                        found.add(f"{rel}:{node.name}")
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Global):
                names = node.names
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and isinstance(node.func.value, ast.Name)
            ):
                names = [node.func.value.id]
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
                names = [
                    target.value.id
                    for target in targets
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                ]
            found.update(f"{rel}:{name}" for name in names if name in top)
    return found


def test_module_state_is_the_documented_list(tmp_path: Path) -> None:
    assert module_state(REPO_ROOT / "llmwiki_git") == MODULE_STATE
    doc = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for entry in MODULE_STATE:
        assert f"`{entry.split(':')[0]}`" in doc, entry
    (tmp_path / "m.py").write_text(
        "from functools import lru_cache\nSEEN = {}\nCONST = {'a': 1}\nN = 0\n\n\n"
        "@lru_cache(maxsize=1)\ndef f():\n    SEEN['x'] = 1\n\n\n"
        "def g():\n    global N\n    N += 1\n    return CONST['a']\n"
    )
    assert module_state(tmp_path) == {"m.py:f", "m.py:SEEN", "m.py:N"}


def test_the_page_limit_in_bytes_is_computed_once() -> None:
    """``max_page_mb`` becomes bytes in one place (`Settings.max_page_bytes`)."""
    written = [
        f"{path.relative_to(REPO_ROOT).as_posix()}:{number}"
        for path in sorted((REPO_ROOT / "llmwiki_git").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "max_page_mb * 1024" in line
    ]
    assert [where.split(":")[0] for where in written] == ["llmwiki_git/config.py"], written


#: The modules whose records the check engine and its caches pass around: every field typed
#: (tagged tuples mypy narrows, NamedTuples), no ``tuple[Any, ...]`` that strict mypy cannot see into.
TYPED_RECORDS = (
    "checks/links.py",
    "checks/result.py",
    "checks/extras.py",
    "wiki/pages.py",
    "wiki/scanner.py",
    "wiki/provenance.py",
    "wiki/parallel.py",
)


def test_the_check_records_are_typed_field_by_field() -> None:
    package = REPO_ROOT / "llmwiki_git"
    untyped = [
        f"{name}:{number}"
        for name in TYPED_RECORDS
        for number, line in enumerate((package / name).read_text(encoding="utf-8").splitlines(), 1)
        if "tuple[Any" in line
    ]
    assert untyped == []


def test_git_commands_only_in_gitstore() -> None:
    """Every git command line is written once, in gitstore/ (a typed helper of
    ``gitstore.git.Git``); the rest of the package calls those helpers."""
    assert raw_git_calls(REPO_ROOT / "llmwiki_git") == []


def test_raw_git_calls_are_found(tmp_path: Path) -> None:
    package = tmp_path / "llmwiki_git"
    (package / "review").mkdir(parents=True)
    (package / "review" / "x.py").write_text(
        "def f(git, ws, self):\n    git.run('log')\n    ws.require_git('x').run('x')\n    self.git.spawn('y')\n"
        "    self._git.text('z')\n    proc.run()\n"
    )
    assert raw_git_calls(package) == [
        "review/x.py:2",
        "review/x.py:3",
        "review/x.py:4",
        "review/x.py:5",
    ]


# -- where a change goes (docs/architecture.md): each kind of change stays in its few files --


def _string_constants(package: Path) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append((rel, node.lineno, node.value))
    return found


def test_provider_names_only_in_the_table() -> None:
    """A provider is its module(s) and one row of providertable.py: no other module names a
    chat provider (no if-chain, no tuple of names to extend)."""
    from llmwiki_git import providertable

    package = REPO_ROOT / "llmwiki_git"
    home = {
        r.name: {"providertable.py"}
        | {f"{p.split(':')[0].replace('.', '/')}.py" for p in (r.chat, r.embeddings) if p}
        for r in providertable.PROVIDERS
        if r.chat
    }
    stray = [
        f"{rel}:{line} names {value!r}"
        for rel, line, value in _string_constants(package)
        if value in home and rel not in home[value]
    ]
    assert stray == []


def test_an_mcp_tool_is_one_declaration() -> None:
    """A tool's name is written once, in its declaration in mcptools/ (the server lists
    mcptools.TOOLS and special-cases none)."""
    from llmwiki_git.mcptools import TOOLS

    package = REPO_ROOT / "llmwiki_git"
    names = {t.name for t in TOOLS}
    where: dict[str, list[str]] = {}
    for rel, _line, value in _string_constants(package):
        if value in names:
            where.setdefault(value, []).append(rel)
    assert all(len(files) == 1 and files[0].startswith("mcptools/") for files in where.values()), (
        where
    )
    assert set(where) == names


def test_trailer_keys_only_in_trailers() -> None:
    """Trailer keys are spelt in publication/trailers.py (and the source trailer, which the
    wiki reads for provenance, in wiki/provenance.py); writers and readers use the names."""
    package = REPO_ROOT / "llmwiki_git"
    stray = [
        f"{rel}:{line}"
        for rel, line, value in _string_constants(package)
        if value.startswith("Llmwiki-")
        and rel not in ("publication/trailers.py", "wiki/provenance.py")
    ]
    assert stray == []


def test_vector_stores_behind_the_protocol() -> None:
    """Only the module choosing the store (retrieval/store.py) and the file store itself name
    the file store; search, refresh, the indexer and the services use `VectorIndex`."""
    package = REPO_ROOT / "llmwiki_git"
    named = sorted(
        {
            path.relative_to(package).as_posix()
            for path in package.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text()))
            if (isinstance(node, ast.Name) and node.id == "FileVectors")
            or (isinstance(node, ast.Attribute) and node.attr in ("FileVectors", "matrix"))
        }
    )
    assert named == ["retrieval/filevectors.py", "retrieval/store.py"]


def test_every_check_code_is_documented() -> None:
    """A check code is its default severity in problems.py, its rule, and a row of docs/check.md."""
    from llmwiki_git import problems

    docs = (REPO_ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    assert [code for code in problems.CODES if f"`{code}`" not in docs] == []


def test_shared_stores_only_through_the_table() -> None:
    """Issue 35 item 3: a shared vector store is chosen in one place, by URI scheme
    (retrieval/storetable.py): no module imports one by name, and the retrieval service
    reaches none of their internals (a table, a connection)."""
    package = REPO_ROOT / "llmwiki_git"
    stores = {"pgvectors", "sqlitevectors"}
    importing = sorted(
        f"{rel}:{line}"
        for rel, line, name in _module_imports(package)
        if name.rsplit(".", 1)[-1] in stores
        and not rel.endswith(("/pgvectors.py", "/sqlitevectors.py"))
    )
    assert importing == []
    service = ast.parse((package / "retrieval" / "service.py").read_text())
    reached = [
        node.attr
        for node in ast.walk(service)
        if isinstance(node, ast.Attribute) and node.attr in ("table", "db", "conn")
    ]
    assert reached == []
    from llmwiki_git.retrieval import storetable

    for row in storetable.STORES.values():  # every row names a module that exists
        assert (package / (row.module.replace(".", "/") + ".py")).is_file(), row
