"""The checker's cache version is computed from what the caches hold: a new problem code or
a changed scanner rule moves it, and a cache written under another version is ignored,
never misread."""

from __future__ import annotations

import json
import marshal
from pathlib import Path

from llmwiki_git import problems
from llmwiki_git.checks import version
from llmwiki_git.checks.cache import store, stored
from llmwiki_git.checks.version import CACHE_VERSION, RULE_MODULES, cache_version, rule_sources
from llmwiki_git.wiki.pages import PageScan

from ..conftest import Repo, page


def _inputs() -> tuple[dict[str, str], list[tuple[str, bytes]], tuple[str, ...]]:
    return dict(problems.CODES), rule_sources(), PageScan._fields


def test_the_version_is_computed_from_codes_rules_and_layout() -> None:
    codes, sources, layout = _inputs()
    assert CACHE_VERSION == cache_version(codes, sources, layout) == version.current_version()
    assert {
        "wiki/scanner.py",
        "wiki/pages.py",
        "wiki/slug.py",
        "checks/links.py",
        "problems.py",
    } <= set(RULE_MODULES)
    assert all(source != b"missing" for _, source in sources)  # every rule module was read


def test_a_new_problem_code_moves_the_version() -> None:
    codes, sources, layout = _inputs()
    assert (
        cache_version({**codes, "dangling-embed": problems.ERROR}, sources, layout) != CACHE_VERSION
    )
    flipped = {
        **codes,
        "missing-heading": problems.ERROR
        if codes["missing-heading"] != problems.ERROR
        else problems.WARNING,
    }
    assert cache_version(flipped, sources, layout) != CACHE_VERSION


def test_a_changed_scanner_rule_moves_the_version() -> None:
    codes, sources, layout = _inputs()
    scanner = dict(sources)["wiki/scanner.py"]
    rule = b'_WIKILINK = re.compile(r"\\[\\[([^\\[\\n]*?)\\]\\]")'
    assert rule in scanner  # the rule this test edits is the scanner's
    edited = [
        (name, src.replace(rule, rule.replace(b"*?", b"+?")) if name == "wiki/scanner.py" else src)
        for name, src in sources
    ]
    assert cache_version(codes, edited, layout) != CACHE_VERSION


def test_a_changed_record_layout_moves_the_version() -> None:
    codes, sources, layout = _inputs()
    assert cache_version(codes, sources, (*layout, "embeds")) != CACHE_VERSION


def _seed(repo: Repo) -> None:
    repo.write(
        "wiki/concepts/alpha.md", page("Alpha", "# Alpha\n\nLinks to [[beta]] and [[gone]].\n")
    )
    repo.write("wiki/concepts/beta.md", page("Beta", "Back to [[alpha]].\n"))
    repo.commit("seed")


def _rewrite(path: Path, version_: str, clear: tuple[int, ...] = ()) -> None:
    """Rewrite a cache file as if another version had written it: the same layout, the
    records of the parts numbered in ``clear`` emptied (what a misread would report)."""
    payload = stored(path)
    parts = [{k: () for k in part} if i in clear else part for i, part in enumerate(payload[1:])]
    store(path, (version_, *parts))


def test_a_cache_of_another_version_is_ignored_not_misread(repo: Repo) -> None:
    _seed(repo)
    # An untracked file: the work tree is not HEAD's tree. Its check is cached under the
    # tree it holds too (issue 39); with that record and its facts removed, the next check
    # reads the page records of scans.marshal.
    repo.write("notes.txt", "not a page\n")
    expect = json.loads(repo.llmwiki("check", "--json", "--no-cache").stdout)
    assert [p["target"] for p in expect["problems"]] == ["gone"]
    assert json.loads(repo.llmwiki("check", "--json").stdout) == expect  # writes the cache
    folder = repo.root / ".git" / "llmwiki" / "check"
    scans = folder / "scans.marshal"
    assert marshal.loads(scans.read_bytes())[0] == CACHE_VERSION

    def scans_only() -> None:
        for whole in (folder / "trees.marshal", *folder.glob("facts-*.marshal")):
            whole.unlink()

    # Control: the same emptied records under the current version are read (and wrong).
    _rewrite(scans, CACHE_VERSION, clear=(1,))  # page problems: none
    scans_only()
    misread = json.loads(repo.llmwiki("check", "--json").stdout)
    assert misread["problems"] == []

    # Under any other version (an older scanner, a code added since) they are ignored.
    _rewrite(scans, "0" * 16, clear=(1,))
    scans_only()
    assert json.loads(repo.llmwiki("check", "--json").stdout) == expect
    assert marshal.loads(scans.read_bytes())[0] == CACHE_VERSION  # and rewritten


def test_tree_and_facts_of_another_version_are_ignored(repo: Repo) -> None:
    _seed(repo)
    expect = json.loads(repo.llmwiki("check", "--json", "--rev", "HEAD", "--no-cache").stdout)
    assert json.loads(repo.llmwiki("check", "--json", "--rev", "HEAD").stdout) == expect
    folder = repo.root / ".git" / "llmwiki" / "check"
    trees = folder / "trees.marshal"
    emptied = {key: (record[0], (), *record[2:]) for key, record in stored(trees)[1].items()}
    store(trees, (CACHE_VERSION, emptied))
    assert (
        json.loads(repo.llmwiki("check", "--json", "--rev", "HEAD").stdout)["problems"] == []
    )  # control: read
    store(trees, ("stale", emptied))
    for facts in folder.glob("facts-*.marshal"):
        _rewrite(facts, "stale")
    assert json.loads(repo.llmwiki("check", "--json", "--rev", "HEAD").stdout) == expect
