"""`llmwiki merge-pages A B` (issue 28, round two): B folded into A on a merge/1 review
candidate -- B's body under a heading for review, B's title and aliases added to A's aliases
(every other frontmatter byte kept), B deleted, every link to B rewritten to A (anchors kept,
embeds pointed at B's section) -- never automatically; `--suggest` offers duplicates, never
numbered or dated titles. Both layouts."""

from __future__ import annotations

import json
import subprocess

import pytest

from llmwiki_git.checks.duplicates import suggest
from llmwiki_git.errors import FrontmatterRefused
from llmwiki_git.wiki.frontmatter import parse
from llmwiki_git.wiki.merge import with_aliases
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix, page

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}

KEEP = (
    '---\r\ntitle: Transformer\r\ntags: [ml, nlp]\r\ncustom: {keep: "me", n: 3}\r\naliases:\r\n'
    "  - Transformer model\r\ncreatedAt: 2024-01-01\r\n---\r\n# Transformer\r\n\r\nAn architecture.\r\n\r\n"
    "## Attention\r\n\r\nSelf-attention. [[transformers]] ^t1\r\n"
)
FOLD = (
    "---\ntitle: Transformers\naliases: [Transformer networks]\ntags: [dup]\n---\n"
    "Transformers use attention; see [notes](../notes/n.md), [[#Training]] and [[transformer]].\n\n"
    "## Training\n\nLarge data. ^b2\n"
)
LINKING = (
    "# Notes\n\n[[transformers]], [[ transformers |the nets]], [[transformers#Training]], ![[transformers]],\n"
    "[md](../concepts/transformers.md#training), [[Transformer networks]], `[[transformers]]`, "
    "| [[transformers\\|t]] |.\n"
)
LINKED = (
    "# Notes\n\n[[transformer]], [[ transformer |the nets]], [[transformer#Training]], "
    "![[transformer#Transformers]],\n[md](../concepts/transformer.md#training), [[Transformer networks]], "
    "`[[transformers]]`, | [[transformer\\|t]] |.\n"
)


@pytest.fixture(params=["wiki", "vault"])
def wiki(repo: Repo, request: pytest.FixtureRequest) -> tuple[Repo, str]:
    prefix = layout_prefix(repo, request.param, "# My vault\n\nStart at [[transformers]].\n")
    if not prefix:
        repo.write(".gitignore", ".llmwiki/\n")
    repo.write(f"{prefix}concepts/transformer.md", KEEP.encode())
    repo.write(f"{prefix}concepts/transformers.md", FOLD)
    repo.write(f"{prefix}notes/n.md", LINKING)
    repo.commit("wiki")
    return repo, prefix


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def test_with_aliases_extends_each_form_and_keeps_every_other_byte() -> None:
    block = "---\ntitle: A\naliases:\n- One\nsummary: s\n---\nbody\n"
    assert (
        with_aliases(block, ["Two"])
        == "---\ntitle: A\naliases:\n- One\n- Two\nsummary: s\n---\nbody\n"
    )
    flow = "\ufeff---\r\naliases: [One]  \r\nx: 1\r\n---\r\nbody"
    assert (
        with_aliases(flow, ["yes", "a: b"])
        == '\ufeff---\r\naliases: [One, "yes", "a: b"]  \r\nx: 1\r\n---\r\nbody'
    )
    scalar = "---\naliases: One\nx: [1, 2]\n---\n"
    assert with_aliases(scalar, ["Two"]) == "---\naliases:\n  - One\n  - Two\nx: [1, 2]\n---\n"
    none = "---\ntitle: A # a comment\n---\n"
    assert with_aliases(none, ["Two"]) == "---\ntitle: A # a comment\naliases:\n  - Two\n---\n"
    bare = "# A page without frontmatter\n"
    assert (
        with_aliases(bare, ["Two"]) == "---\naliases:\n  - Two\n---\n# A page without frontmatter\n"
    )
    for text in (
        block,
        flow,
        scalar,
        none,
        bare,
    ):  # every result reads back as the old data plus the aliases
        data = dict(parse(with_aliases(text, ["Two"])).data)
        assert (
            data.pop("aliases")[-1] == "Two"
            and {k: v for k, v in parse(text).data.items() if k != "aliases"} == data
        )
    with pytest.raises(FrontmatterRefused):
        with_aliases("---\ntitle: [unclosed\n---\n", ["Two"])
    with pytest.raises(FrontmatterRefused):
        with_aliases("---\naliases: {a: 1}\n---\n", ["Two"])


def test_merge_is_staged_shown_and_approved_as_one(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    keep, fold = f"{prefix}concepts/transformer.md", f"{prefix}concepts/transformers.md"
    head = repo.git("rev-parse", "HEAD").strip()
    dry = run(repo, "merge-pages", keep, fold, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert (
        f'plan: fold {fold} into {keep} under the heading "Transformers"; aliases added: Transformers, '
        f"Transformer networks; {fold} deleted" in dry.stdout
    )
    assert f"  {prefix}notes/n.md:3:78: transformers → transformer#Transformers" in dry.stdout
    assert (
        "(tags) is not carried over" in dry.stderr
        and repo.git("branch", "--list", "llmwiki/*") == ""
    )
    # the pages by name: A by its title, B by its file name
    proc = run(repo, "merge-pages", "Transformer", "transformers", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["kind"], out["into"], out["from"], out["links"]) == (
        "merge/1",
        keep,
        fold,
        7 + (0 if prefix else 1),
    )
    candidate = out["candidate"]
    assert [p["target"] for p in candidate["pages"]][:2] == [keep, fold]
    assert candidate["pages"][1]["bodyDigest"] == "absent"
    assert repo.git("rev-parse", "HEAD").strip() == head and repo.git("status", "--porcelain") == ""
    trailers = [
        t
        for t in repo.git(
            "log", "-1", "--format=%(trailers:only,unfold)", candidate["branch"]
        ).splitlines()
        if t
    ]
    assert "Llmwiki-Kind: merge/1" in trailers and trailers[-2:] == [
        f"Llmwiki-Move-From: {fold}",
        f"Llmwiki-Move-To: {keep}",
    ]
    shown = run(repo, "review", "show", candidate["id"])
    assert (
        f"plan: fold {fold} into {keep}" in shown.stdout and "Approval would pass" in shown.stdout
    ), shown.stdout

    done = run(repo, "review", "approve", candidate["id"])
    assert done.returncode == 0, done.stderr
    merged = (repo.root / keep).read_bytes().decode()
    # A's frontmatter: byte for byte but for the two new aliases; its body kept; B's body under B's title
    assert merged.startswith(
        KEEP.replace(
            "  - Transformer model\r\n",
            "  - Transformer model\r\n  - Transformers\r\n  - Transformer networks\r\n",
        ).replace("[[transformers]]", "[[transformer]]")
    )
    assert merged.endswith(
        "\r\n## Transformers\r\n\r\nTransformers use attention; see [notes](../notes/n.md), "
        "[[#Training]] and [[transformer]].\n\n## Training\n\nLarge data. ^b2\n"
    )
    assert not (repo.root / fold).exists()
    assert (repo.root / f"{prefix}notes/n.md").read_text() == LINKED
    if not prefix:
        assert (repo.root / "index.md").read_text() == "# My vault\n\nStart at [[transformer]].\n"
        assert (repo.root / "log.md").read_text() == "# My diary\n"
    assert repo.git("status", "--porcelain") == ""
    check = json.loads(run(repo, "check", "--json").stdout)
    assert check["problems"] == []


@pytest.mark.parametrize("case", ["same", "missing", "frontmatter", "generated"])
def test_refusals_stage_nothing(wiki: tuple[Repo, str], case: str) -> None:
    repo, prefix = wiki
    keep, fold = f"{prefix}concepts/transformer.md", f"{prefix}concepts/transformers.md"
    if case == "same":
        fold = keep
    elif case == "missing":
        fold = f"{prefix}concepts/nowhere.md"
    elif case == "frontmatter":
        repo.write(keep, "---\ntitle: [unclosed\n---\nbody\n")
        repo.commit("broken frontmatter")
    elif case == "generated":
        if not prefix:
            return  # the vault's index.md is the user's page: mergeable like any
        run(repo, "index")
        repo.commit("index")
        fold = f"{prefix}index.md"
    proc = run(repo, "merge-pages", keep, fold)
    assert proc.returncode in (1, 2), proc.stdout
    expected = {
        "same": "cannot be merged into itself",
        "missing": "nowhere.md is not a page of the wiki",
        "frontmatter": "cannot add the aliases",
        "generated": "llmwiki's generated file",
    }[case]
    assert expected in proc.stderr, proc.stderr
    assert repo.git("branch", "--list", "llmwiki/*") == ""


def test_a_hostile_merge_branch_and_a_killed_approval(wiki: tuple[Repo, str]) -> None:
    repo, prefix = wiki
    keep = f"{prefix}concepts/transformer.md"
    candidate = json.loads(
        run(repo, "merge-pages", keep, f"{prefix}concepts/transformers.md", "--json").stdout
    )["candidate"]
    # a frontmatter edit of A (outside the body digest) on the branch: not the plan
    commit = candidate["commit"]
    repo.git("checkout", "-q", "--detach", commit)
    (repo.root / keep).write_bytes(
        (repo.root / keep).read_bytes().replace(b"tags: [ml, nlp]", b"tags: [smuggled]")
    )
    repo.git("commit", "-q", "-a", "--amend", "--no-edit")
    forged = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    repo.git("update-ref", f"refs/heads/{candidate['branch']}", forged)
    proc = run(repo, "review", "approve", candidate["id"])
    assert proc.returncode == 1 and "otherwise than its merge/1 plan" in proc.stderr, proc.stderr
    repo.git("update-ref", f"refs/heads/{candidate['branch']}", commit)
    # kill -9 after the branch moved: the next command completes the approval
    head = repo.git("rev-parse", "HEAD").strip()
    killed = repo.llmwiki_process(
        "review", "approve", candidate["id"], env={**FAST, "LLMWIKI_TEST_KILL_AT": "file:2"}
    )
    assert killed.returncode == -9, killed.stderr
    after = run(repo, "review", "list")
    assert after.returncode == 0, after.stderr
    if repo.git("rev-parse", "HEAD").strip() == head:
        assert run(repo, "review", "approve", candidate["id"]).returncode == 0
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert not (repo.root / f"{prefix}concepts/transformers.md").exists()
    assert (repo.root / f"{prefix}notes/n.md").read_text() == LINKED
    assert run(repo, "check").returncode == 0


def test_suggest_offers_duplicates_but_never_numbered_or_dated_titles(repo: Repo) -> None:
    pages = {
        "wiki/concepts/transformer.md": page("Transformer", "[[gradient-descent]]"),
        "wiki/concepts/transformers.md": page("Transformers", "plural of the first"),
        "wiki/concepts/gradient-descent.md": page("Gradient Descent", "x"),
        "wiki/concepts/gradient-descent-2.md": page("Gradient Descent", "an LLM wrote it twice"),
        "wiki/concepts/gradient-decent.md": page("Gradient Decent", "a typo"),
        "wiki/concepts/ml.md": page("ML", "x", aliases="[Machine Learning]"),
        "wiki/concepts/machine-learning.md": page(
            "Machine Learning", "[[ml]] [[machine-learning]]"
        ),
        "wiki/notes/well-2.md": page("Well 2", "x"),
        "wiki/notes/well-3.md": page("Well 3", "x"),
        "wiki/notes/world-war-i.md": page("World War I", "x"),
        "wiki/notes/world-war-ii.md": page("World War II", "x"),
        "wiki/journal/2024-01-02.md": page("2024-01-02", "x"),
        "wiki/journal/2024-01-03.md": page("2024-01-03", "x"),
        "wiki/notes/plan-a.md": page("Plan A", "x"),
        "wiki/notes/plan-b.md": page("Plan B", "x"),
    }
    for path, text in pages.items():
        repo.write(path, text)
    repo.commit("wiki")
    groups = suggest(Workspace.open(repo.root).wiki("HEAD"))
    found = {frozenset(p.path.rsplit("/", 1)[-1][:-3] for p, _ in g.pages): g for g in groups}
    assert set(found) == {
        frozenset({"gradient-descent", "gradient-descent-2", "gradient-decent"}),
        frozenset({"ml", "machine-learning"}),
        frozenset({"transformer", "transformers"}),
    }
    descent = found[frozenset({"gradient-descent", "gradient-descent-2", "gradient-decent"})]
    assert (
        descent.reasons == ["duplicate-title", "similar-title"]
        and descent.keep.stem == "gradient-descent"
    )
    assert descent.commands()[0] == (
        "llmwiki merge-pages wiki/concepts/gradient-descent.md wiki/concepts/gradient-decent.md"
    )
    assert found[frozenset({"ml", "machine-learning"})].reasons == ["alias-collision"]
    out = run(repo, "merge-pages", "--suggest", "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)["groups"]) == 3
    text = run(repo, "merge-pages", "--suggest")
    assert (
        "3 groups of pages" in text.stdout
        and "llmwiki merge-pages wiki/concepts/transformer.md" in text.stdout
    )


def _pairing_steps(repo: Repo, pages: dict[str, str]) -> tuple[int, list[object]]:
    """The lines of checks/duplicates.py that `suggest` executes on ``pages`` (a measure of
    the pairing work that does not depend on the machine), and what it suggests."""
    import sys

    from llmwiki_git.checks import duplicates

    for path, text in pages.items():
        repo.write(path, text)
    repo.commit(f"{len(pages)} pages")
    wiki = Workspace.open(repo.root).wiki("HEAD")
    assert len(wiki.pages) >= len(pages)
    steps = 0

    def tracer(frame: object, event: str, arg: object) -> object:
        nonlocal steps
        if getattr(frame, "f_code").co_filename == duplicates.__file__:  # noqa: B009
            if event == "line":
                steps += 1
            return tracer
        return None

    sys.settrace(tracer)  # type: ignore[arg-type]
    try:
        groups = suggest(wiki)
    finally:
        sys.settrace(None)
    return steps, groups


@pytest.mark.parametrize("layout", ["wiki", "vault"])
@pytest.mark.parametrize("shape", ["folders", "dated", "copied", "aliased"])
def test_suggest_pairing_grows_linearly_in_pages_sharing_a_title(
    tmp_path_factory: pytest.TempPathFactory, shape: str, layout: str
) -> None:
    """Issue 34, item 6: pages sharing one title are bucketed before they are paired, so the
    pairing work grows with the pages, not with their pairs (counted, not timed)."""
    at = "wiki/" if layout == "wiki" else ""

    def word(i: int) -> str:  # a name without numbers (numbered names are a series)
        return "".join(chr(ord("a") + int(d)) for d in f"{i:04d}")

    def wiki_of(n: int) -> dict[str, str]:
        own = {} if at else {"index.md": "# My vault\n", "log.md": "# Log\n"}
        if shape == "folders":  # titles that repeat their file names: nothing to offer
            pages = {f"{at}t{i}/note.md": page("Note", "x") for i in range(n)}
        elif shape == "dated":  # a daily note's title copied every day: nothing to offer
            pages = {f"{at}journal/2024-{i:04d}.md": page("Daily", "x") for i in range(n)}
        elif shape == "copied":  # one concept written n times: one group of n pages
            pages = {f"{at}c/copy-{word(i)}.md": page("Blob", "x") for i in range(n)}
        else:  # one alias claimed by n pages and n pages named by it: one group of 2n pages
            pages = {
                **{f"{at}a/{word(i)}.md": page(word(i), "x", aliases="[Shared]") for i in range(n)},
                **{f"{at}s{i}/shared.md": page("Shared", "x") for i in range(n)},
            }
        return own | pages

    counted = {}
    for n in (100, 200, 400):
        root = tmp_path_factory.mktemp(f"{shape}{n}")
        repo = Repo(root)
        repo.git("init", "-q", "-b", "main")
        steps, groups = _pairing_steps(repo, wiki_of(n))
        counted[n] = steps
        if shape in ("folders", "dated"):
            assert groups == [], groups
        else:
            assert len(groups) == 1 and len(groups[0].pages) == (n if shape == "copied" else 2 * n)
    # quadratic pairing makes each doubling cost four times the steps; linear, about twice
    assert counted[400] < 2.5 * counted[200] and counted[200] < 2.5 * counted[100], counted


def test_the_few_pairs_join_exactly_what_all_pairs_would() -> None:
    """`_linked` (issue 34, item 6) against every pair, on 3,000 random member sets: each
    pair it gives may be offered, and its pairs join the same groups as all of them."""
    import random
    from types import SimpleNamespace

    from llmwiki_git.checks.duplicates import _linked

    def groups(n: int, pairs: list[tuple[int, int]]) -> set[frozenset[int]]:
        parent = list(range(n))

        def find(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        for a, b in pairs:
            parent[find(a)] = find(b)
        return {frozenset(i for i in range(n) if find(i) == find(j)) for j in range(n)}

    rng = random.Random(34)
    for _ in range(3000):
        n, differ = rng.randint(1, 9), rng.random() < 0.5
        members = [
            (
                rng.choice("ab" if differ else "a"),
                SimpleNamespace(path=i),
                rng.choice([None, "x", "y", ("leaf", i)]),
                rng.choice([None, ("1",), ("2",)]),
            )
            for i in range(n)
        ]

        def may(one: tuple[object, ...], two: tuple[object, ...], differ: bool = differ) -> bool:
            return (
                one[1] is not two[1]
                and not (differ and one[0] == two[0])
                and all(x is None or y is None or x == y for x, y in zip(one[2:], two[2:]))
            )

        every = [
            (a[1].path, b[1].path)
            for i, a in enumerate(members)
            for b in members[i + 1 :]
            if may(a, b)
        ]
        few = [(a.path, b.path) for a, b in _linked(members, differ=differ)]  # type: ignore[arg-type]
        assert all(may(members[a], members[b]) for a, b in few), (members, few)
        assert groups(n, few) == groups(n, every), (members, every, few)


def test_a_folded_page_titled_by_its_own_h1_becomes_a_section_not_a_second_title() -> None:
    """Issue 36 item 7: merge-pages put B under a second H1 in A."""
    from llmwiki_git.wiki.merge import folded

    keep = "---\ntitle: Alpha\n---\n# Alpha\n\nAbout alpha.\n"
    for fold, section in (
        ("---\ntitle: Beta\n---\n# Beta\n\nAbout beta.\n## Detail\n", "## Beta\n\nAbout beta.\n"),
        ("Beta\r\n====\r\n\r\nAbout beta.\r\n", "Beta\r\n---\r\n\r\nAbout beta.\r\n"),
    ):
        merged, heading = folded(keep, fold, "Beta")
        assert heading == "Beta" and section in merged, merged
        assert sum(1 for line in merged.splitlines() if line.startswith("# ")) == 1, merged
