"""The one exception tree (errors.py) and where broad catches are allowed, read from the
source with ``ast`` (including handlers inside functions)."""

from __future__ import annotations

import ast
import builtins
import inspect
from pathlib import Path

import llmwiki_git
from llmwiki_git import errors

PACKAGE = Path(llmwiki_git.__file__).parent
#: The translation boundaries: they turn any exception into a message and an exit code.
BOUNDARIES = {"cli/app.py", "mcp_server.py", "action.py"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _names(node: ast.expr | None) -> list[str]:
    if node is None:
        return ["<bare>"]
    if isinstance(node, ast.Tuple):
        return [n for item in node.elts for n in _names(item)]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    return []


def broad_handlers(modules: list[tuple[str, ast.Module]]) -> list[str]:
    """``except Exception`` / bare ``except`` / ``except BaseException`` that does not
    re-raise, outside the boundaries, as ``path:line``."""
    found = []
    for rel, tree in modules:
        if rel in BOUNDARIES:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ExceptHandler):
                continue
            names = _names(node.type)
            reraises = (
                bool(node.body)
                and isinstance(node.body[-1], ast.Raise)
                and node.body[-1].exc is None
            )
            if (
                "Exception" in names
                or "<bare>" in names
                or ("BaseException" in names and not reraises)
            ):
                found.append(f"{rel}:{node.lineno}")
    return found


def test_except_exception_only_at_the_three_boundaries() -> None:
    assert broad_handlers(_modules()) == []


def test_the_check_sees_a_new_broad_catch() -> None:
    """The check is not vacuous: a broad catch in a domain module, even nested in a
    function, is found; a cleanup that re-raises is not."""
    source = (
        "def f():\n    try:\n        pass\n    except (OSError, Exception):\n        pass\n"
        "def g():\n    try:\n        pass\n    except BaseException:\n        raise\n"
    )
    assert broad_handlers([("wiki/model.py", ast.parse(source))]) == ["wiki/model.py:4"]
    assert broad_handlers([("cli/app.py", ast.parse(source))]) == []


def test_every_exception_class_is_in_the_tree() -> None:
    """Every exception class of the package is defined in errors.py and derives from
    LlmwikiError: none elsewhere, none on bare Exception. One exception by design:
    `Interrupted`, Ctrl-C with what the interrupted work kept, is a KeyboardInterrupt, so that
    no handler of LlmwikiError (a best-effort step, a fallback) can swallow a Ctrl-C."""
    classes = [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, BaseException) and c.__module__ == errors.__name__
    ]
    exception_names = {c.__name__ for c in classes} | {
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    elsewhere = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ClassDef)
                and rel != "errors.py"
                and any(
                    n in exception_names or n.endswith(("Error", "Exception"))
                    for base in node.bases
                    for n in _names(base)
                )
            ):
                elsewhere.append(f"{rel}:{node.name}")
    assert elsewhere == []
    assert len(classes) >= 20
    assert [c for c in classes if not issubclass(c, errors.LlmwikiError)] == [errors.Interrupted]
    assert issubclass(errors.Interrupted, KeyboardInterrupt) and not issubclass(
        errors.Interrupted, Exception
    )
