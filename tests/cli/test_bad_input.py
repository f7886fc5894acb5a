"""Bad input gets a clear per-file diagnostic, never a traceback, and the rest is checked."""

from __future__ import annotations

import json
import os

from ..conftest import Repo


def run(repo: Repo, *args: str) -> tuple[int, list[dict], str]:
    proc = repo.llmwiki("check", "--json", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["problems"], proc.stderr


def by_code(found: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in found:
        out.setdefault(p["code"], []).append(p)
    return out


def test_every_kind_of_bad_page_reported_and_rest_checked(repo: Repo, tmp_path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret [[nothing]]\n")
    repo.write(
        "wiki/concepts/good.md",
        "[[broken-target]] [[yaml-bad]] [[binary]] [[latin]] [[huge]] [[escape]]\n",
    )
    repo.write(
        "wiki/concepts/yaml-bad.md", "---\ntitle: [unclosed\n---\nstill scanned [[also-broken]]\n"
    )
    repo.write("wiki/concepts/binary.md", b"\x00\x01\x02PNG[[x]]")
    repo.write("wiki/concepts/latin.md", "caf\xe9 [[latin-broken]]\n".encode("latin-1"))
    repo.write("wiki/concepts/huge.md", "x" * (9 * 1024 * 1024) + "[[never-scanned]]\n")
    repo.write("wiki/concepts/empty.md", "an empty link [[]] here\n")
    repo.write("wiki/a/dup.md", "one\n")
    repo.write("wiki/b/dup.md", "two [[dup]]\n")
    os.symlink(outside, repo.root / "wiki" / "concepts" / "escape.md")
    os.symlink("good.md", repo.root / "wiki" / "concepts" / "inside-link.md")
    code, found, stderr = run(repo)
    assert code == 1
    codes = by_code(found)
    # the in-repo symlink inside-link.md is a page of its own, so it repeats good.md's links
    assert [(p["path"].rsplit("/", 1)[1], p["target"]) for p in codes["broken-link"]] == [
        ("good.md", "broken-target"),
        ("good.md", "escape"),
        ("inside-link.md", "broken-target"),
        ("inside-link.md", "escape"),
        ("latin.md", "latin-broken"),
        ("yaml-bad.md", "also-broken"),
    ]
    assert codes["malformed-frontmatter"][0]["path"] == "wiki/concepts/yaml-bad.md"
    assert codes["malformed-frontmatter"][0]["line"] in (2, 3)  # libyaml notices at end of block
    assert codes["unreadable-page"][0]["message"].startswith("binary file")
    assert codes["invalid-utf8"][0]["path"] == "wiki/concepts/latin.md"
    assert "over the 8 MB limit" in codes["page-too-large"][0]["message"]
    assert codes["symlink-escape"][0]["path"] == "wiki/concepts/escape.md"
    assert codes["empty-link"][0]["line"] == 1 and codes["empty-link"][0]["col"] == 15
    assert codes["ambiguous-link"][0]["path"] == "wiki/b/dup.md"
    assert "secret" not in json.dumps(found)


def test_bad_input_in_the_index_too(repo: Repo) -> None:
    repo.write("wiki/ok.md", "[[bin]]\n")
    repo.write("wiki/bin.md", b"\x00\xff")
    repo.write("wiki/yaml.md", "---\n: : :\n---\n")
    repo.git("add", "-A")
    os.symlink("/etc/passwd", repo.root / "wiki" / "evil.md")
    repo.git("add", "wiki/evil.md")
    code, found, _ = run(repo, "--staged")
    assert (
        code == 1
    )  # the gate fails closed: a staged page it cannot check is an error (security.md)
    # the error takes the place of the page's unreadable-page warning (one line per page)
    assert sorted(p["code"] for p in found) == [
        "empty-page",
        "malformed-frontmatter",
        "symlink-escape",
        "unchecked-page",
    ]  # yaml.md has no body


def test_malformed_config_is_a_clear_usage_error(repo: Repo) -> None:
    repo.write(".llmwiki/config.toml", "wiki_dir = [\n")
    proc = repo.llmwiki("check")
    assert proc.returncode == 2 and proc.stderr.startswith("Error: .llmwiki/config.toml:")
    repo.write(".llmwiki/config.toml", 'wiki_dir = "../outside"\n')
    proc = repo.llmwiki("check")
    assert proc.returncode == 2 and "must be a folder inside the repository" in proc.stderr
