"""Source notes a reader would keep (issue 36, item 4), on generated equivalents of the real
documents measured in docs/compile.md (distribution manuals, READMEs and PDFs are kept out of
the repository for their licences): titles from <title>, an ATX or setext heading, PDF
metadata, else the first line; no prolog, image, copyright line, navigation or table of
contents as a summary; passages that end at sentence ends; PDF running headers, page numbers
and line-end hyphenation removed; related pages on the first run."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import yaml

from llmwiki_git.compiler.convert import without_running_lines

from ..conftest import Repo
from .minipdf import minimal_pdf

FAST = {"LLMWIKI_EMBEDDING_PROVIDER": "none"}

#: Shaped like a texinfo HTML manual page: an XML prolog, navigation, a logo, a licence
#: paragraph, then a definition list whose entries continue on indented lines.
MANUAL = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html><head><title>Groups (a manual)</title></head><body>
<div class="header"><p>Next: <a href="Users.html">Users</a>, Up: <a href="index.html">Top</a>
&nbsp; [<a href="Index.html">Index</a>]</p></div>
<p><img src="logo.png" alt="the logo"/></p>
<p>Copyright (C) 2024 The Authors. This document is free; you can redistribute it and/or
modify it under the terms of the licence.</p>
<h2>Groups</h2>
<p>A group gathers users who share access to files and devices on one machine.</p>
<dl>
<dt>cdrom</dt><dd><p>This group can be used locally to give a set of users access to
a CD-ROM drive, and nothing else on the system.</p></dd>
<dt>audio</dt><dd><p>This group can be used locally to give a set of users access to
an audio device, such as a sound card or a microphone.</p></dd>
</dl>
</body></html>
"""

README = """[![Build Status](https://ci.example.org/badge.svg)](https://ci.example.org/)

![sodiumlike](https://example.org/logo.png)
============

Sodiumlike is a small library for encryption, decryption and signatures, easy to use.

It is portable, cross-compilable and installable, and its `crypto_box` API never changes
between releases, so programs written against it keep working.
"""


def run(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.llmwiki(*args, env=FAST)


def _meta(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(loaded, dict)
    return loaded


def _notes(repo: Repo, prefix: str, *files: str) -> dict[str, str]:
    assert run(repo, "ingest", *files).returncode == 0
    proc = run(repo, "compile", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    branch = out["candidate"]["branch"]
    return {p["sources"][0]: repo.git("show", f"{branch}:{p['target']}") for p in out["pages"]}


def _quoted(note: str) -> list[str]:
    return [ln for ln in note.split("\n---\n", 1)[1].splitlines() if "^[" in ln]


def test_an_html_manual_gives_prose_not_navigation_logos_or_licences(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/groups.html", MANUAL)
    note = _notes(repo, prefix, "inbox/groups.html")["sources/groups.md"]
    meta = _meta(note)
    assert meta["title"] == "Groups (a manual)"
    assert meta["summary"].startswith("A group gathers users")
    source = (repo.root / "sources/groups.md").read_text()
    assert "xml version" not in source
    for line in _quoted(note):
        assert not re.search(r"Next:|Copyright|logo|xml version|\]\(", line), line
        text = re.sub(r"\s*\^\[[^\]]*\]$", "", line)
        assert text.endswith((".", "!", "?", ":")), line  # passages end at sentence ends
    assert any("a CD-ROM drive, and nothing else" in line for line in _quoted(note))


def test_a_readme_is_titled_by_its_setext_heading_and_summarized_by_its_prose(
    repo: Repo, prefix: str
) -> None:
    repo.write("inbox/README.md", README)
    note = _notes(repo, prefix, "inbox/README.md")["sources/readme.md"]
    meta = _meta(note)
    assert meta["title"] == "sodiumlike"
    assert meta["summary"].startswith("Sodiumlike is a small library")
    assert "badge" not in note and "logo.png" not in note


def test_a_pdf_without_title_metadata_is_titled_by_its_first_line(repo: Repo, prefix: str) -> None:
    repo.write(
        "inbox/scan.pdf",
        minimal_pdf(
            [
                "Tape Archives Explained",
                "The archive format stores each file after a header of fixed size, and the expan-",
                "sion of sparse files is left to the reader.",
            ]
        ),
    )
    note = _notes(repo, prefix, "inbox/scan.pdf")["sources/scan.md"]
    source_text = (repo.root / "sources/scan.md").read_text()
    assert _meta(note)["title"] == "Tape Archives Explained"
    assert "expansion of sparse files" in source_text and "expan-" not in source_text


def test_running_headers_page_numbers_and_hyphenation_leave_pdf_text() -> None:
    body = "Trees hold blobs and other trees, and each one is named by the hash of its bytes."
    pages = [
        f"Chapter 2: Objects {n}\n{body}\nthe trees are hashed for com-\npression.\n{n}"
        for n in range(3, 9)
    ]
    kept = without_running_lines(pages)
    assert all(not k.startswith("Chapter") for k in kept), kept
    assert all(not re.search(r"\n\d+$", k) for k in kept), kept
    assert all("compression." in k and "com-" not in k for k in kept), kept
    assert all(body in k for k in kept)


def test_notes_of_one_first_run_link_to_each_other(repo: Repo, prefix: str) -> None:
    repo.write(
        "inbox/raft.md", "# Raft\n\nRaft elects a leader; see also Paxos for the older design.\n"
    )
    repo.write(
        "inbox/paxos.md", "# Paxos\n\nPaxos reaches consensus in rounds, as Raft later does.\n"
    )
    notes = _notes(repo, prefix, "inbox/raft.md", "inbox/paxos.md")
    assert "[[paxos]]" in notes["sources/raft.md"], notes["sources/raft.md"]
    assert "[[raft]]" in notes["sources/paxos.md"], notes["sources/paxos.md"]
    cid = re.search(r"compile-[0-9a-f]{8}", repo.git("branch", "--list", "llmwiki/review/*"))
    assert cid is not None
    approved = run(repo, "review", "approve", cid.group())
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert run(repo, "check").returncode == 0
