"""How readable are the offline source notes of real documents? One command, prints a table.

    python benchmarks/source_notes.py DOCS_FOLDER [--code PATH]

Makes a new git repository in a temporary folder, ingests every file of DOCS_FOLDER (HTML
manuals, PDFs, READMEs, text files: documents nobody here wrote, kept out of this repository
for their licences), compiles offline, approves the run exactly as staged, runs `llmwiki
check`, and counts the junk lines of each note: a line of the note's summary or key passages
(or its `summary:`) that holds an image, a link that cannot resolve, an XML prolog, a
copyright notice, a table-of-contents line, a lone page number, a line-end hyphenation left
in ("expan- sion"), an unbalanced backtick, or that ends mid-sentence. ``--code`` runs
another checkout of llmwiki-git (e.g. the commit before a change) for a before/after table.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

JUNK = {
    "image": re.compile(r"!\[[^\]]*\]\("),
    "relative-link": re.compile(r"\]\((?!https?://)[^)]*\)"),
    "prolog": re.compile(r"xml version=|<!DOCTYPE", re.IGNORECASE),
    "copyright": re.compile(r"copyright|\(c\)\s*\d{4}|©|all rights reserved", re.IGNORECASE),
    "toc": re.compile(r"(\.\s*){4,}\d|^(- )?(table of )?contents\b", re.IGNORECASE),
    "page-number": re.compile(r"(^|\s)(page\s+)?\d{1,3}(\s+of\s+\d+)?\s+\^\[", re.IGNORECASE),
    "hyphenation": re.compile(r"[a-z]{2,}- [a-z]{2,}"),
}
_CITE = re.compile(r"\s*\^\[[^\]]*\]\s*$")


def junk_of(line: str) -> list[str]:
    """The junk kinds of one quoted line (empty: a line a reader would keep)."""
    found = [kind for kind, rule in JUNK.items() if rule.search(line)]
    text = _CITE.sub("", line).removeprefix("- ").strip()
    if text.count("`") % 2:
        found.append("open-backtick")
    if text and not re.search(r"[.!?:)\"'”’]$", text):
        found.append("mid-sentence")
    return found


def quoted_lines(note: str) -> list[str]:
    """The summary line and the key passages of a note, and its `summary:` value."""
    head, _, body = note.partition("\n---\n")
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("#")]
    quoted = [ln for ln in lines if "^[" in ln]
    summary = re.search(r"^summary: (.*)$", head, re.MULTILINE)
    return quoted + ([summary.group(1)] if summary else [])


def run(code: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(code), "LLMWIKI_EMBEDDING_PROVIDER": "none"}
    return subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("docs", type=Path)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "wiki"
        (repo / "wiki").mkdir(parents=True)
        (repo / "wiki" / "home.md").write_text("---\ntitle: Home\n---\nMy notes.\n")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(["git", "commit", "-qm", "start"], cwd=repo, check=True)
        inbox = repo / "inbox"
        inbox.mkdir()
        files = sorted(p for p in args.docs.iterdir() if p.is_file())
        for p in files:
            (inbox / p.name).write_bytes(p.read_bytes())
        ingested = run(args.code, repo, "ingest", *[f"inbox/{p.name}" for p in files])
        if ingested.returncode != 0:
            sys.exit(f"ingest failed: {ingested.stderr}")
        compiled = run(args.code, repo, "compile", "--json")
        import json

        out = json.loads(compiled.stdout) if compiled.stdout.strip() else {}
        candidate = (out.get("candidate") or {}).get("id")
        staged = len(out.get("pages", []))
        approved = (
            run(args.code, repo, "review", "approve", candidate).returncode == 0
            if candidate
            else False
        )
        checked = run(args.code, repo, "check", "--json")
        errors = (
            sum(
                1
                for p in json.loads(checked.stdout).get("problems", [])
                if p["severity"] == "error"
            )
            if checked.stdout.strip().startswith("{")
            else "?"
        )
        branch = "HEAD" if approved else f"llmwiki/review/{candidate}"
        print(f"{'note':42} {'type':8} {'lines':>5} {'junk':>4}  junk kinds")
        total = junky = 0
        for page in out.get("pages", []):
            text = subprocess.run(
                ["git", "show", f"{branch}:{page['target']}"],
                cwd=repo,
                capture_output=True,
                text=True,
            ).stdout
            source = page["sources"][0]
            kind = re.search(r"^sourceType: (\w+)", (repo / source).read_text(), re.MULTILINE)
            title = re.search(r"^title: (.*)$", text, re.MULTILINE)
            lines = quoted_lines(text)
            kinds = [junk_of(line) for line in lines]
            bad = sum(1 for k in kinds if k)
            total, junky = total + len(lines), junky + bad
            shown = sorted({k for ks in kinds for k in ks})
            name = f"{Path(source).stem} ({title.group(1)[:20] if title else '?'})"
            print(
                f"{name[:42]:42} {kind.group(1) if kind else '?':8} {len(lines):>5} {bad:>4}  {', '.join(shown)}"
            )
        print(
            f"\n{len(files)} documents; {staged} notes staged; approved as staged: {approved}; "
            f"check errors after approval: {errors}; junk lines {junky} of {total}"
        )


if __name__ == "__main__":
    main()
