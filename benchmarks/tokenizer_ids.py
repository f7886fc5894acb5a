"""Compare the packaged MiniLM tokenizer with a reference ``tokenizer.json``, id by id.

Usage: python benchmarks/tokenizer_ids.py REFERENCE_TOKENIZER_JSON FOLDER...

Every line and every whole file of the markdown and text files under each FOLDER is encoded
by both tokenizers (truncation at 256, as the embedder does); the script prints how many
texts were compared and exits 1 at the first difference. The reference file is the model's
``tokenizer.json`` from any copy of sentence-transformers/all-MiniLM-L6-v2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tokenizers import Tokenizer

from llmwiki_git.retrieval.minilm_tokenizer import SPECIAL_TOKENS, build_tokenizer

MAX_LENGTH = 256
EXTRA = [
    "",
    " ",
    "[CLS] [MASK] x[SEP]y [unk]",
    "Ünïcödé café naïve 東京 😀 \x00\t\u200b",
    "a" * 150,
    "word " * 400,
]


def texts(folders: list[str]) -> list[str]:
    out = list(EXTRA) + list(SPECIAL_TOKENS)
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.suffix in {".md", ".txt"} and path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                out.append(text)
                out.extend(line for line in text.splitlines() if line.strip())
    return out


def main(argv: list[str]) -> int:
    reference = Tokenizer.from_file(argv[0])
    reference.no_padding()
    reference.enable_truncation(max_length=MAX_LENGTH)
    ours = build_tokenizer(MAX_LENGTH)
    corpus = texts(argv[1:])
    for text in corpus:
        a, b = reference.encode(text), ours.encode(text)
        if a.ids != b.ids or a.attention_mask != b.attention_mask or a.type_ids != b.type_ids:
            print(f"DIFFERENT ids for {text[:80]!r}:\n {a.ids[:40]}\n {b.ids[:40]}")
            return 1
    print(f"identical ids on {len(corpus)} texts ({sum(len(t) for t in corpus)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
