"""``orphan-page``: a page no other page links to (off by default: turn it on with
``orphan-page = "warning"`` under ``[check.severity]``).

Whether a page is an orphan depends on every other page's links, not on its own bytes and
the wiki's names, so it is not a page problem (cached per page): it is computed for a whole
wiki from its page scans, and cached per git tree by the engine. The wiki's home page and
folder notes (``index.md``, ``_index.md``, ``README.md``) and the journal (``log.md`` at the
wiki root) are entry points, never orphans.
"""

from __future__ import annotations

from ..problems import Problem, make
from ..wiki.generated import is_journal
from ..wiki.model import Wiki
from ..wiki.slug import parse_target
from .links import md_keys, split_md_key

ENTRY_STEMS = frozenset({"index", "_index", "readme"})


def linked_pages(wiki: Wiki) -> set[str]:
    """Paths of the pages some other page links to (a wikilink or a markdown link)."""
    resolved: dict[str, str | None] = {}
    linked: set[str] = set()
    for page in wiki.pages:
        for _line, _col, _inner, text, _label, _embed in page.scan.raw_links:
            if text not in resolved:
                target = parse_target(text)
                found = (
                    wiki.resolve(target).page
                    if not (target.is_self_anchor or target.is_empty)
                    else None
                )
                resolved[text] = found.path if found is not None else None
            path = resolved[text]
            if path is not None and path != page.path:
                linked.add(path)
        for _link, key in md_keys(page):
            path, _ = split_md_key(key)
            if path and path != page.path and path in wiki.by_path:
                linked.add(path)
    return linked


def orphan_problems(wiki: Wiki) -> list[Problem]:
    linked = linked_pages(wiki)
    return [
        make(
            page.path,
            1,
            1,
            "orphan-page",
            f"orphan page: no other page links to {page.id}; link it from a related page or the index, "
            "or delete it",
            page.id,
        )
        for page in wiki.pages
        if page.path not in linked
        and page.stem.lower() not in ENTRY_STEMS
        and not is_journal(page.path, wiki.root_dir)
    ]
