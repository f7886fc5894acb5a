"""Folding one page into another without breaking a link: ``llmwiki merge-pages A B``.

`plan_merge` takes a wiki, the page to keep (A) and the page to fold into it (B), and a way
to read file texts, and returns a `MergePlan`: A's new text -- B's title and aliases added to
A's ``aliases`` (every other frontmatter byte kept, key order too), B's body appended under a
heading of B's title -- and the link edits that make every link to B reach A
(`wiki.rewrite.plan_links`: every link naming B's file, ``[[B]]``, becomes ``[[A]]`` (a link
by one of B's aliases still reaches A by it and is left alone), ``[[B#Heading]]`` ``[[A#Heading]]``
since the heading moved with B's body, ``![[B]]`` ``![[A#B's title]]`` so an embed still shows
B's text only; B's own relative markdown links follow its text to A's folder). It reads and
writes nothing else: the review service stages the plan as a ``merge/1`` candidate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import FrontmatterRefused
from .frontmatter import parse, raw_start, split, string_list
from .model import Page, Wiki
from .rewrite import RewritePlan, apply_edits, plan_links
from .slug import slugify
from .titles import opening_heading, page_title

# A value YAML reads as the same string when written plain (no quotes): letters first, then
# letters, digits and a few marks; words that YAML reads as booleans or null are quoted.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.()-]*(?: [A-Za-z0-9_.()-]+)*")
_NOT_STRINGS = frozenset("yes no true false on off null y n".split())
_KEY = re.compile(r"aliases[ \t]*:")
_ITEM = re.compile(r"[ \t]*-[ \t]+")
_LINK_BREAKING = re.compile(r"[\[\]|#^]")  # a heading with these cannot be named inside [[...]]


def yaml_scalar(text: str) -> str:
    """``text`` as a YAML scalar that reads back as exactly ``text``: plain when that is
    safe, else double-quoted (JSON's escapes, which YAML reads alike)."""
    if _PLAIN.fullmatch(text) and text.lower() not in _NOT_STRINGS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _line_end(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _extended_raw(
    raw: str, old: list[str], added: Sequence[str], nl: str, rewrite_key: bool
) -> str:
    """The frontmatter text ``raw`` with ``added`` after its aliases: appended to a block or
    a one-line flow list as written, or (``rewrite_key``, or any other form) the ``aliases``
    key rewritten as a block list of the old aliases and the new ones; a new key at the end
    when there is none."""
    lines = raw.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if _KEY.match(line)), None)
    if at is None:
        tail = raw if not raw or raw.endswith(("\n", "\r")) else raw + nl
        return tail + f"aliases:{nl}" + "".join(f"  - {yaml_scalar(a)}{nl}" for a in added)
    end = at + 1
    while end < len(lines) and lines[end][:1] in (" ", "\t", "-"):
        end += 1
    key_line = lines[at]
    value = key_line[_KEY.match(key_line).end() :].strip()  # type: ignore[union-attr]
    items = [line for line in lines[at + 1 : end] if _ITEM.match(line)]
    if not rewrite_key and not value and items:  # a block list: more items, indented the same
        prefix = _ITEM.match(items[-1]).group(0)  # type: ignore[union-attr]
        new = [f"{prefix}{yaml_scalar(a)}{nl}" for a in added]
        return "".join(lines[:end] + new + lines[end:])
    if (
        not rewrite_key and value.startswith("[") and value.endswith("]") and end == at + 1
    ):  # a flow list
        close = key_line.rindex("]")
        inner = key_line[key_line.index("[") + 1 : close]
        joined = ", ".join(yaml_scalar(a) for a in added)
        new_line = (
            key_line[:close].rstrip() + (", " if inner.strip() else "") + joined + key_line[close:]
        )
        return "".join(lines[:at] + [new_line] + lines[end:])
    rendered = f"aliases:{nl}" + "".join(f"  - {yaml_scalar(a)}{nl}" for a in [*old, *added])
    return "".join(lines[:at] + [rendered] + lines[end:])


def with_aliases(text: str, added: Sequence[str]) -> str:
    """``text`` with ``added`` appended to its frontmatter ``aliases`` (a frontmatter block
    is created for a page without one); every other byte of the page is kept, and the result
    is read back to prove it: FrontmatterRefused when the frontmatter is malformed or the
    aliases cannot be extended so."""
    if not added:
        return text
    meta = parse(text)
    if meta.error:
        raise FrontmatterRefused(meta.error)
    value = meta.data.get("aliases")
    if value is not None and not isinstance(value, (str, list)):
        raise FrontmatterRefused("its aliases are neither a list nor a string")
    old = string_list(value)
    if isinstance(value, list) and len(old) != len(value):
        raise FrontmatterRefused("its aliases hold values that are not strings")
    expected = {**meta.data, "aliases": [*old, *added]}
    start = raw_start(text)
    nl = _line_end(text[: meta.body_offset] if start is not None else text)
    attempts = []
    if start is None or meta.raw is None:
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        block = (
            f"---{nl}aliases:{nl}"
            + "".join(f"  - {yaml_scalar(a)}{nl}" for a in added)
            + f"---{nl}"
        )
        attempts.append(bom + block + text[len(bom) :])
    else:
        for rewrite_key in (False, True):
            raw = _extended_raw(meta.raw, old, added, nl, rewrite_key)
            attempts.append(text[:start] + raw + text[start + len(meta.raw) :])
    for candidate in attempts:
        check = parse(candidate)
        if not check.error and dict(check.data) == expected:
            return candidate
    raise FrontmatterRefused(
        "its aliases could not be extended without changing how the rest of it reads"
    )


def section_heading(title: str, body: str) -> tuple[str, bool]:
    """The heading B's body sits under in A: its opening heading when that is its title
    (kept as written), else a new ``## <title>`` (returned with True: to be written)."""
    opening = opening_heading(body)
    if opening is not None and slugify(opening) == slugify(title):
        return opening, False
    return title, True


_OPENING_ATX = re.compile(r"\A((?:[ \t]*\r?\n)*) {0,3}#(?=[ \t])")
_OPENING_SETEXT = re.compile(r"\A((?:[ \t]*\r?\n)*[^\r\n]+\r?\n {0,3})=+(?=[ \t]*(?:\r?\n|\Z))")


def _demoted_opening(body: str) -> str:
    """``body`` with its opening level-1 heading made level 2 (``# T`` -> ``## T``, a setext
    ``===`` underline -> ``---``); the rest byte for byte."""
    if _OPENING_ATX.match(body):
        return _OPENING_ATX.sub(lambda m: m.group(1) + "##", body, count=1)
    return _OPENING_SETEXT.sub(lambda m: m.group(1) + "---", body, count=1)


def folded(keep_text: str, fold_text: str, title: str) -> tuple[str, str]:
    """A's text with B's body appended under its section heading (A's line ends; B's body
    byte for byte, its leading blank lines dropped), and that heading's text."""
    nl = _line_end(keep_text)
    _, offset, _ = split(fold_text)
    body = fold_text[offset:] if offset else fold_text.removeprefix("\ufeff")
    body = body.lstrip("\r\n")
    heading, write = section_heading(title, body)
    if not write:  # B's own "# Title" becomes a section of A, not a second title
        body = _demoted_opening(body)
    section = (f"## {heading}{nl}{nl}" if write else "") + body
    out = keep_text if keep_text.endswith(("\n", "\r")) or not keep_text else keep_text + nl
    out = out + (nl if out.strip() else "") + section
    return (out if out.endswith(("\n", "\r")) else out + nl), heading


@dataclass
class MergePlan:
    """What folding ``fold`` (B) into ``keep`` (A) does: A's new text (``document``), the
    aliases A gains, the heading B's body sits under, and the link edits of every other
    page (``links``; A's and B's own edits are in ``document`` already)."""

    keep: str
    fold: str
    title: str  # B's title
    aliases: list[str]  # what A's aliases gain: B's title and aliases it did not have
    heading: str
    document: str
    links: RewritePlan
    texts: dict[str, str] = field(default_factory=dict)  # every file read, by path
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def writes(self) -> dict[str, str | None]:
        """Every file the merge writes (path -> new text; None: deleted), A first, then B,
        then the other pages by path."""
        out: dict[str, str | None] = {self.keep: self.document, self.fold: None}
        for rewrite in sorted(self.links.edited_files, key=lambda f: f.path):
            if rewrite.path not in out:
                out[rewrite.path] = apply_edits(self.texts[rewrite.path], rewrite.edits)
        return out

    def to_json(self) -> dict[str, object]:
        edited = sorted(self.links.edited_files, key=lambda f: f.path)
        return {
            "into": self.keep,
            "from": self.fold,
            "title": self.title,
            "aliasesAdded": list(self.aliases),
            "heading": self.heading,
            "edits": [
                {"path": f.path, **e.to_json()}
                for f in edited
                for e in sorted(f.edits, key=lambda e: e.start)
            ],
            "links": self.links.links,
            "pages": len(edited),
            "refusals": list(self.refusals),
            "notes": list(self.notes),
        }


def plan_merge(
    wiki: Wiki, keep: str, fold: str, read: Callable[[list[str]], Mapping[str, str]]
) -> MergePlan:
    """The merge of the page at ``fold`` into the page at ``keep`` (paths from the repository
    root, both pages of ``wiki``); ``read`` gives texts by path. Its ``refusals`` say what is
    in the way (nothing is refused by raising)."""
    a, b = wiki.by_path[keep], wiki.by_path[fold]
    texts: dict[str, str] = dict(read([keep, fold]))

    def reading(paths: list[str]) -> Mapping[str, str]:
        found = read([p for p in paths if p not in texts])
        texts.update(found)
        return {p: texts[p] for p in paths if p in texts}

    refusals: list[str] = []
    notes: list[str] = []
    missing = [p for p in (keep, fold) if p not in texts]
    if missing:
        return _unreadable(keep, fold, texts, missing)
    keep_text, fold_text = texts[keep], texts[fold]
    fold_meta = parse(fold_text)
    title = page_title(fold_meta.data, fold_text[fold_meta.body_offset :], b.stem)
    aliases = _new_aliases(a, b, title)
    try:
        provisional = with_aliases(keep_text, aliases)
    except FrontmatterRefused as exc:
        refusals.append(
            f"{keep}: cannot add the aliases {', '.join(aliases)} to its frontmatter: {exc}; "
            "fix its frontmatter first"
        )
        provisional = keep_text
    provisional, heading = folded(provisional, fold_text, title)
    after = wiki.without_page(fold).with_page(keep, provisional)
    anchor = None if _LINK_BREAKING.search(heading) else heading
    links = plan_links(
        wiki,
        after,
        {fold: keep},
        reading,
        {keep: keep_text, fold: fold_text},
        new_slugs={slugify(name) for name in aliases},
        refusals=refusals,
        embed_anchor={fold: anchor} if anchor else None,
        by_name=True,
    )
    notes.extend(links.notes)
    edits = {f.path: f.edits for f in links.edited_files}
    document = provisional
    if not refusals:
        document, _ = folded(
            with_aliases(apply_edits(keep_text, edits.get(keep, [])), aliases),
            apply_edits(fold_text, edits.get(fold, [])),
            title,
        )
    notes.extend(_merge_notes(a, b, keep, fold, fold_meta.data))
    return MergePlan(keep, fold, title, aliases, heading, document, links, texts, refusals, notes)


def _unreadable(keep: str, fold: str, texts: dict[str, str], missing: list[str]) -> MergePlan:
    """The plan of a merge refused because a page cannot be read as text."""
    refusals = [f"{p}: cannot read it as UTF-8 text" for p in missing]
    return MergePlan(keep, fold, "", [], "", "", RewritePlan({}, {}), texts, refusals)


def _new_aliases(a: Page, b: Page, title: str) -> list[str]:
    """The names page ``a`` gains from ``b`` (its title, then its aliases): those ``a`` does
    not answer to already, each once."""
    taken = {slugify(a.stem), a.scan.title_slug, *a.scan.alias_slugs}
    aliases: list[str] = []
    for name in [title, *b.scan.aliases]:
        slug = slugify(name)
        if slug and slug not in taken:
            taken.add(slug)
            aliases.append(name)
    return aliases


def _merge_notes(
    a: Page, b: Page, keep: str, fold: str, fold_data: Mapping[str, object]
) -> list[str]:
    """What a merge tells its author: shared headings and block ids, frontmatter left behind."""
    notes = []
    shared = sorted(set(a.scan.headings) & set(b.scan.headings))
    if shared:
        notes.append(
            f"both pages have the heading{'s' if len(shared) > 1 else ''} {', '.join(shared[:5])}: a link "
            f"[[{a.stem}#…]] to {'them' if len(shared) > 1 else 'it'} reaches {keep}'s own (the first)"
        )
    blocks = sorted(set(a.scan.blocks) & set(b.scan.blocks))
    if blocks:
        notes.append(
            f"both pages use the block id{'s' if len(blocks) > 1 else ''} "
            f"{', '.join('^' + x for x in blocks[:5])}: rename one after the merge"
        )
    dropped = [k for k in fold_data if k not in ("title", "aliases")]
    if dropped:
        notes.append(
            f"{fold}'s other frontmatter ({', '.join(map(str, dropped[:8]))}) is not carried over: "
            f"add to {keep} what it should keep after approving"
        )
    return notes
