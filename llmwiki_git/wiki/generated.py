"""Which pages llmwiki generated: the table of contents and the journal.

They are link-checked like any page but are never evidence (DESIGN §2): not retrieved, not
in context packs, not grounding for an answer. A user's own hand-written ``index.md`` is an
ordinary page; ``log.md`` at the wiki root, and any page written in the journal's entry
format, is a journal.

The generated index is recognised by llmwiki's marker (``GENERATED_MARKER``, an HTML
comment) or by the TypeScript tool's exact generated shape: a ``# Knowledge Wiki`` heading
and the ``_<N> pages | Generated <timestamp>_`` footer as its last line.
"""

from __future__ import annotations

import re

GENERATED_MARKER = "<!-- llmwiki:generated -->"
JOURNAL_NAME = "log.md"

_TS_FOOTER = re.compile(r"^_\d+ pages? \| Generated [^\n]*_$")
_HEADING2 = re.compile(r"^##\s+(.*)$", re.MULTILINE)
_JOURNAL_ENTRY = re.compile(r"^\[\d{4}-\d{2}-\d{2}T[\d:.]+Z\] \S+ \| ")


def is_generated_index(text: str) -> bool:
    """``text`` carries llmwiki's generated marker or is in the TypeScript tool's generated
    index format."""
    if GENERATED_MARKER in text:
        return True
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return bool(lines) and lines[0] == "# Knowledge Wiki" and bool(_TS_FOOTER.match(lines[-1]))


def is_journal_text(text: str) -> bool:
    """Every second-level heading is a journal entry (``## [ISO] op | description``), and
    there is at least one."""
    headings = _HEADING2.findall(text)
    return bool(headings) and all(_JOURNAL_ENTRY.match(h.strip()) for h in headings)


def is_journal(path: str, wiki_root: str) -> bool:
    """``path`` (from the repository root) is the journal at the root of the wiki."""
    return path == (f"{wiki_root}/{JOURNAL_NAME}" if wiki_root else JOURNAL_NAME)


def is_evidence(path: str, wiki_root: str, text: str) -> bool:
    """Whether a page may ground an answer or enter a context pack."""
    return not (is_journal(path, wiki_root) or is_generated_index(text) or is_journal_text(text))
