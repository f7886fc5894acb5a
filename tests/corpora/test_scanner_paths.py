"""The scanner's fast path against its full line-by-line scan on every page of the real
corpora: identical links (with positions), headings and block ids."""

from __future__ import annotations

import pytest

from llmwiki_git.wiki import frontmatter
from llmwiki_git.wiki.pages import decode
from llmwiki_git.wiki.scanner import _fast_scan, full_scan

from .conftest import corpus


@pytest.mark.parametrize("name", ["foam-docs", "dendron-vault"])
def test_fast_path_equals_full_scan_on_a_real_corpus(name: str) -> None:
    pages = sorted(corpus(name).rglob("*.md"))
    taken = 0
    for path in pages:
        text, _ = decode(path.read_bytes())
        if text is None:
            continue
        start = frontmatter.parse(text).body_line
        fast = _fast_scan(text, start)
        if fast is not None:
            taken += 1
            assert fast == full_scan(text, start), path
    assert taken > len(pages) // 3, (taken, len(pages))
