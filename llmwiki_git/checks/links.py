"""Link classification, the one copy: what a link's target text means in one wiki (an
`Outcome`), and the problems a page's links have given those outcomes."""

from __future__ import annotations

from collections.abc import Callable

from typing import Any

from ..problems import Problem
from ..problems import make as make_problem
from ..wiki.model import Page, Wiki
from ..wiki.pages import PageScan
from ..wiki.slug import LinkTarget, parse_target, slugify

# What a link's target text means in one wiki, independent of where the link stands:
#   ("self",) | ("empty",) | ("broken", key) | ("ok", key, ref, alternatives, page_id, anchor_problem)
Outcome = tuple[Any, ...]
# A link that resolves cleanly reports nothing, whatever it resolves to: those outcomes (most
# of them) are this one tuple, which the facts file writes and loads once.
PLAIN_OK: Outcome = ("ok", "", None, (), None, None)


def _source_text(inner: str, embed: bool) -> str:
    return f"{'!' if embed else ''}[[{inner}]]"


def _anchor_what(scan: PageScan, target: LinkTarget) -> str | None:
    """Why ``target``'s anchor is missing from the page scanned as ``scan`` (None if present)."""
    anchor = (target.anchor or "").split("#")[-1].strip()
    if not anchor:
        return None
    if anchor.startswith("^"):
        return None if anchor[1:] in scan.blocks else f"no block ^{anchor[1:]}"
    return None if slugify(anchor) in scan.headings else f'no heading "{anchor}"'


class Checker:
    """Resolves each distinct target text once and renders a page's problems from that."""

    def __init__(self, wiki: Wiki | None, outcomes: dict[str, Outcome] | None = None) -> None:
        self.wiki = wiki
        self.outcomes: dict[str, Outcome] = outcomes if outcomes is not None else {}

    def outcome(self, text: str) -> Outcome | None:
        known = self.outcomes.get(text)
        if known is None:
            if self.wiki is None:
                return None
            target = parse_target(text)
            if target.is_self_anchor:
                known = ("self",)
            elif target.is_empty:
                known = ("empty",)
            else:
                found = self.wiki.resolve(target)
                if not found.resolved:
                    known = ("broken", target.key)
                else:
                    what = _anchor_what(found.page.scan, target) if (found.page is not None and target.anchor) else None
                    if what or found.alternatives:
                        known = ("ok", target.key, found.ref, tuple(found.alternatives),
                                 found.page.id if found.page is not None else None, what)
                    else:
                        known = PLAIN_OK
            self.outcomes[text] = known
        return known

    def page_problems(self, page: Page, fallback: Callable[[str], Outcome | None] | None = None) -> list[Problem] | None:
        """The problems of ``page``; None when a target's outcome is unknown (fast path only)."""
        out = [make_problem(page.path, issue.line, 1, issue.code, issue.message) for issue in page.scan.issues]
        outcomes = self.outcomes
        for line, col, inner, target_text, _label, embed in page.scan.raw_links:
            known = outcomes.get(target_text) or self.outcome(target_text)
            if known is PLAIN_OK:
                continue  # most links: resolved, nothing to report
            if known is None and fallback is not None:
                known = fallback(target_text)
            if known is None:
                return None
            source = _source_text(inner, embed)
            kind = known[0]
            if kind == "self":
                target = parse_target(target_text)
                what = _anchor_what(page.scan, target)
                if what:
                    out.append(make_problem(page.path, line, col, "broken-anchor", f"broken anchor {source}: {what} in this page", target.key))
            elif kind == "empty":
                out.append(make_problem(page.path, line, col, "empty-link", f"empty link {source}: it names no page", ""))
            elif kind == "broken":
                out.append(make_problem(page.path, line, col, "broken-link", f"broken link {source}", known[1]))
            else:
                _, key, ref, alternatives, page_id, what = known
                if alternatives:
                    fix = f"use a path like [[{ref}]]" if "/" in (ref or "") else f"use [[/{ref}]] (its path from the wiki root)"
                    out.append(make_problem(page.path, line, col, "ambiguous-link",
                                      f"ambiguous link {source}: resolved to {ref}, also matches {', '.join(alternatives)}; {fix}",
                                      key))
                if what:
                    where = "this page" if page_id == page.id else page_id
                    out.append(make_problem(page.path, line, col, "broken-anchor", f"broken anchor {source}: {what} in {where}", key))
        return out
