"""What compile stages, approval accepts (issue 36, item 1): quoted source text carries no
link that cannot resolve; approval honours `[check.severity]` exactly as `check` does;
compile runs approval's gate before staging and stages nothing it would refuse; a candidate
edited by hand is refused with a message that says so and how to keep the edit."""

from __future__ import annotations

import json
import re
import subprocess

from ..conftest import Repo, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}

#: An HTML manual page as documentation packages ship them: links to sibling pages and to
#: anchors of its own, an image, a `javascript:` link.
MANUAL = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html><head><title>git-branch(1)</title></head><body>
<h1 id="top">git-branch(1) Manual Page</h1>
<p><img src="logo.png" alt="logo"/></p>
<p>List, create, or delete branches. If <a href="#opt-list">--list</a> is given, or if there
are no non-option arguments, existing branches are listed; see
<a href="git-checkout.html">git-checkout(1)</a> and <a href="git-log.html#_options">the log
options</a> for how branches are used. A branch is a movable pointer to a commit.</p>
<p id="opt-list">With --list, branches are listed and the current branch is highlighted with
an asterisk. Read <a href="https://git-scm.com/docs">the online manual</a> too, and never
click <a href="JaVaScRiPt:alert(1)">this</a>.</p>
</body></html>
"""


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def _staged_id(proc: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"Staged (compile-[0-9a-f]{8})", proc.stdout)
    assert found, proc.stdout + proc.stderr
    return found.group(1)


def test_an_html_manual_with_relative_links_compiles_to_a_run_approval_accepts(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/git-branch.html", MANUAL)
    repo.commit("inbox")
    assert run(repo, "ingest", "inbox/git-branch.html").returncode == 0
    proc = run(repo, "compile")
    assert proc.returncode == 0, proc.stderr
    cid = _staged_id(proc)
    note = repo.git("show", f"llmwiki/review/{cid}:{prefix}concepts/git-branch.md")
    assert "](git-checkout.html)" not in note and "](#" not in note and "logo.png" not in note
    assert "git-checkout(1)" in note  # the link's text stays, as plain text
    assert "javascript" not in note.lower()
    shown = json.loads(run(repo, "review", "show", cid, "--json").stdout)
    assert shown["verdict"]["ok"], shown["verdict"]
    approved = run(repo, "review", "approve", cid)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert run(repo, "check").returncode == 0


def test_approval_honours_check_severity_exactly_as_check_does(repo: Repo, prefix: str) -> None:
    target = f"{prefix}concepts/alpha.md"
    repo.write(target, page("Alpha", "Alpha is the first letter. See [the notes](notes.html)."))
    staged = run(repo, "review", "stage", target, "--restore", "--json")
    assert staged.returncode == 0, staged.stderr
    cid = json.loads(staged.stdout)["staged"][0]["id"]
    refused = run(repo, "review", "approve", cid)
    assert refused.returncode != 0 and "notes.html" in refused.stderr + refused.stdout
    repo.write(".llmwiki/config.toml", '[check.severity]\nbroken-relative-link = "warning"\n')
    repo.commit("relative links are warnings here")
    # the tip moved (config only): the page is what the editor read, so the edit replays
    approved = run(repo, "review", "approve", cid)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "notes.html" in (repo.root / target).read_text()
    assert run(repo, "check").returncode == 0  # and check agrees


def test_compile_stages_nothing_that_approval_would_refuse(repo: Repo, prefix: str) -> None:
    # duplicate-title made an error: a source titled like an existing page gives a note
    # that approval would refuse, so compile stages nothing and says why
    repo.write(".llmwiki/config.toml", '[check.severity]\nduplicate-title = "error"\n')
    repo.write("inbox/alpha-notes.md", "# Alpha\n\nAlpha is a letter that starts many words.\n")
    repo.commit("inbox")
    assert run(repo, "ingest", "inbox/alpha-notes.md").returncode == 0
    proc = run(repo, "compile")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Nothing staged: approval would refuse this run" in proc.stdout
    assert "duplicate" in proc.stdout.lower()
    assert repo.git("branch", "--list", "llmwiki/review/*").strip() == ""
    out = json.loads(run(repo, "compile", "--json").stdout)
    assert out["candidate"] is None and "duplicate" in out["gate"].lower()


def test_a_candidate_edited_by_hand_says_so_and_how_to_keep_the_edit(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/notes.md", "# Field notes\n\nWe walked along the river for a long time.\n")
    repo.commit("inbox")
    assert run(repo, "ingest", "inbox/notes.md").returncode == 0
    cid = _staged_id(run(repo, "compile"))
    branch = f"llmwiki/review/{cid}"
    repo.git("checkout", "-q", branch)
    target = (
        f"{prefix}concepts/"
        + repo.git("diff", "--name-only", "HEAD~1", "HEAD", "--", f"{prefix}concepts")
        .split("/")[-1]
        .strip()
    )
    repo.write(target, (repo.root / target).read_text() + "\nMy own addition.\n")
    repo.commit("a hand edit on the candidate branch")
    repo.git("checkout", "-q", "-")
    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert any("edited by hand" in n for n in listed[0]["notes"]), listed
    refused = run(repo, "review", "approve", cid)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "edited by hand" in said and "llmwiki review stage" in said, said
    assert "malformed trailer block" not in said


def _state_files(repo: Repo) -> set[str]:
    state = repo.root / ".llmwiki"
    return {p.relative_to(state).as_posix() for p in state.rglob("*")} if state.exists() else set()


def test_approval_prints_approved_and_never_builds_a_whole_index(repo: Repo, prefix: str) -> None:
    """Issue 36 item 2: approval followed by a whole-wiki embedding (500+ s on a 1,000-page
    vault with no index). Now a wiki with no search index gets none from an approval (the
    next `llmwiki index` builds it); one with an index follows by difference."""
    repo.write("inbox/notes.md", "# Field notes\n\nWe walked along the river for a long time.\n")
    repo.commit("inbox")
    assert run(repo, "ingest", "inbox/notes.md").returncode == 0
    cid = _staged_id(run(repo, "compile"))
    before = _state_files(repo)
    approved = run(repo, "review", "approve", cid)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"Approved {cid}"), approved.stdout
    assert not any(f.startswith(("bm25", "embeddings")) for f in _state_files(repo) - before)
    # with an index, the approved page is searchable at once (lexically, by difference)
    assert run(repo, "index").returncode == 0
    repo.write("inbox/more.md", "# Kayak trips\n\nPaddling a kayak down the quiet canal.\n")
    repo.commit("more")
    assert run(repo, "ingest", "inbox/more.md").returncode == 0
    cid = _staged_id(run(repo, "compile"))
    assert run(repo, "review", "approve", cid, "--no-index").returncode == 0
    found = run(repo, "context", "kayak canal", "--json")
    assert found.returncode == 0, found.stderr
    assert "Paddling a kayak" in found.stdout, found.stdout  # the approved note, found


def test_review_list_prints_a_long_run_one_path_a_line(repo: Repo, prefix: str) -> None:
    """Issue 36 item 7: `review list` printed 18 paths on one line."""
    for name in ("tea", "coffee", "cocoa", "mate"):
        repo.write(f"inbox/{name}.md", f"# {name.title()}\n\nA drink called {name}, brewed hot.\n")
    repo.commit("inbox")
    assert run(repo, "ingest", "inbox").returncode == 0
    cid = _staged_id(run(repo, "compile"))
    listed = run(repo, "review", "list").stdout.splitlines()
    row = next(line for line in listed if line.startswith(cid))
    assert "4 pages" in row and "concepts/" not in row, row
    assert sum(1 for line in listed if line.startswith("    ") and "concepts/" in line) == 4
