"""Stale pages and missing sources (`stale-page`, `source-missing`): a page's recorded source
blob against the source at the checked revision, citations past the end of a source, the
hook's and the Action's view of a change that leaves pages behind, the severity setting,
and precision on a scripted history."""

from __future__ import annotations

import json
import random

import pytest

from ..conftest import Repo, page

OLD = "deadbeef" * 5  # a blob id no source here has


def problems(repo: Repo, *args: str) -> tuple[int, list[dict]]:
    done = repo.llmwiki("check", "--json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["problems"]


def keyed(found: list[dict]) -> list[tuple]:
    return [(p["path"], p["line"], p["col"], p["code"], p["target"]) for p in found]


def blob_of(repo: Repo, rel: str) -> str:
    return repo.git("hash-object", rel).strip()


def fed(title: str, body: str, sources: dict[str, str | None], **extra: object) -> str:
    """A page written from ``sources`` (path -> recorded blob, None: not recorded)."""
    lines = ["---", f"title: {title}", *(f"{k}: {v}" for k, v in extra.items()), "sources:"]
    lines += [f"- {path}" for path in sources]
    blobs = {p: b for p, b in sources.items() if b}
    if blobs:
        lines += ["sourceBlobs:", *(f"  {p}: {b}" for p, b in blobs.items())]
    return "\n".join([*lines, "---", "", body]) + "\n"


SOURCE = "---\ntitle: Paper\n---\n\n# Paper\n\nline six\nline seven\n"  # 8 lines


@pytest.mark.parametrize("root", ["wiki", ""])
def test_each_code_where_it_stands_in_both_layouts(repo: Repo, root: str) -> None:
    pre = f"{root}/" if root else ""
    repo.write("sources/a.md", SOURCE)
    if not root:
        repo.write("index.md", "# My vault\n\nMy own home page.\n")
    a = blob_of(repo, "sources/a.md")
    repo.write(f"{pre}concepts/fresh.md", fed("Fresh", "Says so ^[a.md:6-8].", {"sources/a.md": a}))
    repo.write(
        f"{pre}concepts/stale.md", fed("Stale", "Old text ^[a.md:6-7].", {"sources/a.md": OLD})
    )
    repo.write(f"{pre}concepts/missing.md", fed("Missing", "Gone.", {"sources/gone.md": OLD}))
    repo.write(
        f"{pre}concepts/cites.md",
        page(
            "Cites",
            "Past the end ^[a.md:7-9]; gone ^[gone.md]; in code "
            "`^[a.md:99]`; a footnote ^[as the paper says.] and ^[i.e].",
        ),
    )
    repo.write(f"{pre}concepts/unknown.md", fed("Unknown", "No blob recorded.", {"a.md": None}))
    repo.write(
        f"{pre}concepts/bib.md",
        page("Bib", "Mine.", sources="[Wikipedia, 'https://example.org/a.md']"),
    )
    repo.write(
        f"{pre}concepts/retracted.md", page("Retracted", "Drew on z.", retracted="[sources/z.md]")
    )
    repo.commit("wiki")
    code, found = problems(repo)
    assert code == 0 and {p["severity"] for p in found} == {"warning"}
    assert keyed(found) == [
        (f"{pre}concepts/cites.md", 4, 14, "stale-page", "sources/a.md"),
        (f"{pre}concepts/cites.md", 4, 32, "source-missing", "sources/gone.md"),
        (f"{pre}concepts/missing.md", 4, 1, "source-missing", "sources/gone.md"),
        (f"{pre}concepts/retracted.md", 3, 1, "stale-page", "sources/z.md"),
        (f"{pre}concepts/stale.md", 4, 1, "stale-page", "sources/a.md"),
    ]
    stale = next(p for p in found if p["path"].endswith("stale.md"))
    assert (
        OLD in stale["message"]
        and a in stale["message"]
        and "llmwiki compile --stale" in stale["message"]
    )
    past = found[0]["message"]
    assert "^[a.md:7-9]" in past and "has 8" in past
    assert problems(repo, "--rev", "HEAD") == problems(repo, "--no-cache") == (code, found)


def _hook_wiki(repo: Repo) -> dict[str, str]:
    """Two sources; p1 and p2 written from a, p3 from b, q cites a; committed."""
    repo.write("sources/a.md", SOURCE)
    repo.write("sources/b.md", "# B\n\none\ntwo\n")
    a, b = blob_of(repo, "sources/a.md"), blob_of(repo, "sources/b.md")
    repo.write("wiki/concepts/p1.md", fed("P1", "From a ^[a.md:6-6].", {"sources/a.md": a}))
    repo.write(
        "wiki/concepts/p2.md", fed("P2", "From a and b.", {"sources/a.md": a, "sources/b.md": b})
    )
    repo.write("wiki/concepts/p3.md", fed("P3", "From b ^[b.md:3-4].", {"sources/b.md": b}))
    repo.write("wiki/concepts/other.md", page("Other", "Links [[p1]]."))
    repo.commit("wiki")
    return {"a": a, "b": b}


def test_the_hook_names_the_pages_a_source_change_left_behind(repo: Repo) -> None:
    blobs = _hook_wiki(repo)
    assert problems(repo, "--staged", "--base", "HEAD") == (0, [])
    repo.write("sources/a.md", SOURCE.replace("line seven", "line seven, revised"))
    repo.git("add", "-A")
    new_a = blob_of(repo, "sources/a.md")
    code, found = problems(repo, "--staged", "--base", "HEAD")
    assert code == 0 and keyed(found) == [("sources/a.md", 1, 1, "stale-page", "sources/a.md")]
    message = found[0]["message"]
    assert "wiki/concepts/p1.md, wiki/concepts/p2.md" in message and "p3" not in message
    assert blobs["a"] in message and new_a in message
    # touching one of them: only the other is named
    repo.write(
        "wiki/concepts/p1.md", fed("P1", "Rewritten from a ^[a.md:6-6].", {"sources/a.md": new_a})
    )
    repo.git("add", "-A")
    code, found = problems(repo, "--staged", "--base", "HEAD")
    assert keyed(found) == [("sources/a.md", 1, 1, "stale-page", "sources/a.md")]
    assert "wiki/concepts/p2.md" in found[0]["message"] and "p1" not in found[0]["message"]
    # updating both: quiet
    repo.write(
        "wiki/concepts/p2.md",
        fed("P2", "From a and b, again.", {"sources/a.md": new_a, "sources/b.md": blobs["b"]}),
    )
    repo.git("add", "-A")
    assert problems(repo, "--staged", "--base", "HEAD") == (0, [])
    # the whole index still knows exactly what is stale (nothing now)
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache") == (0, [])


def test_a_deleted_source_and_a_page_edit_are_reported_where_they_happened(repo: Repo) -> None:
    _hook_wiki(repo)
    repo.git("rm", "-q", "sources/b.md")
    repo.write("wiki/concepts/other.md", page("Other", "Links [[p1]] and cites ^[a.md:40-41]."))
    repo.git("add", "-A")
    code, found = problems(repo, "--staged", "--base", "HEAD")
    assert keyed(found) == [
        ("sources/b.md", 1, 1, "source-missing", "sources/b.md"),
        ("wiki/concepts/other.md", 4, 24, "stale-page", "sources/a.md"),
    ]
    assert "wiki/concepts/p2.md, wiki/concepts/p3.md" in found[0]["message"]
    assert "llmwiki retract sources/b.md" in found[0]["message"]
    repo.commit("delete b")
    github = repo.llmwiki("check", "--base", "HEAD~1", "--head", "HEAD", "--format", "github")
    assert github.returncode == 0
    assert (
        "::warning file=sources/b.md,line=1,col=1,title=llmwiki source-missing::sources/b.md is deleted"
        in github.stdout
    )


def test_severity_setting_makes_the_gate_refuse(repo: Repo) -> None:
    _hook_wiki(repo)
    repo.write(".llmwiki/config.toml", '[check.severity]\nstale-page = "error"\n')
    repo.commit("config")
    repo.write("sources/a.md", SOURCE + "more\n")
    repo.git("add", "-A")
    done = repo.llmwiki("check", "--staged", "--base", "HEAD")
    assert done.returncode == 1
    assert done.stdout.startswith("sources/a.md:1:1: sources/a.md changed")
    assert "1 other error new in the index since HEAD" in done.stderr
    assert repo.llmwiki("check", "--rev", "HEAD").returncode == 0  # the commit holds the old source
    repo.write(".llmwiki/config.toml", '[check.severity]\nstale-page = "off"\n')
    assert problems(repo, "--staged", "--base", "HEAD") == (0, [])
    repo.write(".llmwiki/config.toml", '[check.severity]\nstale-page = "fatal"\n')
    bad = repo.llmwiki("check")
    assert bad.returncode == 2 and "use one of error, warning" in bad.stderr


EDITS = {
    "source changed": lambda r: r.write("sources/a.md", SOURCE.replace("six", "6")),
    "source shortened": lambda r: r.write("sources/b.md", "# B\n"),
    "source deleted": lambda r: r.git("rm", "-q", "sources/a.md"),
    "source renamed": lambda r: r.git("mv", "sources/b.md", "sources/b2.md"),
    "page cites past the end": lambda r: r.write(
        "wiki/concepts/other.md", page("Other", "[[p1]] ^[b.md:2-9]")
    ),
    "page deleted": lambda r: r.git("rm", "-q", "wiki/concepts/p3.md"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_derived_check_matches_a_full_check(repo: Repo, edit: str) -> None:
    _hook_wiki(repo)
    assert (
        problems(repo, "--rev", "HEAD")[1] == []
    )  # HEAD's tree is cached: the index is derived from it
    EDITS[edit](repo)
    repo.git("add", "-A")
    full = problems(repo, "--staged", "--no-cache")
    assert (
        any(p["code"] in ("stale-page", "source-missing") for p in full[1])
        or edit == "page deleted"
    )
    assert problems(repo, "--staged") == full
    assert problems(repo, "--staged", "--base", "HEAD") == problems(
        repo, "--staged", "--base", "HEAD", "--no-cache"
    )
    repo.commit(edit)
    assert problems(repo, "--rev", "HEAD") == problems(repo, "--rev", "HEAD", "--no-cache") == full


@pytest.mark.slow
def test_precision_on_a_scripted_history(repo: Repo) -> None:
    """Every source change flags exactly the pages written from it, in the whole-tree check and
    in the change's own gate; rewriting a source with the same bytes flags nothing."""
    rng = random.Random(27)
    sources = [f"sources/s{i}.md" for i in range(12)]
    texts = {
        s: f"# Source {i}\n\n" + "".join(f"fact {i}.{n}\n" for n in range(rng.randint(3, 8)))
        for i, s in enumerate(sources)
    }
    for path, text in texts.items():
        repo.write(path, text)
    feeds = {
        f"wiki/concepts/p{i}.md": sorted(rng.sample(sources, rng.randint(1, 3))) for i in range(30)
    }

    def restamp(pages: list[str]) -> None:
        for path in pages:
            repo.write(
                path,
                fed(path, "Written from its sources.", {s: blob_of(repo, s) for s in feeds[path]}),
            )

    restamp(list(feeds))
    repo.commit("compiled")
    recorded = {(p, s): blob_of(repo, s) for p, names in feeds.items() for s in names}
    stale_before: set[tuple[str, str]] = set()
    flagged = changes = rewrites = 0
    for step in range(10):
        changed = rng.sample(sources, rng.randint(1, 3))
        identical = [s for s in rng.sample(sources, 3) if s not in changed]
        for s in changed:
            texts[s] += f"added in step {step}\n"
            repo.write(s, texts[s])
        for s in identical:  # the same bytes written again (a re-ingest, an editor's save)
            repo.write(s, texts[s])
        recompiled = rng.sample(list(feeds), 4)
        restamp(recompiled)
        repo.commit(f"step {step}")
        for p in recompiled:
            recorded.update({(p, s): blob_of(repo, s) for s in feeds[p]})
        expected = {(p, s) for (p, s), b in recorded.items() if b != blob_of(repo, s)}
        _, found = problems(repo, "--rev", "HEAD")
        assert all(p["code"] == "stale-page" for p in found)
        assert sorted((p["path"], p["target"]) for p in found) == sorted(expected)
        # the change's own gate: one problem on each changed source, naming exactly the pages
        # written from it that the change left behind (stale now, not before, not rewritten)
        _, gate = problems(repo, "--base", "HEAD~1", "--head", "HEAD")
        named = {
            p["path"]: p["message"].split("feeds: ", 1)[1].split("; run", 1)[0].split(", ")
            for p in gate
        }
        behind = {
            s: sorted(p for p in feeds if (p, s) in expected - stale_before and p not in recompiled)
            for s in changed
        }
        assert named == {s: pages for s, pages in behind.items() if pages}
        stale_before = expected
        flagged += len(expected)
        changes += len(changed)
        rewrites += len(identical)
    assert changes >= 10 and rewrites >= 10 and flagged


def test_a_stale_page_rechecked_for_its_links_stays_stale(repo: Repo) -> None:
    """The delta re-checks an unchanged page whose link target appears; its provenance
    problems do not depend on that and must stand."""
    repo.write("sources/a.md", SOURCE)
    repo.write("wiki/concepts/old.md", fed("Old", "Links [[later]].", {"sources/a.md": OLD}))
    repo.commit("a stale page with a broken link")
    assert keyed(problems(repo, "--rev", "HEAD")[1]) == [
        ("wiki/concepts/old.md", 4, 1, "stale-page", "sources/a.md"),
        ("wiki/concepts/old.md", 9, 7, "broken-link", "later"),
    ]
    repo.write("wiki/concepts/later.md", page("Later", "Here now."))
    repo.git("add", "-A")
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")
    assert keyed(problems(repo, "--staged")[1]) == [
        ("wiki/concepts/old.md", 4, 1, "stale-page", "sources/a.md")
    ]


@pytest.mark.parametrize("edit", ["same record", "lines shift", "record changed"])
def test_an_edited_stale_page_is_judged_as_a_full_check_would(repo: Repo, edit: str) -> None:
    repo.write("sources/a.md", SOURCE)
    text = fed("Old", "First line ^[a.md:6-20].", {"sources/a.md": OLD})
    repo.write("wiki/concepts/old.md", text)
    repo.commit("a stale page")
    assert len(problems(repo, "--rev", "HEAD")[1]) == 2
    changed = {
        "same record": text.replace("6-20].", "6-20]. Edited after the citation."),
        "lines shift": text.replace("First line", "A new first line.\n\nFirst line"),
        "record changed": text.replace(OLD, repo.git("hash-object", "sources/a.md").strip()),
    }[edit]
    repo.write("wiki/concepts/old.md", changed)
    repo.git("add", "-A")
    assert problems(repo, "--staged") == problems(repo, "--staged", "--no-cache")


def test_citations_are_read_the_same_on_both_paths_of_the_reader() -> None:
    """A body without code blocks is searched at once; the line walk (any page with a fence,
    comment or indented block) must find the same citations at the same places."""
    from llmwiki_git.wiki.provenance import text_sourcing

    rng = random.Random(5)
    pieces = [
        "Text ^[a.md:1-2].",
        "`^[in.md:1-1]` code",
        "x ^[b.md:3-4, c.md:5] y",
        "^[foot note.]",
        "`a` ^[d.md:9-9] `b`",
        "plain line",
        "^[e.md]",
        "- item ^[f.txt:2-3]",
        "> quote ^[g.md:1-1]",
        "![[img.png]] ^[h.md:4-4]",
        "",
    ]
    for trial in range(200):
        body = "\n".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        head = "---\ntitle: T\n---\n" if trial % 2 else ""
        fast = text_sourcing(head + body + "\n")
        walked = text_sourcing(head + body + "\n<!-- forces the line walk -->\n")
        assert fast == walked, body
