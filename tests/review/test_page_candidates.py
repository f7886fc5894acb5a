"""Page edits as review candidates (kind page/1): `llmwiki review stage`, approval under the
generic policy, lost updates, links the edit breaks elsewhere. Real git repositories and the
real CLI in subprocesses, on both layouts: a `wiki/` folder, and a vault whose pages sit at
the repository root next to the user's own index.md and log.md."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from llmwiki_git.review.stagepage import PageEdit, stage_pages
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = layout_prefix(repo, request.param)
    repo.write(f"{prefix}concepts/alpha.md", page("Alpha", "Alpha is the first letter."))
    repo.write(f"{prefix}concepts/beta.md", page("Beta", "Beta follows [[alpha]]."))
    repo.write(f"{prefix}concepts/gamma.md", page("Gamma", "Gamma stands alone."))
    repo.commit("wiki")
    return repo, prefix


def run(repo: Repo, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``llmwiki ARGS`` in this process, or (``process``) in a real one: the end-to-end test."""
    return (repo.llmwiki_process if process else repo.llmwiki)(*args, env=FAST)


def staged_ids(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert proc.returncode == 0, proc.stderr
    return {s["target"]: s["id"] for s in json.loads(proc.stdout)["staged"]}


def trailers(repo: Repo, rev: str) -> dict[str, str]:
    out = repo.git("log", "-1", "--format=%(trailers:only,unfold)", rev)
    return dict(line.split(": ", 1) for line in out.splitlines() if line)


def blob(repo: Repo, rev: str, path: str) -> str:
    return repo.git("rev-parse", f"{rev}:{path}").strip()


def test_stage_and_approve_a_new_an_edited_and_a_deleted_page(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    alpha, gamma, delta = (f"{prefix}concepts/{n}.md" for n in ("alpha", "gamma", "delta"))
    old_alpha, old_gamma = blob(repo, "HEAD", alpha), blob(repo, "HEAD", gamma)
    repo.write(alpha, page("Alpha", "Alpha is the first letter of the Greek alphabet."))
    repo.write(delta, page("Delta", "Delta comes after [[gamma]]... once approved."))
    (repo.root / gamma).unlink()
    base = repo.git("rev-parse", "HEAD").strip()
    ids = staged_ids(
        run(repo, "review", "stage", "--json", process=True)
    )  # default: every changed page
    assert set(ids) == {alpha, gamma, delta}
    assert repo.git("rev-parse", "HEAD").strip() == base
    assert sorted(repo.git("status", "--porcelain").splitlines()) == sorted(
        [f" M {alpha}", f" D {gamma}", f"?? {delta}"]
    )
    expected = {alpha: f"blob {old_alpha}", gamma: f"blob {old_gamma}", delta: "absent"}
    for target, cid in ids.items():
        t = trailers(repo, f"llmwiki/review/{cid}")
        assert (
            t["Llmwiki-Kind"] == "page/1"
            and t["Llmwiki-Target"] == target
            and t["Llmwiki-Base"] == base
        )
        assert t["Llmwiki-Precondition"] == expected[target]
        assert repo.git("rev-parse", f"llmwiki/review/{cid}~1").strip() == base
    assert trailers(repo, f"llmwiki/review/{ids[gamma]}")["Llmwiki-Body-Digest"] == "absent"
    assert re.fullmatch(
        r"sha256:[0-9a-f]{64}",
        trailers(repo, f"llmwiki/review/{ids[alpha]}")["Llmwiki-Body-Digest"],
    )
    listed = json.loads(run(repo, "review", "list", "--json").stdout)["candidates"]
    assert {row["kind"] for row in listed} == {"page/1"}

    # delta links [[gamma]]: approving delta first makes gamma's deletion break a link
    for cid in (ids[delta], ids[alpha]):
        proc = run(repo, "review", "approve", cid)
        assert proc.returncode == 0, proc.stderr
    refused = run(repo, "review", "approve", ids[gamma])
    assert (
        refused.returncode == 1 and f"{delta}:" in refused.stderr and "[[gamma]]" in refused.stderr
    )
    repo.write(delta, page("Delta", "Delta comes after gamma."))
    ids2 = staged_ids(run(repo, "review", "stage", delta, "--json", "--restore"))
    assert run(repo, "review", "approve", ids2[delta]).returncode == 0
    proc = run(repo, "review", "approve", ids[gamma])  # replayed on the new tip: a deletion
    assert proc.returncode == 0, proc.stderr
    assert repo.git("ls-tree", "HEAD", "--", gamma) == "" and not (repo.root / gamma).exists()
    assert "Greek alphabet" in repo.git("show", f"HEAD:{alpha}")
    assert repo.git("status", "--porcelain") == ""  # the kept work-tree edits are what was approved
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""
    if not prefix:  # the user's own index.md and log.md are never rewritten
        assert repo.git("show", "HEAD:index.md").startswith("# My vault")
        assert repo.git("show", "HEAD:log.md") == "# My diary\n"


def test_lost_update_is_refused_with_a_three_way_view(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    beta = f"{prefix}concepts/beta.md"
    read_commit = repo.git("rev-parse", "HEAD").strip()
    repo.write(beta, page("Beta", "Beta follows [[alpha]]. EDITOR-LINE"))
    cid = staged_ids(run(repo, "review", "stage", beta, "--restore", "--json"))[beta]
    assert repo.git("status", "--porcelain") == ""  # --restore put the work tree back to HEAD
    repo.write(beta, page("Beta", "Beta follows [[alpha]]. HUMAN-B-LINE"))
    tip = repo.commit("B: a human edit meanwhile")
    refused = run(repo, "review", "approve", cid)
    assert refused.returncode == 1
    assert "lost update refused" in refused.stderr
    for part in (
        "as the editor read it",
        "now",
        "as proposed",
        "+Beta follows [[alpha]]. HUMAN-B-LINE",
        "+Beta follows [[alpha]]. EDITOR-LINE",
    ):
        assert part in refused.stderr, refused.stderr
    assert (
        repo.git("rev-parse", "HEAD").strip() == tip
        and "HUMAN-B-LINE" in (repo.root / beta).read_text()
    )
    shown = run(repo, "review", "show", cid)
    assert (
        "=== what changed since the editor read it ===" in shown.stdout
        and "HUMAN-B-LINE" in shown.stdout
    )
    assert "Approval would be refused (target-changed)" in shown.stdout
    assert repo.git("rev-parse", "--verify", f"llmwiki/review/{cid}").strip()  # kept

    # --from: the editor read an older version than HEAD
    repo.write(beta, page("Beta", "Beta follows [[alpha]]. HUMAN-B-LINE and a fix"))
    old = staged_ids(run(repo, "review", "stage", beta, "--from", read_commit, "--json"))[beta]
    assert (
        trailers(repo, f"llmwiki/review/{old}")["Llmwiki-Precondition"]
        == f"blob {blob(repo, read_commit, beta)}"
    )
    assert run(repo, "review", "approve", old).returncode == 1
    fresh = staged_ids(run(repo, "review", "stage", beta, "--json"))[beta]  # from HEAD: passes
    assert run(repo, "review", "approve", fresh).returncode == 0


def test_an_edit_breaking_a_link_in_an_untouched_page_is_refused(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    alpha, beta, gamma = (f"{prefix}concepts/{n}.md" for n in ("alpha", "beta", "gamma"))
    (repo.root / alpha).unlink()  # beta links [[alpha]]
    cid = staged_ids(run(repo, "review", "stage", alpha, "--json", "--restore"))[alpha]
    before = repo.git("rev-parse", "HEAD").strip()
    refused = run(repo, "review", "approve", cid)
    assert (
        refused.returncode == 1
        and f"{beta}:" in refused.stderr
        and "broken link [[alpha]]" in refused.stderr
    )
    assert repo.git("rev-parse", "HEAD").strip() == before and (repo.root / alpha).exists()
    view = json.loads(run(repo, "review", "show", cid, "--json").stdout)
    assert (
        view["verdict"]["code"] == "broken"
        and view["verdict"]["details"]["newlyBroken"][0]["path"] == beta
    )

    # a link broken before is reported, not blocking; a pending link (its candidate exists) passes
    repo.write(gamma, page("Gamma", "Gamma links [[nowhere]]."))
    repo.commit("an old broken link")
    new = f"{prefix}concepts/epsilon.md"
    repo.write(new, page("Epsilon", "New."))
    pending_id = staged_ids(run(repo, "review", "stage", new, "--json", "--restore"))[new]
    repo.write(gamma, page("Gamma", "Gamma links [[nowhere]] and [[epsilon]]."))
    edit = staged_ids(run(repo, "review", "stage", gamma, "--json", "--restore"))[gamma]
    view = json.loads(run(repo, "review", "show", edit, "--json").stdout)
    assert view["verdict"]["ok"], view["verdict"]
    assert [p["target"] for p in view["verdict"]["details"]["brokenBefore"]] == ["nowhere"]
    assert [p["target"] for p in view["verdict"]["details"]["pendingLinks"]] == ["epsilon"]
    assert (
        run(repo, "review", "reject", pending_id).returncode == 0
    )  # no candidate: the link is broken now
    refused = run(repo, "review", "approve", edit)
    assert refused.returncode == 1 and "[[epsilon]]" in refused.stderr


def test_two_agents_edit_one_page_from_the_same_base(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    alpha = f"{prefix}concepts/alpha.md"
    read = blob(repo, "HEAD", alpha)
    ws = Workspace.open(repo.root)
    (first,) = stage_pages(ws, [PageEdit(alpha, page("Alpha", "Agent one's rewrite."), read)])
    (second,) = stage_pages(ws, [PageEdit(alpha, page("Alpha", "Agent two's rewrite."), read)])
    assert first.precondition == second.precondition == f"blob {read}"
    assert (
        repo.git("status", "--porcelain") == ""
    )  # staged with plumbing: the work tree is untouched
    assert run(repo, "review", "approve", first.candidate_id).returncode == 0
    refused = run(repo, "review", "approve", second.candidate_id)
    assert (
        refused.returncode == 1
        and "lost update refused" in refused.stderr
        and "Agent two" in refused.stderr
    )
    assert "Agent one" in repo.git("show", f"HEAD:{alpha}")
    assert (
        repo.git("rev-parse", "--verify", f"llmwiki/review/{second.candidate_id}").strip()
        == second.commit
    )
    assert repo.git("merge-base", "--is-ancestor", first.commit, "HEAD", check=False) == ""


@pytest.mark.parametrize(
    "target,why",
    [
        ("README.md", "not a .md page under the wiki root"),
        ("concepts/../../x.md", "hidden folder or has an unsafe name"),
        (".git/hooks/x.md", "hidden folder"),
        ("index.md", "generated table of contents"),
    ],
)
def test_stage_refuses_targets_outside_the_wiki(
    wiki: tuple[Repo, str], target: str, why: str
) -> None:
    repo, prefix = wiki
    if not prefix and target == "README.md":
        target, why = "notes.txt", "not a .md page"
    full = target if target.startswith((".", "README", "notes")) else prefix + target
    ws = Workspace.open(repo.root)
    with pytest.raises(Exception) as raised:
        stage_pages(ws, [PageEdit(full, "# x\n")])
    assert why in str(raised.value)
    assert repo.git("for-each-ref", "refs/heads/llmwiki/review/") == ""


def test_a_link_to_a_proposed_page_with_a_spaced_name_is_pending(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    new, gamma = f"{prefix}concepts/Zeta Page.md", f"{prefix}concepts/gamma.md"
    repo.write(new, page("Zeta Page", "New."))
    zeta = staged_ids(run(repo, "review", "stage", new, "--json", "--restore"))[new]
    repo.write(gamma, page("Gamma", "Gamma links [[zeta page]]."))
    edit = staged_ids(run(repo, "review", "stage", gamma, "--json", "--restore"))[gamma]
    view = json.loads(run(repo, "review", "show", edit, "--json").stdout)
    assert view["verdict"]["ok"] and [
        p["target"] for p in view["verdict"]["details"]["pendingLinks"]
    ] == ["zeta-page"]
    assert (
        run(repo, "review", "approve", edit).returncode == 0
    )  # pending passes while its candidate exists
    assert run(repo, "review", "approve", zeta).returncode == 0
    assert repo.llmwiki("check", env=FAST).returncode == 0


def test_list_shows_the_kind_and_show_asks_no_question_of_a_page_edit(
    wiki: tuple[Repo, str],
) -> None:
    """Regression (issue 23): plain `review list` had no kind column (docs: id, kind, target,
    age, status, base); `review show` of a page edit printed an empty `question:` line."""
    repo, prefix = wiki
    beta = f"{prefix}concepts/beta.md"
    repo.write(beta, page("Beta", "Beta follows [[alpha]] closely."))
    cid = staged_ids(run(repo, "review", "stage", beta, "--restore", "--json"))[beta]
    row = run(repo, "review", "list").stdout.splitlines()[0].split("  ")
    assert row[:3] == [cid, "page/1", beta], row
    shown = run(repo, "review", "show", cid).stdout.splitlines()
    assert "kind: page/1" in shown and not any(line.startswith("question:") for line in shown), (
        shown
    )
