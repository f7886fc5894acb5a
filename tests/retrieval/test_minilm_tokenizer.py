"""The MiniLM tokenizer built from the packaged vocabulary.

The expected ids below were produced by the model's own ``tokenizer.json``
(sentence-transformers/all-MiniLM-L6-v2); ``benchmarks/tokenizer_ids.py`` compares the two
tokenizers on whole corpora (46,346 texts: identical).
"""

from __future__ import annotations

import hashlib

from llmwiki_git.retrieval.minilm_tokenizer import build_tokenizer, vocab_text

#: sha256 of the model's vocab.txt (the uncased BERT vocabulary, 30,522 tokens).
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

REFERENCE = {
    "hello world": [101, 7592, 2088, 102],
    "Ünïcödé café 東京 [MASK] [[wiki-links|aliases]]": [
        101,
        27260,
        7668,
        1879,
        1755,
        103,
        1031,
        1031,
        15536,
        3211,
        1011,
        6971,
        1064,
        14593,
        2229,
        1033,
        1033,
        102,
    ],
    "git's `blob <size>` header\tand\x00NUL": [
        101,
        21025,
        2102,
        1005,
        1055,
        1036,
        1038,
        4135,
        2497,
        1026,
        2946,
        1028,
        1036,
        20346,
        1998,
        11231,
        2140,
        102,
    ],
    "supercalifragilisticexpialidocious": [
        101,
        3565,
        9289,
        10128,
        29181,
        24411,
        4588,
        10288,
        19312,
        21273,
        10085,
        6313,
        102,
    ],
}


def test_packaged_vocabulary_is_the_models() -> None:
    text = vocab_text()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == VOCAB_SHA256
    assert len(text.splitlines()) == 30522


def test_ids_match_the_models_tokenizer() -> None:
    tokenizer = build_tokenizer(256)
    for text, ids in REFERENCE.items():
        assert tokenizer.encode(text).ids == ids, text
    long = tokenizer.encode("word " * 400)
    assert len(long.ids) == 256 and long.ids[0] == 101 and long.ids[-1] == 102
    assert set(long.attention_mask) == {1}  # no padding: embed() pads per batch
