"""The docs name only files that exist: a module path (``llmwiki_git/wiki/pages.py``,
``checks/links.py``, ``service.py``), a test file (``tests/review/test_review.py``,
``test_shape.py``) or a benchmark, written in docs/ or the README, must be a file of this
repository. A file of another project is named in `OUTSIDE`, on purpose, one by one."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import REPO_ROOT

# ``.py`` names the docs give for files that are not ours, each where it is written.
OUTSIDE = frozenset(
    {
        "mkbigwiki.py",  # docs/benchmarks.md: the shared tool that builds the 10,000-page wiki
        "bm25s/__init__.py",  # docs/bm25-notes.md: the bm25s package, read and set aside
        "bm25s/scoring.py",
        "Config.py",  # docs/embeddings.md: FlashRank's, why it was excluded
    }
)
# A ``.py`` file name, with the folders written before it (``wiki/pages.py``); one starting
# with ``/`` (``/work/shared/tools/x.py``) is a path outside the repository, not checked.
_PY_NAME = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w-]+\.py)\b")
# A path into the package or its tests: each must exist, a folder, a file or a module
# written without its ``.py`` (``llmwiki_git/__init__``).
_PACKAGE_PATH = re.compile(r"(?<![\w./-])((?:llmwiki_git|tests|benchmarks)/[\w./-]*[\w/])")


def repository_files(root: Path) -> list[str]:
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if ".git" not in path.parts and "__pycache__" not in path.parts
    )


def missing_names(root: Path, docs: list[Path]) -> list[str]:
    """``doc:line: name`` for each file or module path a doc names that does not exist."""
    files = repository_files(root)
    known = set(files)
    found = []
    for doc in docs:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{doc.relative_to(root).as_posix()}:{number}"
            for name in _PY_NAME.findall(line):
                if name.startswith("/") or name in OUTSIDE:
                    continue
                if name.startswith(("llmwiki_git/", "tests/", "benchmarks/")):
                    continue  # a full path: checked exactly below
                if not any(path == name or path.endswith("/" + name) for path in files):
                    found.append(f"{where}: {name}")
            for path in _PACKAGE_PATH.findall(line):
                if path.rstrip("/") not in known and path + ".py" not in known:  # a module
                    found.append(f"{where}: {path}")
    return found


def project_docs(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_docs_name_only_files_that_exist() -> None:
    assert missing_names(REPO_ROOT, project_docs(REPO_ROOT)) == []


def test_a_doc_naming_a_missing_file_is_caught(tmp_path: Path) -> None:
    (tmp_path / "llmwiki_git" / "wiki").mkdir(parents=True)
    (tmp_path / "llmwiki_git" / "wiki" / "pages.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shape.py").write_text("")
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "a.md"
    doc.write_text(
        "Fine: `llmwiki_git/wiki/pages.py`, `wiki/pages.py`, `pages.py`, `llmwiki_git/wiki/`,\n"
        "(tests/test_shape.py), `test_shape.py`, /work/shared/tools/mkbigwiki.py, bm25s/scoring.py.\n"
        "Gone: `llmwiki_git/wiki/page.py` and `wiki/scan.py`,\n"
        "`tests/test_corpora.py`, test_gone.py, `llmwiki_git/checks/`.\n"
    )
    assert missing_names(tmp_path, [doc]) == [
        "docs/a.md:3: wiki/scan.py",
        "docs/a.md:3: llmwiki_git/wiki/page.py",
        "docs/a.md:4: test_gone.py",
        "docs/a.md:4: tests/test_corpora.py",
        "docs/a.md:4: llmwiki_git/checks/",
    ]
