#!/usr/bin/env python3
"""`llmwiki check` on the real vaults of ``../shared/corpora``, per problem code and flavour.

    python benchmarks/vaults.py [--corpora DIR] [--code DIR] [--flavour NAME] [--json]

Each corpus is copied into a fresh git repository (committed whole, as a user adopting
llmwiki would have it), the marker file its editor leaves is added (Dendron's
``dendron.yml``, Logseq's ``logseq/config.edn``, Foam's ``.vscode/extensions.json``, Hugo's
``hugo.toml``), and ``llmwiki check --json`` runs in a fresh process; then the
pre-commit hook's own command (``check --staged --base HEAD``) on the unchanged commit,
and the hook's verdict on the first commit (``check --staged`` against the empty tree, as
the hook runs when HEAD is unborn). ``--code DIR`` runs another checkout of llmwiki (the
"before" of docs/check.md); ``--flavour`` forces one flavour on every corpus
(``plain``: the common rules). ``--assets``: before committing, an empty file is put at each
non-markdown path a ``broken-relative-link`` names (the images and files the corpora, which
keep only markdown, left out of the real repositories), so the hook's verdict is the one
on the whole repository. Prints a markdown table: corpus, code, count. Always exits 0:
a measurement, not a test (the corpus suite, tests/corpora, asserts the numbers).
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
MARKERS = {
    "dendron-vault": ("dendron.yml", "version: 5\n"),
    "logseq-docs": ("logseq/config.edn", "{}\n"),
    "foam-docs": (".vscode/extensions.json", '{"recommendations": ["foam.foam-vscode"]}\n'),
    "hugo-docs": ("hugo.toml", "title = 'docs'\n"),
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _llmwiki(root: Path, code: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("LLMWIKI_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "llmwiki_git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )


def _add_assets(root: Path, code: Path) -> int:
    """Create the missing non-markdown files the pages link to (see the module doc)."""
    found = json.loads(_llmwiki(root, code, "check", "--json").stdout)["problems"]
    made = 0
    for problem in found:
        target = str(problem.get("target") or "")
        if problem["code"] != "broken-relative-link" or target.lower().endswith(".md"):
            continue
        path = (root / target).resolve()
        if root.resolve() in path.parents and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
            made += 1
    return made


def measure(
    corpus: Path, code: Path, flavour: str | None, assets: bool = False
) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / corpus.name
        # Logseq's docs are the pages/ folder of a graph: kept there, so that `../assets/…`
        # names the graph's assets/ folder (which the corpus does not hold) as in the graph.
        shutil.copytree(corpus, root / "pages" if corpus.name == "logseq-docs" else root)
        marker = MARKERS.get(corpus.name)
        if marker is not None:
            (root / marker[0]).parent.mkdir(parents=True, exist_ok=True)
            (root / marker[0]).write_text(marker[1], encoding="utf-8")
        if flavour is not None:
            (root / ".llmwiki").mkdir(exist_ok=True)
            (root / ".llmwiki" / "config.toml").write_text(f'flavour = "{flavour}"\n')
        _git(root, "init", "-q", "-b", "main")
        made = _add_assets(root, code) if assets else 0
        _git(root, "add", "-A")
        first = _llmwiki(root, code, "check", "--staged")  # the hook, HEAD unborn
        _git(root, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "-q", "-m", "vault")
        proc = _llmwiki(root, code, "check", "--json")
        found = json.loads(proc.stdout)["problems"]
        hook = _llmwiki(root, code, "check", "--staged", "--base", "HEAD")
        return {
            "corpus": corpus.name,
            "counts": dict(sorted(Counter(p["code"] for p in found).items())),
            "problems": found,
            "first_commit_hook": first.returncode,
            "unchanged_commit_hook": hook.returncode,
            "assets_added": made,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpora",
        type=Path,
        default=Path(os.environ.get("LLMWIKI_CORPORA") or HERE.parent / "shared" / "corpora"),
    )
    parser.add_argument("--code", type=Path, default=HERE, help="the llmwiki checkout to run")
    parser.add_argument("--flavour", help="force this flavour on every corpus")
    parser.add_argument("--json", action="store_true", help="print every problem as JSON")
    parser.add_argument(
        "--assets",
        action="store_true",
        help="put an empty file at each missing non-markdown path pages link to first",
    )
    args = parser.parse_args()
    folders = sorted(p for p in args.corpora.iterdir() if p.is_dir())
    results = [
        measure(folder, args.code.resolve(), args.flavour, args.assets) for folder in folders
    ]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print("| corpus | code | count |\n|---|---|---:|")
    for result in results:
        counts = result["counts"]
        assert isinstance(counts, dict)
        for code, count in counts.items():
            print(f"| {result['corpus']} | {code} | {count} |")
        verdict = {0: "pass", 1: "refuse"}
        print(
            f"| {result['corpus']} | hook, first commit | "
            f"{verdict.get(int(str(result['first_commit_hook'])), 'error')} |"
        )
        print(
            f"| {result['corpus']} | hook, unchanged commit | "
            f"{verdict.get(int(str(result['unchanged_commit_hook'])), 'error')} |"
        )


if __name__ == "__main__":
    main()
