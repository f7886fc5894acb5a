from __future__ import annotations

from llmwiki_git.retrieval.chunking import MAX_CHARS, content_hash, split_into_chunks


def para(n: int, word: str = "w") -> str:
    """``n`` chars of ``word`` repeated, no trailing space (chunking strips it)."""
    return (word * n)[:n]


def test_packs_paragraphs_up_to_target() -> None:
    body = "\n\n".join(para(300, f"p{i}") for i in range(5))
    chunks = split_into_chunks(body)
    assert [len(c.text) for c in chunks] == [602, 602, 300]
    assert "".join(c.text.replace("\n\n", "") for c in chunks) == "".join(
        para(300, f"p{i}") for i in range(5)
    )


def test_long_paragraph_split_on_sentences_then_hard_cut() -> None:
    sentences = " ".join(f"Sentence number {i} says something." for i in range(100))
    chunks = split_into_chunks(sentences)
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert all(c.text.endswith(".") for c in chunks)
    blob = "x" * 3000
    assert [len(c.text) for c in split_into_chunks(blob)] == [1400, 1400, 200]


def test_small_tail_merges_and_heading_stays_with_its_text() -> None:
    body = para(700) + "\n\n## Next section\n\n" + para(500) + "\n\ntail"
    chunks = split_into_chunks(body)
    assert chunks[0].text == para(700)
    assert chunks[1].text.startswith("## Next section\n\n")
    assert chunks[-1].text.endswith("tail")  # the 4-char tail merged into the previous chunk
    assert len(chunks) == 2


def test_hash_is_stable_and_whitespace_significant() -> None:
    assert content_hash("a b") == content_hash("a b") != content_hash("a  b")
    assert len(content_hash("x")) == 16
    assert split_into_chunks("   \n\n  ") == []
