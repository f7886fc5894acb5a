"""Pages that are not UTF-8 text (issue 23): `index`, `query` and `links` say so, naming the
file, and no U+FFFD ever reaches a commit. Both layouts."""

from __future__ import annotations

import json

import pytest

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
LATIN = (
    "---\ntitle: CV\n---\n\nA na\xefve r\xe9sum\xe9 lists every job the writer ever held, "
    "from the first paper round on.\n"
).encode("latin-1")
BINARY = b"# Picture\x00\x89PNG\r\n\x1a\n\x00\x00 [[cv]]\n"
GOOD = page("Resumes", "A short resume lists only the recent jobs of the writer, newest first.")


@pytest.fixture(params=["root", "wiki"])
def vault(request: pytest.FixtureRequest, repo: Repo) -> tuple[Repo, str]:
    prefix = "" if request.param == "root" else "wiki/"
    if not prefix:
        repo.write("index.md", "# Home\n\nMy vault.\n")
        repo.write("log.md", "# My log\n")
    repo.write(f"{prefix}notes/cv.md", LATIN)
    repo.write(f"{prefix}notes/picture.md", BINARY)
    repo.write(f"{prefix}notes/resumes.md", GOOD)
    repo.commit("vault")
    return repo, prefix


def test_index_names_the_pages_it_leaves_out(vault: tuple[Repo, str]) -> None:
    """Regression: a binary .md was skipped without a word; a Latin-1 page was indexed with
    U+FFFD in place of its accented letters."""
    repo, prefix = vault
    proc = repo.llmwiki("index", "--json", env=FAST)
    assert proc.returncode == 0, proc.stderr
    notes = json.loads(proc.stdout)["notes"]
    assert (
        f"{prefix}notes/cv.md (line 5): not valid UTF-8 (byte 23); left out of search and answers"
        " (save it as UTF-8 text to include it)" in notes
    ), notes
    assert any(
        n.startswith(f"{prefix}notes/picture.md: binary file (contains NUL bytes)") for n in notes
    ), notes
    text = repo.llmwiki("index", env=FAST)
    assert f"note: {prefix}notes/cv.md (line 5): not valid UTF-8" in text.stderr


def test_query_says_which_page_it_cannot_read_and_never_saves_u_fffd(
    vault: tuple[Repo, str],
) -> None:
    """Regression: `query --save` committed "na\ufffdve r\ufffdsum\ufffd"."""
    repo, prefix = vault
    repo.llmwiki("index", env=FAST)
    proc = repo.llmwiki("query", "what does a naive resume list?", "--save", env=FAST)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: page-unreadable: {prefix}notes/cv.md (line 5): not valid UTF-8" in proc.stderr
    assert f"warning: page-unreadable: {prefix}notes/picture.md: binary file" in proc.stderr
    assert "\ufffd" not in proc.stdout and "recent jobs" in proc.stdout
    saved = repo.git(
        "show", "HEAD", "--format=", "--", f"{prefix}queries/what-does-a-naive-resume-list.md"
    )
    assert saved and "\ufffd" not in saved


def test_a_question_that_is_not_utf8_is_answered_but_never_saved(vault: tuple[Repo, str]) -> None:
    repo, _ = vault
    before = repo.git("rev-parse", "HEAD")
    proc = repo.llmwiki_process(
        "query", b"what does a short r\xe9sum\xe9 list?", "--save", env=FAST
    )
    assert proc.returncode == 1, proc.stderr
    assert "Answer publication refused: it holds U+FFFD replacement characters" in proc.stderr
    assert repo.git("rev-parse", "HEAD") == before


def test_links_names_a_file_that_is_not_utf8_and_refuses_a_binary_one(
    vault: tuple[Repo, str],
) -> None:
    """Regression: `links binary.md` said "none recognized", exit 0."""
    repo, prefix = vault
    proc = repo.llmwiki("links", f"{prefix}notes/cv.md")
    assert (
        proc.returncode == 0
        and f"warning: {prefix}notes/cv.md:5: not valid UTF-8 (byte 23)" in proc.stderr
    )
    binary = repo.llmwiki("links", f"{prefix}notes/picture.md")
    assert binary.returncode == 2
    assert (
        f"cannot read {prefix}notes/picture.md: it is a binary file (it contains NUL bytes)"
        in binary.stderr
    )
    assert "none recognized" not in binary.stdout
