"""`llmwiki mv OLD NEW --review` (issue 28, round two): the move as ONE review candidate of kind
move/1 -- the page deleted and added, every linking page rewritten, each file with its
precondition -- shown as a plan, approved all or nothing through the validated transaction,
refused when a linking page moved on, and a hostile branch never passing for a move. Both
layouts."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ..conftest import Repo, layout_prefix, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}
MV = ("concepts/old-page.md", "concepts/new-page.md")


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    """A page linked in every form from two pages; in the vault, also from the user's own
    index.md (a home page llmwiki never regenerates)."""
    prefix = layout_prefix(repo, request.param, "# My vault\r\n\r\nStart at [[old-page]].\r\n")
    if not prefix:
        repo.write(".gitignore", ".llmwiki/\n")
    repo.write(
        f"{prefix}concepts/old-page.md",
        page("Old Page", "# Old Page\n\n## Usage\n\n[[other]] and [up](../notes/linking.md)\n"),
    )
    repo.write(
        f"{prefix}concepts/other.md", page("Other", "See [[old-page#Usage]] and ![[old-page]].\n")
    )
    repo.write(
        f"{prefix}notes/linking.md",
        page(
            "Linking",
            "[[old-page|the page]] and [x](../concepts/old-page.md). In code: `[[old-page]]`.\n",
        ),
    )
    repo.commit("wiki")
    return repo, prefix


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def stage(repo: Repo, prefix: str, *extra: str) -> dict[str, object]:
    proc = run(repo, "mv", prefix + MV[0], prefix + MV[1], "--review", "--json", *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


def trailers(repo: Repo, rev: str) -> list[str]:
    return [
        line
        for line in repo.git("log", "-1", "--format=%(trailers:only,unfold)", rev).splitlines()
        if line
    ]


def test_mv_review_stages_one_candidate_shows_its_plan_and_approves_as_one(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    head = repo.git("rev-parse", "HEAD").strip()
    old, new = prefix + MV[0], prefix + MV[1]
    old_blob = repo.git("rev-parse", f"HEAD:{old}").strip()
    out = stage(repo, prefix)
    candidate = out["candidate"]
    assert isinstance(candidate, dict)
    # nothing on the branch or in the work tree moved
    assert repo.git("rev-parse", "HEAD").strip() == head and repo.git("status", "--porcelain") == ""
    linking = sorted(
        [f"{prefix}concepts/other.md", f"{prefix}notes/linking.md"]
        + ([] if prefix else ["index.md"])
    )
    lines = trailers(repo, candidate["branch"])
    assert lines[1] == "Llmwiki-Kind: move/1"
    assert lines[2:8] == [
        f"Llmwiki-Target: {old}",
        f"Llmwiki-Precondition: blob {old_blob}",
        "Llmwiki-Body-Digest: absent",
        f"Llmwiki-Target: {new}",
        "Llmwiki-Precondition: absent",
        lines[7],
    ]
    assert [line.split(": ", 1)[1] for line in lines[8::3][: len(linking)]] == linking
    assert lines[-2:] == [f"Llmwiki-Move-From: {old}", f"Llmwiki-Move-To: {new}"]
    changed = repo.git("diff", "--no-renames", "--name-only", head, candidate["commit"]).split()
    assert sorted(changed) == sorted([old, new, *linking])

    shown = run(repo, "review", "show", str(candidate["id"]))
    assert shown.returncode == 0, shown.stderr
    assert f"plan: move {old} → {new}" in shown.stdout
    assert (
        f"  {prefix}notes/linking.md:" in shown.stdout and ": old-page → new-page" in shown.stdout
    )
    assert "Approval would pass" in shown.stdout
    view = json.loads(run(repo, "review", "show", str(candidate["id"]), "--json").stdout)
    assert (
        view["plan"]["moves"] == [{"from": old, "to": new}]
        and view["plan"]["links"] == out["links"]
    )
    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert [(r["kind"], r["citationStatus"]) for r in listed] == [
        ("move/1", "0 newly broken, 0 broken before, 0 pending")
    ]

    done = run(repo, "review", "approve", str(candidate["id"]), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["commit"] == candidate["commit"]  # a fast-forward
    assert not (repo.root / old).exists() and (repo.root / new).is_file()
    text = (repo.root / f"{prefix}notes/linking.md").read_text()
    assert (
        "[[new-page|the page]] and [x](../concepts/new-page.md). In code: `[[old-page]]`." in text
    )
    other = (repo.root / f"{prefix}concepts/other.md").read_text()
    assert "[[new-page#Usage]] and ![[new-page]]" in other
    assert repo.git("status", "--porcelain") == ""
    assert run(repo, "check").returncode == 0
    if not prefix:  # the user's own home page: its link rewritten, byte for byte otherwise
        assert (
            repo.root / "index.md"
        ).read_bytes() == b"# My vault\r\n\r\nStart at [[new-page]].\r\n"
        assert (repo.root / "log.md").read_text() == "# My diary\n"


def test_dry_run_prints_the_plan_and_stages_nothing(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    proc = run(repo, "mv", prefix + MV[0], prefix + MV[1], "--review", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert f"plan: move {prefix + MV[0]} → {prefix + MV[1]}" in proc.stdout
    assert "Nothing was staged" in proc.stderr
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""


def test_a_linking_page_changed_meanwhile_refuses_with_a_restage_instruction(
    wiki: tuple[Repo, str],
) -> None:
    repo, prefix = wiki
    candidate = stage(repo, prefix)["candidate"]
    assert isinstance(candidate, dict)
    repo.write(
        f"{prefix}notes/linking.md", page("Linking", "[[old-page]], edited by a human meanwhile.\n")
    )
    human = repo.commit("human edit")
    proc = run(repo, "review", "approve", str(candidate["id"]))
    assert proc.returncode == 1
    assert f"{prefix}notes/linking.md changed since" in proc.stderr
    assert f"run `llmwiki mv {prefix + MV[0]} {prefix + MV[1]} --review` again" in proc.stderr
    assert repo.git("rev-parse", "HEAD").strip() == human and (repo.root / prefix / MV[0]).exists()
    assert repo.git("rev-parse", str(candidate["branch"])).strip() == candidate["commit"]


def test_a_new_link_to_the_old_name_meanwhile_refuses(wiki: tuple[Repo, str]) -> None:
    """A page written after staging links the old name: approving would break it."""
    repo, prefix = wiki
    candidate = stage(repo, prefix)["candidate"]
    assert isinstance(candidate, dict)
    repo.write(f"{prefix}notes/fresh.md", page("Fresh", "Also see [[old-page]].\n"))
    repo.commit("a new linking page")
    proc = run(repo, "review", "approve", str(candidate["id"]))
    assert (
        proc.returncode == 1 and "breaks 1 link" in proc.stderr and "--review` again" in proc.stderr
    ), proc.stderr


def test_target_appeared_meanwhile_refuses(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    candidate = stage(repo, prefix)["candidate"]
    assert isinstance(candidate, dict)
    repo.write(prefix + MV[1], page("Someone else's", "text\n"))
    repo.commit("taken")
    proc = run(repo, "review", "approve", str(candidate["id"]))
    assert proc.returncode == 1 and f"{prefix + MV[1]} now exists" in proc.stderr, proc.stderr


def _forge(repo: Repo, branch: str, change: str, prefix: str) -> None:
    """Rewrite the candidate's commit (same trailers) with a different tree or message."""
    commit = repo.git("rev-parse", branch).strip()
    repo.git("checkout", "-q", "--detach", commit)
    message = repo.git("log", "-1", "--format=%B", commit)
    if change == "extra":
        repo.write(f"{prefix}concepts/extra.md", page("Extra", "smuggled\n"))
    elif change == "symlink":
        os.unlink(repo.root / prefix / MV[1])
        os.symlink("other.md", repo.root / prefix / MV[1])
    elif change == "frontmatter":  # a linking page's frontmatter (outside the body digest) edited
        path = repo.root / prefix / "notes/linking.md"
        path.write_text(path.read_text().replace("title: Linking", "title: Smuggled"))
    elif change == "precondition":  # claims the page a human wrote meanwhile (a lost update)
        base = repo.git("rev-parse", f"{commit}~1:{prefix}concepts/other.md").strip()
        now = repo.git("rev-parse", f"main:{prefix}concepts/other.md").strip()
        assert base != now and f"Llmwiki-Precondition: blob {base}" in message
        message = message.replace(
            f"Llmwiki-Precondition: blob {base}", f"Llmwiki-Precondition: blob {now}"
        )
    repo.git("add", "-A")
    repo.git("commit", "-q", "--amend", "--allow-empty", "-m", message)
    forged = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    repo.git("update-ref", f"refs/heads/{branch}", forged)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ("extra", "touches-other-files"),
        ("symlink", "not-a-regular-file"),
        ("frontmatter", "plan-mismatch"),
        ("precondition", "plan-mismatch"),
    ],
)
def test_a_hostile_move_branch_is_refused(wiki: tuple[Repo, str], change: str, code: str) -> None:
    repo, prefix = wiki
    candidate = stage(repo, prefix)["candidate"]
    assert isinstance(candidate, dict)
    if change == "precondition":  # a human edits a linking page after staging
        path = repo.root / prefix / "concepts/other.md"
        path.write_text(path.read_text() + "A human's line, never to be lost.\n")
        repo.commit("human edit")
    head = repo.git("rev-parse", "HEAD").strip()
    _forge(repo, str(candidate["branch"]), change, prefix)
    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert listed[0]["citationStatus"] == "malformed", listed
    view = json.loads(run(repo, "review", "show", str(candidate["id"]), "--json").stdout)
    assert view["verdict"]["code"] == code, view["verdict"]
    proc = run(repo, "review", "approve", str(candidate["id"]))
    assert proc.returncode == 1, proc.stdout
    assert repo.git("rev-parse", "HEAD").strip() == head and repo.git("status", "--porcelain") == ""


@pytest.mark.parametrize("point", ["journal", "file:2", "refs"])
def test_kill_9_while_approving_a_move_leaves_all_of_it_or_none(
    wiki: tuple[Repo, str], point: str
) -> None:
    repo, prefix = wiki
    candidate = stage(repo, prefix)["candidate"]
    assert isinstance(candidate, dict)
    head = repo.git("rev-parse", "HEAD").strip()
    before = {p: (repo.root / p).read_bytes() for p in repo.git("ls-files").split()}
    killed = repo.llmwiki_process(
        "review", "approve", str(candidate["id"]), env={**FAST, "LLMWIKI_TEST_KILL_AT": point}
    )
    assert killed.returncode == -9, killed.stderr
    after = run(repo, "review", "list")  # any command finishes or rolls back the write first
    assert after.returncode == 0 and "Traceback" not in after.stderr, after.stderr
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=repo.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stderr
    if (
        repo.git("rev-parse", "HEAD").strip() == head
    ):  # killed before the branch moved (or rolled back)
        assert {p: (repo.root / p).read_bytes() for p in repo.git("ls-files").split()} == before
        assert (
            run(repo, "review", "approve", str(candidate["id"])).returncode == 0
        )  # and it can be approved again
    else:
        assert "completed an interrupted approval" in after.stderr, after.stderr
    changed = repo.git(
        "diff", "--no-renames", "--name-only", head, str(candidate["commit"])
    ).split()
    for path in changed:  # every file of the move, as staged
        staged = subprocess.run(
            ["git", "cat-file", "-p", f"{candidate['commit']}:{path}"],
            cwd=repo.root,
            capture_output=True,
        ).stdout
        assert (
            (repo.root / path).read_bytes() == staged if staged else not (repo.root / path).exists()
        )
    assert repo.git("branch", "--list", "llmwiki/review/*") == ""
    assert run(repo, "check").returncode == 0


def test_links_broken_before_in_the_moved_page_do_not_refuse_it(repo: Repo) -> None:
    """The moved page's own broken links go with it: broken before, not newly broken (Foam's
    templates.md links images the corpus does not hold; approval refused the move)."""
    repo.write(
        "wiki/concepts/old-page.md", page("Old", "[[nowhere]] ![shot](../img/missing.png)\n")
    )
    repo.write("wiki/concepts/b.md", page("B", "[[old-page]]\n"))
    repo.commit("wiki")
    proc = run(
        repo,
        "mv",
        "wiki/concepts/old-page.md",
        "wiki/concepts/sub/new-page.md",
        "--review",
        "--json",
    )
    candidate = json.loads(proc.stdout)["candidate"]
    view = json.loads(run(repo, "review", "show", candidate["id"], "--json").stdout)
    assert view["verdict"]["ok"] is True, view["verdict"]["message"]
    assert sorted(p["code"] for p in view["verdict"]["details"]["brokenBefore"]) == [
        "broken-link",
        "broken-relative-link",
    ]
    assert run(repo, "review", "approve", candidate["id"]).returncode == 0


def test_llmwikis_generated_index_is_left_to_the_approval(repo: Repo) -> None:
    """The generated table of contents links the moved page: it is not in the candidate, and
    the approval regenerates it from the tree it commits."""
    repo.write("wiki/concepts/old-page.md", page("Old Page", "text\n"))
    repo.write("wiki/concepts/b.md", page("B", "[[old-page]]\n"))
    run(repo, "index")
    repo.write(".gitignore", ".llmwiki/\n")
    repo.commit("wiki")
    assert "[[old-page|Old Page]]" in (repo.root / "wiki/index.md").read_text()
    proc = run(
        repo, "mv", "wiki/concepts/old-page.md", "wiki/concepts/new-page.md", "--review", "--json"
    )
    out = json.loads(proc.stdout)
    assert "wiki/index.md is llmwiki's generated file: approval regenerates it" in out["notes"]
    assert [p["target"] for p in out["candidate"]["pages"]] == [
        "wiki/concepts/old-page.md",
        "wiki/concepts/new-page.md",
        "wiki/concepts/b.md",
    ]
    assert run(repo, "review", "approve", out["candidate"]["id"]).returncode == 0
    assert "[[new-page|Old Page]]" in repo.git("show", "HEAD:wiki/index.md")
    assert repo.git("status", "--porcelain") == "" and run(repo, "check").returncode == 0
