"""The WordPiece tokenizer of all-MiniLM-L6-v2, built from the vocabulary this package ships.

``llmwiki_git/data/minilm-vocab.txt`` is the model's ``vocab.txt`` (30,522 entries, the
uncased BERT vocabulary; Apache-2.0, see ``llmwiki_git/data/NOTICE``). The pipeline below is
the one the model's ``tokenizer.json`` declares: BERT normalisation (clean text, Chinese
characters split, lower case, accents stripped because lower case is on), BERT
pre-tokenisation, WordPiece with ``[UNK]`` and ``##`` continuations (at most 100 characters a
word), ``[CLS] … [SEP]`` around each text, and the five special tokens matched verbatim.
Ids are identical to the ``tokenizer.json`` of sentence-transformers/all-MiniLM-L6-v2
(``benchmarks/tokenizer_ids.py`` compares them on real text).

Nothing is downloaded: the vocabulary is a package data file.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

__all__ = ["VOCAB_RESOURCE", "build_tokenizer", "vocab_text"]

VOCAB_RESOURCE = "minilm-vocab.txt"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def vocab_text() -> str:
    """The packaged vocabulary, one token a line, line number = token id."""
    return (
        resources.files("llmwiki_git").joinpath("data", VOCAB_RESOURCE).read_text(encoding="utf-8")
    )


def build_tokenizer(max_length: int) -> Any:
    """A ``tokenizers.Tokenizer`` for all-MiniLM-L6-v2: truncates to ``max_length``, no padding.

    Raises ImportError when the ``tokenizers`` library is not installed.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {token: index for index, token in enumerate(vocab_text().splitlines())}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tokenizer.add_special_tokens([AddedToken(token, normalized=False) for token in SPECIAL_TOKENS])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer
