"""`llmwiki check` end to end: real git repositories, the CLI in fresh processes."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

import pytest

from llmwiki_git.checks.cache import stored

from ..conftest import Repo, page


def problems(repo: Repo, *args: str) -> tuple[int, list[dict]]:
    proc = repo.llmwiki("check", "--json", *args)
    return proc.returncode, json.loads(proc.stdout)["problems"]


def seed(repo: Repo) -> None:
    repo.write(
        "wiki/concepts/alpha.md", page("Alpha", "# Alpha\n\nLinks to [[beta]].\n\n## Usage\n")
    )
    repo.write("wiki/concepts/beta.md", page("Beta", "Back to [[alpha#usage]].\n"))
    repo.commit("seed")


def test_clean_wiki_exits_0_with_summary(repo: Repo) -> None:
    seed(repo)
    proc = repo.llmwiki("check")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "2 pages checked: no broken links" in proc.stderr


def test_broken_link_text_format_and_exit_1(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", page("Gamma", "See [[Nowhere]] and [[alpha#No Such]].\n"))
    proc = repo.llmwiki_process("check")
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "wiki/concepts/gamma.md:4:5: broken link [[Nowhere]]",
        'wiki/concepts/gamma.md:4:21: warning: missing heading [[alpha#No Such]]: no heading "No Such" in concepts/alpha',
    ]
    assert "1 broken link" in proc.stderr


def test_json_envelope(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[nope|label]]\n")
    proc = repo.llmwiki("check", "--json")
    data = json.loads(proc.stdout)
    assert data == {
        "version": 1,
        "checked": 3,
        "problems": [
            {
                "path": "wiki/concepts/gamma.md",
                "line": 1,
                "col": 1,
                "code": "broken-link",
                "severity": "error",
                "target": "nope",
                "message": "broken link [[nope|label]]",
            }
        ],
    }
    assert proc.returncode == 1


def test_warnings_alone_exit_0(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[alpha#missing-heading]]\n")
    code, found = problems(repo)
    assert code == 0 and [p["code"] for p in found] == ["missing-heading"]


def test_staged_sees_index_not_work_tree(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[broken-in-index]]\n")
    repo.git("add", "wiki/concepts/gamma.md")
    repo.write("wiki/concepts/gamma.md", "fixed on disk but not staged: [[alpha]]\n")
    code, found = problems(repo, "--staged")
    assert code == 1 and [p["target"] for p in found] == ["broken-in-index"]
    code, found = problems(repo)
    assert code == 0 and found == []


def test_rev_checks_a_commit(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/beta.md", "[[gone]]\n")
    bad = repo.commit("break")
    repo.write("wiki/concepts/beta.md", "[[alpha]]\n")
    repo.commit("fix")
    assert problems(repo)[0] == 0
    code, found = problems(repo, "--rev", bad)
    assert code == 1 and found[0]["target"] == "gone"


def test_base_head_reports_only_newly_broken_including_renames(repo: Repo) -> None:
    repo.write("wiki/concepts/alpha.md", "[[old-broken]] and [[beta]]\n")
    repo.write("wiki/concepts/beta.md", "beta\n")
    repo.write("wiki/concepts/untouched.md", "I link to [[beta]] too.\n")
    base = repo.commit("base")
    repo.git("mv", "wiki/concepts/beta.md", "wiki/concepts/beta-renamed.md")
    repo.write("wiki/concepts/alpha.md", "moved down\n\n[[old-broken]] and [[beta-renamed]]\n")
    head = repo.commit("rename")
    code, found = problems(repo, "--base", base, "--head", head)
    assert code == 1
    assert [(p["path"], p["line"], p["target"]) for p in found] == [
        ("wiki/concepts/untouched.md", 1, "beta")
    ]
    code, found = problems(repo, "--base", head, "--head", head)
    assert (code, found) == (0, [])


def test_staged_base_head_on_first_commit(repo: Repo) -> None:
    repo.write("wiki/concepts/a.md", "[[b]]\n")
    repo.git("add", "-A")
    code, found = problems(repo, "--staged", "--base", "HEAD")
    assert code == 1 and found[0]["target"] == "b"


def test_usage_errors_exit_2(repo: Repo) -> None:
    seed(repo)
    assert repo.llmwiki("check", "--staged", "--rev", "HEAD").returncode == 2
    assert repo.llmwiki("check", "--head", "HEAD").returncode == 2
    proc = repo.llmwiki("check", "--rev", "no-such-branch")
    assert proc.returncode == 2 and "unknown revision 'no-such-branch'" in proc.stderr
    assert repo.llmwiki("check", "--format", "xml").returncode == 2


def test_staged_outside_git_is_a_clear_error(tmp_path) -> None:
    folder = tmp_path / "plain"
    (folder / "wiki").mkdir(parents=True)
    (folder / "wiki" / "a.md").write_text("[[b]]\n")
    r = Repo(folder)
    proc = r.llmwiki("check")
    assert proc.returncode == 1 and "wiki/a.md:1:1: broken link [[b]]" in proc.stdout
    proc = r.llmwiki("check", "--staged")
    assert proc.returncode == 2 and "needs a git repository" in proc.stderr


def test_github_format_annotations_summary_outputs(repo: Repo, tmp_path) -> None:
    seed(repo)
    lines = "\n".join(f"[[missing-{i}]]" for i in range(12))
    repo.write("wiki/concepts/many.md", lines + "\n")
    repo.write("wiki/concepts/odd, name.md", "[[50%: off]]\n")
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    proc = repo.llmwiki_process(
        "check",
        "--format",
        "github",
        env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)},
    )
    assert proc.returncode == 1
    annotations = proc.stdout.splitlines()
    assert len([a for a in annotations if "many.md" in a]) == 10  # at most 10 per file
    assert (
        annotations[0]
        == "::error file=wiki/concepts/many.md,line=1,col=1,title=llmwiki broken-link::broken link [[missing-0]]"
    )
    assert (
        "::error file=wiki/concepts/odd%2C name.md,line=1,col=1,title=llmwiki broken-link::broken link [[50%25: off]]"
        in annotations
    )
    table = summary.read_text()
    assert table.count("| <code>wiki/concepts/many.md</code> |") == 12  # the summary has them all
    assert output.read_text() == "broken=13\nwarnings=0\nchecked=4\n"


def test_cache_gives_same_answer_and_lives_in_git_dir(repo: Repo) -> None:
    seed(repo)
    repo.write("wiki/concepts/gamma.md", "[[nope]]\n")
    first = problems(repo)
    assert (repo.root / ".git" / "llmwiki" / "check" / "scans.marshal").is_file()
    assert repo.git("status", "--porcelain") == "?? wiki/concepts/gamma.md\n"
    assert problems(repo) == first == problems(repo, "--no-cache")
    (repo.root / ".git" / "llmwiki" / "check" / "scans.marshal").write_bytes(b"garbage")
    assert problems(repo) == first


def test_cache_survives_runs_answered_from_the_tree_cache(repo: Repo) -> None:
    """Regression: scans read straight from the cache were not marked used, and a run
    answered from the tree cache used none, so saving pruned them: the next hook run
    rescanned every page. Pruning only starts above 1,000 records, hence 1,100 pages."""

    for i in range(1100):
        repo.write(f"wiki/concepts/p{i}.md", f"# P{i}\n[[p{(i + 1) % 1100}]]\n")
    repo.commit("many pages")
    for _ in range(2):
        assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 0
    repo.write("wiki/concepts/p5.md", "# P5\n[[p6]] and [[new-broken]]\n")
    repo.git("add", "-A")
    proc = repo.llmwiki("check", "--staged", "--base", "HEAD")
    assert proc.returncode == 1 and "new-broken" in proc.stdout
    payload = stored(repo.root / ".git" / "llmwiki" / "check" / "scans.marshal")
    assert len(payload[1]) >= 1100  # every page's scan is still cached
    repo.write("wiki/concepts/p7.md", "# P7\n[[p8]] and [[another-broken]]\n")
    repo.git("add", "-A")
    assert repo.llmwiki("check", "--staged").returncode == 1
    payload = stored(repo.root / ".git" / "llmwiki" / "check" / "scans.marshal")
    assert len(payload[1]) >= 1100


def test_missing_wiki_dir_is_a_usage_error(repo: Repo) -> None:
    """It used to report "0 pages checked" and pass, hiding a typo in CI."""
    seed(repo)
    proc = repo.llmwiki("--wiki-dir", "wikki", "check")
    assert proc.returncode == 2 and "the wiki folder 'wikki' does not exist" in proc.stderr


@pytest.mark.parametrize(
    "edit",
    [
        "# Alpha\n\nLinks to [[beta]] and [[brand-new-missing]].\n\n## Usage\n",  # new broken target
        "# Alpha\n\nLinks to [[beta#nope]] and [[alpha#usage]].\n\n## Usage\n",  # anchors, one missing
        "# Alpha\n\nLinks to [[Beta|the beta page]] and [[#usage]] [[#gone]].\n\n## Usage\n",  # label, self anchors
        "# Alpha\n\n[[]] and ![[missing.png]] and [[gamma]].\n\n## Usage\n",  # empty, attachment, existing page
        "# Alpha\n\nno links now\n\n## Renamed heading\n",  # names change: full path
        "# Alpha\n\n[[concepts/beta]] [[GAMMA#nope]] [[Beta#^blk]] [[nowhere/beta]]\n\n## Usage\n",  # new texts, known names
    ],
)
def test_staged_delta_matches_a_full_check(repo: Repo, edit: str) -> None:
    """The hook's fast path (HEAD's cached result + the changed pages) must say exactly what
    a full, uncached check of the index says."""
    seed(repo)
    repo.write("wiki/concepts/gamma.md", page("Gamma", "[[alpha#usage]] and [[old-broken]]\n"))
    repo.commit("more")
    assert repo.llmwiki("check", "--rev", "HEAD").returncode in (
        0,
        1,
    )  # HEAD's tree result is cached
    repo.write("wiki/concepts/alpha.md", page("Alpha", edit))
    repo.git("add", "-A")
    fast = problems(repo, "--staged")
    full = problems(repo, "--staged", "--no-cache")
    assert fast == full
    repo.write("wiki/concepts/alpha.md", page("Alpha", edit + "\nmore [[another-missing]]\n"))
    repo.git("add", "-A")  # a second staged edit: compared with the previous index's tree
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")
    assert problems(repo, "--staged", "--base", "HEAD") == problems(
        repo, "--staged", "--base", "HEAD", "--no-cache"
    )


def _branch_switch_wiki(repo: Repo, root: str) -> None:
    """Two branches whose pages differ by additions, deletions, a rename, changed aliases
    and headings and an attachment: every way a diff can change what a link means."""
    at = f"{root}/" if root else ""
    if not root:
        repo.write("index.md", "# My own index\n\n[[alpha]] [[moved]]\n")
    repo.write(
        f"{at}concepts/alpha.md",
        page("Alpha", "# Alpha\n\n[[beta]] [[gone]] [[moved#usage]] ![[pic.png]]\n\n## Usage\n"),
    )
    repo.write(
        f"{at}concepts/beta.md",
        page("Beta", "[[alpha#usage]] [[the-alias]] [[fresh]]\n", aliases=["Old Name"]),
    )
    repo.write(f"{at}concepts/gone.md", page("Gone", "[[alpha]]\n"))
    repo.write(f"{at}concepts/moved.md", page("Moved", "## Usage\n[[old-name]]\n"))
    repo.write(f"{at}notes/other.md", "[[beta]] [[gone]] [[never]]\n")
    repo.commit("main wiki")
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", f"{at}concepts/gone.md")
    repo.git("mv", f"{at}concepts/moved.md", f"{at}concepts/moved-away.md")
    repo.write(
        f"{at}concepts/beta.md",
        page("Beta", "[[alpha#usage]] [[the-alias]] [[fresh]]\n", aliases=["The Alias"]),
    )
    repo.write(f"{at}concepts/fresh.md", page("Fresh", "# Fresh\n[[moved-away#usage]] [[gone]]\n"))
    repo.write(f"{at}pic.png", b"\x89PNG")
    repo.commit("feature wiki")
    repo.git("checkout", "-q", "-")


@pytest.mark.parametrize("root", ["wiki", ""])
def test_delta_after_a_branch_switch_matches_a_full_check(repo: Repo, root: str) -> None:
    """The first commit after a branch switch or pull (HEAD never checked) derives HEAD and
    the index from the tree checked last; it must say what an uncached check says."""
    _branch_switch_wiki(repo, root)
    at = f"{root}/" if root else ""
    assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 0  # caches main's tree
    for branch in ("feature", "-"):
        repo.git("checkout", "-q", branch)
        assert problems(repo, "--rev", "HEAD") == problems(repo, "--rev", "HEAD", "--no-cache")
        repo.write(
            f"{at}notes/other.md",
            f"[[beta]] [[gone]] [[never]] [[alpha#usage]] [[fresh]] {branch}\n",
        )
        repo.git("add", "-A")
        assert problems(repo, "--staged", "--base", "HEAD") == problems(
            repo, "--staged", "--base", "HEAD", "--no-cache"
        )
        assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")
        repo.git("checkout", "-q", "--", ".")
        repo.git("reset", "-q", "--hard")


def test_delta_sees_a_staged_deletion_and_new_page(repo: Repo) -> None:
    """A staged delete and add (not only modifications) are derived, not fully rechecked,
    and still report the links they break or mend."""
    _branch_switch_wiki(repo, "wiki")
    assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 0
    repo.git("rm", "-q", "wiki/concepts/beta.md")
    repo.write("wiki/concepts/never.md", "# Never\n")
    repo.git("add", "-A")
    fast = problems(repo, "--staged", "--base", "HEAD")
    assert fast == problems(repo, "--staged", "--base", "HEAD", "--no-cache")
    assert {p["target"] for p in fast[1]} == {"beta", "old-name"}  # its page and its alias
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")


def test_parallel_cold_scan_says_what_a_serial_scan_says(repo: Repo) -> None:
    """A cold check of 400+ pages scans them in worker processes; the report must be the
    serial scan's, byte for byte (links, fenced code, anchors, frontmatter issues)."""
    for i in range(450):
        body = f"# P{i}\n\n[[p{(i + 1) % 450}#p{(i + 1) % 450}]] [[gone-{i % 7}]]\n\n```\n[[in-code-{i}]]\n```\n"
        repo.write(
            f"wiki/concepts/p{i}.md", body if i % 50 else f"---\ntitle: [unclosed\n---\n{body}"
        )
    repo.commit("many pages")
    parallel = repo.llmwiki("check", "--no-cache", "--json")
    serial = repo.llmwiki("check", "--no-cache", "--json", env={"LLMWIKI_SERIAL_SCAN": "1"})
    assert parallel.returncode == serial.returncode == 1
    assert parallel.stdout == serial.stdout
    assert json.loads(parallel.stdout)["checked"] == 450


def test_facts_files_are_pruned_and_the_old_layout_removed(repo: Repo) -> None:
    """Facts are one file per names fingerprint, the last three kept; the files of the
    layouts before (4.6 MB on 10,000 pages) are deleted, not left behind."""
    seed(repo)
    old = repo.root / ".git" / "llmwiki"
    cache = old / "check"
    old.mkdir(parents=True, exist_ok=True)
    for name in (
        "facts-cache-v1.marshal",
        "scan-cache-v1.marshal",
        "tree-cache-v2.marshal",
        "facts-v2-abc.marshal",
    ):
        (old / name).write_bytes(b"old layout")
    for i in range(5):  # each commit adds a page: a new names fingerprint
        repo.write(f"wiki/concepts/extra{i}.md", f"# Extra {i}\n[[alpha]]\n")
        repo.commit(f"extra {i}")
        (cache / "trees.marshal").unlink(
            missing_ok=True
        )  # a full check (a derived tree stores a delta)
        assert repo.llmwiki("check", "--rev", "HEAD").returncode == 0
    assert sorted(p.name for p in old.iterdir()) == ["check"]
    assert len(list(cache.glob("facts-*.marshal"))) == 3


def test_the_engine_looks_for_candidates_where_they_are() -> None:
    from llmwiki_git.checks.engine import CANDIDATE_REFS
    from llmwiki_git.publication.candidates import PREFIX

    assert CANDIDATE_REFS == PREFIX


@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_link_added_without_changing_names_is_rechecked_when_its_page_appears(
    repo: Repo, root: str
) -> None:
    """Regression: a tree derived with the same names fingerprint as its base did not store
    the links its changed pages added, so when the page such a link names was created
    later, the hook kept reporting the link as broken (a full check said it was fine)."""
    folder = f"{root}/concepts" if root else "concepts"
    repo.write(f"{folder}/a.md", "# A\n[[b]]\n")
    repo.write(f"{folder}/b.md", "# B\n")
    repo.commit("seed")
    assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 0
    repo.write(f"{folder}/b.md", "# B\n[[q]]\n")  # a new link, no name changes
    repo.git("add", "-A")
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")
    repo.git("commit", "-q", "--no-verify", "-m", "link to q")
    repo.write(f"{folder}/q.md", "# Q\n")  # now q exists
    repo.git("add", "-A")
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache") == (0, [])
    assert problems(repo, "--staged", "--base", "HEAD") == (0, [])


def _empty_problem_lists(path: Path) -> None:
    """Edit a cache file the way a crafted one would: every recorded problem list emptied,
    nothing else changed (the layout before issue 22 was ``(version, *maps)``; now
    ``(version, digest, marshalled maps)``, the digest left as llmwiki wrote it)."""
    outer = marshal.loads(path.read_bytes())
    checked = len(outer) == 3 and isinstance(outer[2], bytes)
    maps = list(marshal.loads(outer[2]) if checked else outer[1:])
    if path.name == "trees.marshal":
        maps[0] = {key: (r[0], ()) + tuple(r[2:]) for key, r in maps[0].items()}
    else:  # scans.marshal: (scans by blob, page problems by key)
        maps[1] = {key: () for key in maps[1]}
    body = tuple(maps)
    path.write_bytes(
        marshal.dumps((outer[0], outer[1], marshal.dumps(body)) if checked else (outer[0], *body))
    )


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_a_cache_edited_after_llmwiki_wrote_it_is_discarded(repo: Repo, prefix: str) -> None:
    """Issue 22: a crafted check cache under .git/llmwiki whose problem lists were emptied
    made `check --staged` pass; a record whose content no longer matches what was written
    under its key is never used."""
    if not prefix:
        repo.write("index.md", "# My vault\n")
    repo.write(f"{prefix}concepts/a.md", page("A", "See [[b]]."))
    repo.write(f"{prefix}concepts/b.md", page("B", "Bee."))
    repo.commit("seed")
    repo.write(f"{prefix}concepts/c.md", page("C", "See [[nowhere]]."))
    repo.git("add", "-A")
    assert repo.llmwiki("check", "--staged", "--base", "HEAD").returncode == 1
    folder = repo.root / ".git" / "llmwiki" / "check"
    for name in ("trees.marshal", "scans.marshal"):
        _empty_problem_lists(folder / name)
    again = repo.llmwiki("check", "--staged", "--base", "HEAD")
    assert again.returncode == 1 and "broken link [[nowhere]]" in again.stdout, (
        again.stdout + again.stderr
    )
    assert repo.llmwiki("check").returncode == 1


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_the_hook_counts_pages_it_cannot_check_apart_from_broken_links(
    repo: Repo, prefix: str
) -> None:
    """Regression (issue 23): the hook said "4 broken links new" for two broken links and two
    pages it could not check, and listed binary.md twice (the warning and the refusal)."""
    if not prefix:
        repo.write("index.md", "# Home\n\n[[a]]\n")
    repo.write(f"{prefix}a.md", "# A\n\n[[b]]\n")
    repo.write(f"{prefix}b.md", "# B\n")
    repo.commit("wiki")
    repo.write(f"{prefix}c.md", "# C\n\n[[missing-1]] [[missing-2]]\n")
    repo.write(f"{prefix}binary.md", b"bin\x00ary [[x]]")
    repo.write(f"{prefix}latin.md", "caf\xe9 [[b]]\n".encode("latin-1"))
    repo.git("add", "-A")
    proc = repo.llmwiki("check", "--staged", "--base", "HEAD")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        f"{prefix}binary.md",
        f"{prefix}c.md",
        f"{prefix}c.md",
        f"{prefix}latin.md",
    ], lines
    assert (
        "2 broken links and 2 pages that cannot be checked new in the index since HEAD, 0 warnings"
        in proc.stderr
    )
    assert "save those pages as UTF-8 text" in proc.stderr


def _cached_trees(repo: Repo) -> set[str]:
    from llmwiki_git.checks.cache import open_cache

    return {key.split("\0")[0] for key in open_cache(repo.root / ".git").trees()}


@pytest.mark.parametrize("root", ["wiki", ""])
def test_a_clean_work_tree_is_checked_as_head_and_a_dirty_one_never(repo: Repo, root: str) -> None:
    """A whole-tree check of a work tree `git status` finds clean (hidden folders aside) is
    cached as HEAD's tree, so the hook's first run after it starts from HEAD's result and
    facts (issue 23: that first `--staged` check took 1.6-1.9 s on 10,000 pages). A work tree
    with any change is never taken for HEAD: each check says what an uncached one says."""
    at = f"{root}/" if root else ""
    if not root:
        repo.write("index.md", "# My vault\n\n[[alpha]]\n")
    repo.write(f"{at}concepts/alpha.md", page("Alpha", "[[beta]] [[missing]]\n"))
    repo.write(f"{at}concepts/beta.md", page("Beta", "[[alpha]]\n"))
    repo.commit("wiki")
    head_tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    (repo.root / ".llmwiki").mkdir()
    (repo.root / ".llmwiki" / "activity.log").write_text(
        "{}\n"
    )  # untracked, in a hidden folder: still clean
    assert problems(repo) == problems(repo, "--no-cache")
    assert head_tree in _cached_trees(repo)  # the whole-tree check stood for HEAD's tree
    repo.write(f"{at}concepts/alpha.md", page("Alpha", "[[beta]] [[missing]]\nfix\n"))
    repo.git("add", "-A")
    assert problems(repo, "--staged", "--base", "HEAD") == problems(
        repo, "--staged", "--base", "HEAD", "--no-cache"
    )
    repo.git("reset", "-q", "--hard")
    for change in ("modified", "untracked", "staged", "deleted"):
        if change == "modified":
            repo.write(f"{at}concepts/alpha.md", page("Alpha", "[[beta]] [[missing-too]]\n"))
        elif change == "untracked":
            repo.write(f"{at}concepts/missing.md", page("Missing", "here now\n"))
        elif change == "staged":
            repo.write(f"{at}concepts/missing.md", page("Missing", "here now\n"))
            repo.git("add", "-A")
        else:
            (repo.root / f"{at}concepts/beta.md").unlink()
        assert problems(repo) == problems(repo, "--no-cache"), change
        assert problems(repo, "--rev", "HEAD") == problems(repo, "--rev", "HEAD", "--no-cache"), (
            change
        )
        repo.git("reset", "-q", "--hard")
        repo.git("clean", "-q", "-fd", "--", f"{at}concepts" if at else "concepts")


@pytest.mark.parametrize("root", ["wiki", ""])
def test_the_first_hook_after_a_whole_check_of_a_changed_tree_reads_its_cache(
    repo: Repo, root: str
) -> None:
    """Issue 39: the usual order is edit, `llmwiki check`, `git add`, commit. The whole-tree
    check of the changed work tree is cached under the tree the work tree holds (written
    through a copy of the index, the user's index untouched), so the hook's first
    `--staged --base HEAD` derives HEAD and the index from it instead of checking HEAD in
    full (1.8 s of CPU at 10,000 pages, 0.36 s from the cache); results as uncached."""
    from llmwiki_git.wiki.model import ScanTally

    at = f"{root}/" if root else ""
    if not root:
        repo.write("index.md", "# My vault\n\n[[alpha]]\n")
    for name in ("alpha", "beta", "gamma"):
        repo.write(f"{at}concepts/{name}.md", page(name.title(), "[[alpha]] [[beta]]\n"))
    repo.commit("wiki")
    repo.write(f"{at}concepts/alpha.md", page("Alpha", "[[beta]] [[missing]]\n"))  # modified
    repo.write(f"{at}concepts/delta.md", page("Delta", "[[gamma]] [[gone]]\n"))  # untracked
    (repo.root / f"{at}concepts/gamma.md").unlink()  # deleted
    index_before = (repo.root / ".git" / "index").read_bytes()
    assert problems(repo) == problems(repo, "--no-cache")
    assert (repo.root / ".git" / "index").read_bytes() == index_before
    assert repo.git("status", "--porcelain").count("\n") == 3  # nothing staged by the check
    repo.git("add", "-A")
    worktree_tree = repo.git("write-tree").strip()
    assert worktree_tree in _cached_trees(repo)  # the check stood for the tree it held
    assert not list((repo.root / ".git").glob("llmwiki-index-*"))  # the copy is gone
    before = ScanTally.pages
    hook = problems(repo, "--staged", "--base", "HEAD")
    assert ScanTally.pages == before  # HEAD was derived from the cache, not loaded and scanned
    assert hook == problems(repo, "--staged", "--base", "HEAD", "--no-cache")
    assert sorted(p["target"] for p in hook[1]) == ["gamma", "gone", "missing"]


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_the_gate_applies_the_candidates_rule_to_control_characters(
    repo: Repo, prefix: str
) -> None:
    """Issue 22's acceptance rule (no C0/C1 control or bidi override in a page) is the
    gate's too: a commit adding an escape sequence or a right-to-left override is refused,
    as an approval of the same page would be; tab, CR and newline pass; a wiki that keeps
    form feeds on purpose can lower the code in [check.severity]."""
    if not prefix:
        repo.write("index.md", "# My vault\n\n[[a]]\n")
    repo.write(f"{prefix}a.md", page("A", "Plain.\ttab\r\n"))
    repo.commit("seed")
    assert problems(repo, "--staged", "--base", "HEAD") == (0, [])
    repo.write(f"{prefix}evil.md", page("Evil", "Looks fine \x1b[8mhidden\x1b[0m.\n"))
    repo.write(f"{prefix}rtl.md", page("Rtl", "access = user \u202e // check\n"))
    repo.git("add", "-A")
    code, found = problems(repo, "--staged", "--base", "HEAD")
    assert code == 1
    assert [(p["path"], p["code"], p["severity"]) for p in found] == [
        (f"{prefix}evil.md", "control-character", "error"),
        (f"{prefix}rtl.md", "control-character", "error"),
    ]
    assert "\\x1b" in found[0]["message"] and "\\u202e" in found[1]["message"]
    assert (
        found[0]["line"] == found[1]["line"] == 4
    )  # the body line (after three frontmatter lines)
    proc = repo.llmwiki("check", "--staged", "--base", "HEAD")
    assert (
        "\x1b" not in proc.stdout + proc.stderr
    )  # the message names the character, never prints it
    repo.write(".llmwiki/config.toml", '[check.severity]\ncontrol-character = "warning"\n')
    assert problems(repo, "--staged", "--base", "HEAD")[0] == 0
