"""Rough edges a new user hits, each through the real CLI in a fresh process."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmwiki_git import config
from llmwiki_git.providers import registry
from llmwiki_git.retrieval import embedders, search

from ..conftest import Repo
from ..servers import json_response, serve

LEXICAL = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: int | None = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=stdin,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def nested(repo: Repo) -> Repo:
    """A wiki project in sub/ (it holds .llmwiki/) inside a larger repository whose root has
    markdown of its own, with a broken link."""
    repo.write("README.md", "# Project\nSee [[nowhere-at-root]].\n")
    repo.write("sub/.llmwiki/config.toml", "")
    repo.write("sub/wiki/concepts/trees.md", "# Trees\nA tree lists [[blobs]].\n")
    repo.write("sub/wiki/concepts/blobs.md", "# Blobs\nFile contents.\n")
    repo.commit("nested wiki")
    return repo


# --- -C ----------------------------------------------------------------------------------


def test_dash_c_applies_to_file_arguments(nested: Repo) -> None:
    proc = nested.llmwiki("-C", "sub", "links", "wiki/concepts/trees.md")
    assert proc.returncode == 0, proc.stderr
    assert "resolved: blobs -> concepts/blobs" in proc.stdout
    missing = nested.llmwiki("-C", "sub", "links", "wiki/nope.md")
    assert missing.returncode == 2 and "cannot read wiki/nope.md" in missing.stderr


# --- outside git -------------------------------------------------------------------------


def test_outside_git_messages_name_no_flag_that_was_not_given(tmp_path: Path) -> None:
    for args in (("review", "list"), ("hooks", "install")):
        proc = run(tmp_path, *args)
        assert proc.returncode == 2 and "needs a git repository" in proc.stderr
        assert "drop" not in proc.stderr and "git init" in proc.stderr
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    staged = run(tmp_path, "check", "--staged")
    assert staged.returncode == 2 and "drop --staged" in staged.stderr


def test_empty_folder_outside_git_is_no_wiki_and_gets_nothing_written(tmp_path: Path) -> None:
    for args in (("check",), ("index",), ("context", "x"), ("query", "x")):
        proc = run(tmp_path, *args, env=LEXICAL)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "no wiki here" in proc.stderr and "pages checked" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_query_save_outside_git_fails_before_generating(tmp_path: Path) -> None:
    (tmp_path / "blob.md").write_text(
        "# Blob\nA blob stores the contents of a file.\n", encoding="utf-8"
    )
    with serve(lambda path, body, headers: json_response({})) as (url, recorder):
        proc = run(
            tmp_path,
            "query",
            "what is a blob?",
            "--save",
            "--provider",
            "openai",
            env={**LEXICAL, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k"},
        )
    assert proc.returncode == 2 and "saving an answer needs a git repository" in proc.stderr
    assert "drop --save" in proc.stderr
    assert recorder.requests == [] and proc.stdout == ""


# --- settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "variable", "valid"),
    [
        ("retrieval", "LLMWIKI_RETRIEVAL", "rrf, rerank, cosine, bm25"),
        ("embedding_provider", "LLMWIKI_EMBEDDING_PROVIDER", "local, none, openai, ollama"),
        ("chat_provider", "LLMWIKI_PROVIDER", "openai, anthropic, ollama, extractive"),
    ],
)
def test_bad_settings_are_refused_by_every_command_with_the_valid_values(
    repo: Repo, setting: str, variable: str, valid: str
) -> None:
    repo.write("wiki/a.md", "# A\n")
    repo.commit("a")
    for args in (("check",), ("query", "a"), ("index",)):
        proc = repo.llmwiki(*args, env={variable: "bogus"})
        assert (
            proc.returncode == 2
            and f"{variable}: unknown value 'bogus'; valid values: {valid}" in proc.stderr
        ), proc.stderr
    repo.write(".llmwiki/config.toml", f'{setting} = "bogus"\n')
    proc = repo.llmwiki("check")
    assert (
        proc.returncode == 2
        and f"{setting} in .llmwiki/config.toml: unknown value 'bogus'" in proc.stderr
    )
    assert (
        repo.llmwiki("check", env={variable: valid.split(", ")[-1].upper()}).returncode == 2
    )  # the file is still bad


def test_valid_values_match_what_the_modules_accept() -> None:
    assert config.RETRIEVAL_MODES == search.MODES
    assert config.EMBEDDING_PROVIDERS == embedders.PROVIDERS
    assert config.CHAT_PROVIDERS == registry.PROVIDERS


# --- query -------------------------------------------------------------------------------


@pytest.fixture
def blob_wiki(repo: Repo) -> Repo:
    repo.write("wiki/concepts/blobs.md", "# Blobs\nA blob stores the contents of one file.\n")
    repo.write("wiki/concepts/trees.md", "# Trees\nA tree lists blobs and other trees.\n")
    repo.commit("wiki")
    return repo


def test_unquoted_question_is_one_question(blob_wiki: Repo) -> None:
    proc = blob_wiki.llmwiki("query", "what", "is", "a", "blob", "--json", env=LEXICAL)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["question"] == "what is a blob" and "concepts/blobs" in result["pageIds"]


def test_lang_with_the_extractive_answerer_gives_a_notice(blob_wiki: Repo) -> None:
    proc = blob_wiki.llmwiki("query", "what is a blob?", "--lang", "de", env=LEXICAL)
    assert proc.returncode == 0, proc.stderr
    assert (
        "warning: language-ignored: answer language 'de' ignored: the extractive answerer"
        in proc.stderr
    )
    plain = blob_wiki.llmwiki("query", "what is a blob?", env=LEXICAL)
    assert "language-ignored" not in plain.stderr


def test_missing_retrieval_extra_names_the_install_command(blob_wiki: Repo) -> None:
    """The base install (check, links, hooks, review) has no numpy: query says what to install."""
    code = "import sys; sys.modules['numpy'] = None; from llmwiki_git.cli import main; sys.argv[0] = 'llmwiki'; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "query", "what is a blob?"],
        cwd=blob_wiki.root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "this command needs numpy" in proc.stderr and "pip install '.[local]'" in proc.stderr
    # no release is published: never a bare registry name that finds nothing (issue 23)
    assert not re.search(r"pip install 'llmwiki-git\[[a-z,]+\]'", proc.stderr), proc.stderr
    assert "Internal error" not in proc.stderr


# --- links on a terminal -----------------------------------------------------------------


def test_links_without_file_on_a_terminal_says_what_to_do(blob_wiki: Repo) -> None:
    main, secondary = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "llmwiki_git", "links"],
            cwd=blob_wiki.root,
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(main)
        os.close(secondary)
    assert proc.returncode == 2 and "standard input is a terminal" in proc.stderr
    piped = blob_wiki.llmwiki("links", input="See [[blobs]].")
    assert piped.returncode == 0 and "resolved: blobs -> concepts/blobs" in piped.stdout


# --- words -------------------------------------------------------------------------------


def test_singular_counts(repo: Repo) -> None:
    repo.write("wiki/concepts/a.md", "# A\nSee [[a#nowhere]].\n")
    repo.commit("one page")
    proc = repo.llmwiki("check")
    assert "1 page checked: no broken links in the work tree, 1 warning." in proc.stderr
    index = repo.llmwiki("index", "--fast", env=LEXICAL)
    assert index.returncode == 0, index.stderr
    assert "Indexed 1 page: 1 chunk" in index.stdout
    assert "_1 page | Generated" in (repo.root / "wiki" / "index.md").read_text(encoding="utf-8")


def test_fast_index_says_it_sticks(repo: Repo) -> None:
    repo.write("wiki/a.md", "# A\nText.\n")
    repo.commit("a")
    fast = repo.llmwiki("index", "--fast")
    assert "plain `llmwiki index` runs keep it so; run `llmwiki index --full`" in fast.stderr
    again = repo.llmwiki("index")
    assert "lexical-only (built with --fast)" in again.stderr


def test_a_chat_provider_with_no_server_on_this_machine_fails_at_once(
    blob_wiki: Repo, monkeypatch
) -> None:
    """Regression: `chat_provider = "ollama"` copied from the docs without Ollama running
    took 9.5 s to fail (1 + 2 + 4 s of retries of a refused connection), and said its hint
    twice."""
    import socket

    with socket.socket() as probe:  # a port on this machine where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (blob_wiki.root / ".llmwiki").mkdir(exist_ok=True)
    (blob_wiki.root / ".llmwiki" / "config.toml").write_text('chat_provider = "ollama"\n')
    slept: list[float] = []
    monkeypatch.setattr("llmwiki_git.providers.http.time.sleep", slept.append)
    proc = blob_wiki.llmwiki(
        "query", "what is a blob?", env={**LEXICAL, "OLLAMA_HOST": f"127.0.0.1:{port}"}
    )
    assert proc.returncode == 1 and slept == [], (slept, proc.stderr)
    assert (
        f"Error: ollama: cannot connect to http://127.0.0.1:{port}/api/chat (connection refused)"
        in proc.stderr
    )
    assert proc.stderr.count("ollama serve") == 1, proc.stderr


def test_no_tip_to_save_an_answer_that_says_the_wiki_does_not_say(repo: Repo) -> None:
    """Regression (issue 23): "Tip: use --save to add this answer to your wiki" followed
    "The wiki does not say." (saving it is refused: nothing to publish)."""
    repo.write(
        "wiki/zebra.md",
        "---\ntitle: Zebra\n---\n\nStripes are black and white on every animal of the herd.\n",
    )
    repo.commit("wiki")
    proc = repo.llmwiki("query", "zebra?", env=LEXICAL)
    assert proc.returncode == 0 and proc.stdout.startswith("The wiki does not say."), proc.stdout
    assert "Tip: use --save" not in proc.stderr
    answered = repo.llmwiki("query", "what colour are the stripes?", env=LEXICAL)
    assert "Tip: use --save" in answered.stderr
