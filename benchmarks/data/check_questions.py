#!/usr/bin/env python3
"""Validate benchmarks/data/questions.jsonl (stdlib only).

Usage:
    python benchmarks/data/check_questions.py [CORPORA_DIR]

CORPORA_DIR defaults to ``../shared/corpora`` relative to the repository root
(the folder two levels above this file). Each line of questions.jsonl must be a
JSON object with ``id``, ``corpus``, ``split`` (``tune``: may be used to choose
parameters; ``report``: only ever measured), ``question``, ``answers`` (1-3 POSIX paths
relative to the corpus folder, ending in ``.md``, the page that answers best first) and
``note``. Every answer must exist as a file under ``CORPORA_DIR/<corpus>/``; ids must be
unique; no page is the first answer of more than three questions (a page that also answers
is listed after it, so that a ranking finding it is not counted wrong).
Exits non-zero on any problem and prints counts per corpus.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
QUESTIONS = HERE / "questions.jsonl"
REQUIRED = ("id", "corpus", "split", "question", "answers", "note")
SPLITS = ("tune", "report")
MAX_ANSWERS = 3
MAX_QUESTIONS_PER_PAGE = 3


def main(argv: list[str]) -> int:
    corpora = Path(argv[1]) if len(argv) > 1 else REPO_ROOT / ".." / "shared" / "corpora"
    corpora = corpora.resolve()
    if not corpora.is_dir():
        print(f"error: corpora folder not found: {corpora}", file=sys.stderr)
        return 2

    errors: list[str] = []
    seen_ids: set[str] = set()
    per_corpus: Counter[str] = Counter()
    per_page: Counter[tuple[str, str]] = Counter()

    with QUESTIONS.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: invalid JSON ({exc})")
                continue
            if not isinstance(row, dict):
                errors.append(f"{where}: not a JSON object")
                continue
            missing = [k for k in REQUIRED if k not in row]
            if missing:
                errors.append(f"{where}: missing keys {missing}")
                continue
            qid, corpus, answers = row["id"], row["corpus"], row["answers"]
            where = f"line {lineno} ({qid})"
            if qid in seen_ids:
                errors.append(f"{where}: duplicate id")
            seen_ids.add(qid)
            if row["split"] not in SPLITS:
                errors.append(f"{where}: split must be one of {SPLITS}, not {row['split']!r}")
            if not isinstance(row["question"], str) or not row["question"].strip():
                errors.append(f"{where}: empty question")
            if not isinstance(answers, list) or not 1 <= len(answers) <= MAX_ANSWERS:
                errors.append(f"{where}: answers must be a list of 1-{MAX_ANSWERS} paths")
                continue
            if len(set(answers)) != len(answers):
                errors.append(f"{where}: repeated answer path")
            corpus_dir = corpora / corpus
            if not corpus_dir.is_dir():
                errors.append(f"{where}: unknown corpus {corpus!r} (no folder {corpus_dir})")
                continue
            per_corpus[corpus] += 1
            for position, ans in enumerate(answers):
                p = PurePosixPath(ans)
                if "\\" in ans or p.is_absolute() or ".." in p.parts or p.suffix != ".md":
                    errors.append(
                        f"{where}: bad answer path {ans!r} (want relative POSIX path to a .md file)"
                    )
                    continue
                if not (corpus_dir / Path(*p.parts)).is_file():
                    errors.append(f"{where}: answer not found: {corpus}/{ans}")
                if position == 0:
                    per_page[(corpus, ans)] += 1

    for (corpus, page), n in sorted(per_page.items()):
        if n > MAX_QUESTIONS_PER_PAGE:
            errors.append(
                f"{corpus}/{page}: first answer of {n} questions (max {MAX_QUESTIONS_PER_PAGE})"
            )

    total = sum(per_corpus.values())
    print(f"corpora: {corpora}")
    for corpus, n in sorted(per_corpus.items()):
        pages = sum(1 for (c, _) in per_page if c == corpus)
        print(f"  {corpus}: {n} questions, {pages} distinct first answers")
    print(f"  total: {total} questions, {len(seen_ids)} unique ids")

    if errors:
        print(f"FAILED: {len(errors)} problem(s)", file=sys.stderr)
        for e in errors:
            print(f"  - {e}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
