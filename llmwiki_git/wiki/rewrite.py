"""Moving pages and files without breaking a link: a plan of text edits per file.

`plan_moves` takes a wiki, the files to move (old path -> new path, from the repository
root) and a way to read file texts, and returns a `RewritePlan`: for every file whose text
must change, the exact spans to replace, plus what refuses the move. It reads and writes
nothing else, so ``llmwiki mv`` (one commit), and later a reviewed move or a page merge
(candidate branches) share it.

What is rewritten, found by the one scanner (never in code, comments or frontmatter):

* wikilinks that resolve to a moved page or file and would not resolve to it by the same
  text afterwards: ``[[old]]``, ``[[old|label]]``, ``[[old#Heading]]``, ``![[old]]``,
  ``[[folder/old]]``. Only the name is replaced: label, anchor, embed mark, spacing and a
  table's ``\\|`` stay as written. A bare name stays bare (the new file stem), a path stays
  a path (from the wiki root, or from the repository root when it was written that way), a
  ``.md`` suffix stays. A link that reaches the page through one of its aliases still does
  afterwards and is left alone.
* markdown links ``[text](../old.md#anchor)`` to a moved file, and the relative links of a
  moved page whose folder changes: the new relative path, anchor and query kept,
  percent-escaping kept where the old destination used it.

What refuses the move (`RewritePlan.refusals`): a new path that exists, a moved page that
would leave the wiki or stop being markdown, a new name other pages already answer to (links
to it would become ambiguous), and any link elsewhere whose meaning the move would change.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from .destinations import destination
from .frontmatter import split
from .model import Page, Resolution, Wiki, page_kind
from .scanner import MdLink, RawLink, scan_raw
from .slug import parse_target, slugify

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` at ``start:end`` of a file's text (``line``/``col``: 1-based, where
    ``old`` starts, for people)."""

    line: int
    col: int
    start: int
    end: int
    old: str
    new: str
    kind: str = "link"  # or "title": a Dendron note's derived title (`_retitle`)

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {
            "line": self.line,
            "col": self.col,
            "old": self.old,
            "new": self.new,
        }
        if self.kind != "link":
            found["kind"] = self.kind
        return found


@dataclass
class FileRewrite:
    """One file the move changes: moved (``new_path`` differs), edited, or both."""

    path: str
    new_path: str
    edits: list[Edit] = field(default_factory=list)


@dataclass
class RewritePlan:
    moves: dict[str, str]  # every moved file: old path -> new path
    files: dict[str, FileRewrite]  # by current path: each file whose text changes
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def links(self) -> int:
        return sum(1 for f in self.files.values() for e in f.edits if e.kind == "link")

    @property
    def edited_files(self) -> list[FileRewrite]:
        return [f for f in self.files.values() if f.edits]


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with ``edits`` (non-overlapping) applied; every other character kept."""
    out = []
    at = 0
    for edit in sorted(edits, key=lambda e: e.start):
        out.append(text[at : edit.start])
        out.append(edit.new)
        at = edit.end
    out.append(text[at:])
    return "".join(out)


def decode(data: bytes) -> str:
    """File bytes as text that encodes back to the same bytes (`encode`): undecodable bytes
    are kept as surrogates, a byte-order mark as its character."""
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def moved_page(page: Page, new_path: str, root_dir: str) -> Page:
    prefix = f"{root_dir}/" if root_dir else ""
    new_id = new_path[len(prefix) : -3]
    return Page(
        new_path, new_id, new_id.rsplit("/", 1)[-1], page_kind(new_id), page.blob, page.scan
    )


def wiki_after(
    wiki: Wiki, moves: Mapping[str, str], scans: Mapping[str, Page] | None = None
) -> Wiki:
    """``wiki`` with the files of ``moves`` at their new paths (``scans``: a moved page whose
    content differs, by its new path)."""
    pages = []
    for page in wiki.pages:
        new = moves.get(page.path)
        if new is None:
            pages.append(page)
        else:
            pages.append((scans or {}).get(new) or moved_page(page, new, wiki.root_dir))
    return wiki.with_pages(pages, [moves.get(path, path) for path in wiki.other_files])


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def _same(found: Resolution, page: Page | None, file: str | None) -> bool:
    if found.alternatives:
        return False
    return (page is not None and found.page is not None and found.page.path == page.path) or (
        file is not None and found.file == file
    )


def _check_targets(wiki: Wiki, after: Wiki, moves: Mapping[str, str], refusals: list[str]) -> None:
    """Refuse new paths that exist, moves a page cannot make, and new page names that links
    could not reach unambiguously."""
    existing = {p.path for p in wiki.pages} | set(wiki.other_files)
    prefix = f"{wiki.root_dir}/" if wiki.root_dir else ""
    for old, new in moves.items():
        if new in existing and new not in moves:
            refusals.append(f"{new} exists; move it away first or pick another name")
        elif old in wiki.by_path and (not new.startswith(prefix) or new[-3:].lower() != ".md"):
            refusals.append(
                f"{old} is a page: {new} would leave the wiki root or stop being markdown"
            )
    for old, new in moves.items():
        page = after.by_path.get(new) if old in wiki.by_path else None
        if page is None:
            continue
        found = after.resolve(parse_target(page.stem))
        others = [ref for ref in (found.ref, *found.alternatives) if ref and ref != page.id]
        if others:
            refusals.append(
                f"{new}: [[{page.stem}]] would {'also ' if found.ref == page.id else ''}reach "
                f"{', '.join(others)}: links to the moved page would be ambiguous; pick another name"
            )


def plan_moves(
    wiki: Wiki,
    moves: Mapping[str, str],
    read: Callable[[list[str]], Mapping[str, str]],
    contents: Mapping[str, str] | None = None,
) -> RewritePlan:
    """The edits that keep every link of ``wiki`` whole when the files of ``moves`` (old path
    -> new path, from the repository root) move. ``read`` gives the texts of files (by current
    path, `decode`d). ``contents``: a moved page's text when it is not the one in ``wiki``
    (a rename the user already made and edited), by old path."""
    moves = dict(moves)
    contents = dict(contents or {})
    refusals: list[str] = []
    scans = {}
    if contents:
        from .pages import scan_page

        for old, text in contents.items():
            page = wiki.by_path.get(old)
            if page is not None:
                moved = moved_page(page, moves[old], wiki.root_dir)
                scans[moves[old]] = moved._replace(
                    scan=scan_page(encode(text), dialect=wiki.flavour.dialect)
                )
    after = wiki_after(wiki, moves, scans)
    _check_targets(wiki, after, moves, refusals)
    new_slugs = {
        slugify(posixpath.basename(new)[:-3]) for old, new in moves.items() if old in wiki.by_path
    }
    new_names = {
        posixpath.basename(new).lower() for old, new in moves.items() if old not in wiki.by_path
    }
    plan = plan_links(
        wiki,
        after,
        moves,
        read,
        contents,
        new_slugs=new_slugs,
        new_names=new_names,
        refusals=refusals,
    )
    if wiki.flavour.dendron_targets:
        _retitle(wiki, plan, read, contents)
    return plan


def _retitle(
    wiki: Wiki,
    plan: RewritePlan,
    read: Callable[[list[str]], Mapping[str, str]],
    contents: Mapping[str, str],
) -> None:
    """Dendron: a moved note whose ``title:`` is the one Dendron derives from its name (the
    last part of ``dendron.topic.lookup``: "Lookup") gets the title of its new name, as
    Dendron's own rename gives it; a title the author chose stays."""
    titled = []
    for old, new in plan.moves.items():
        page = wiki.by_path.get(old)
        title = page.scan.title if page is not None else None
        if page is None or not title or not page.scan.meta_lines[0]:
            continue
        old_leaf = page.stem.rsplit(".", 1)[-1]
        new_leaf = posixpath.basename(new)[:-3].rsplit(".", 1)[-1]
        if old_leaf != new_leaf and slugify(title) == slugify(old_leaf):
            titled.append((old, title, _derived_title(title, old_leaf, new_leaf)))
    texts = dict(read([old for old, _, _ in titled if old not in contents]))
    texts.update(contents)
    for old, title, new_title in titled:
        text = texts.get(old)
        line = wiki.by_path[old].scan.meta_lines[0]
        if text is None:
            continue
        starts = _line_starts(text)
        end = starts[line] if line < len(starts) else len(text)
        found = re.compile(r"title:[ \t]*(['\"]?)(.*?)\1[ \t]*(?:\r?\n|\r|$)").match(
            text, starts[line - 1], end
        )
        if found is None or found.group(2) != title:
            continue  # not written plainly: left as it is
        start = found.start(2)
        col = start - starts[line - 1] + 1
        plan.files[old].edits.append(
            Edit(line, col, start, found.end(2), title, new_title, "title")
        )
        plan.notes.append(
            f"{old}:{line}: title {title!r} becomes {new_title!r}, the title Dendron gives "
            f"the new name (it was the one derived from the old name)"
        )


def _derived_title(title: str, old_leaf: str, new_leaf: str) -> str:
    """The title Dendron would give ``new_leaf`` in the style ``title`` had for ``old_leaf``."""
    if title == old_leaf:
        return new_leaf
    if title == old_leaf.capitalize():
        return new_leaf.capitalize()
    return " ".join(word.capitalize() for word in re.split(r"[-_ ]+", new_leaf) if word)


@dataclass
class _Plan:
    """What planning the edits of one wiki change needs at every link."""

    wiki: Wiki
    after: Wiki
    moves: Mapping[str, str]
    refusals: list[str]
    embed_anchor: Mapping[str, str]
    by_name: bool = (
        False  # rewrite a link that names a moved page's file even if an alias still reaches it
    )
    before_cache: dict[str, Resolution] = field(default_factory=dict)
    after_cache: dict[str, Resolution] = field(default_factory=dict)

    def before(self, text: str) -> Resolution:
        if text not in self.before_cache:
            read = self.wiki.flavour.link_text(text)  # Dendron's dendron://vault/ and ranges
            self.before_cache[text] = self.wiki.resolve(parse_target(read))
        return self.before_cache[text]

    def later(self, text: str) -> Resolution:
        if text not in self.after_cache:
            read = self.wiki.flavour.link_text(text)
            self.after_cache[text] = self.after.resolve(parse_target(read))
        return self.after_cache[text]


def plan_links(
    wiki: Wiki,
    after: Wiki,
    moves: Mapping[str, str],
    read: Callable[[list[str]], Mapping[str, str]],
    contents: Mapping[str, str] | None = None,
    *,
    new_slugs: Collection[str] = (),
    new_names: Collection[str] = (),
    refusals: list[str] | None = None,
    embed_anchor: Mapping[str, str] | None = None,
    by_name: bool = False,
) -> RewritePlan:
    """The edits that keep every link of ``wiki`` whole when it becomes ``after``: a link that
    reaches a file of ``moves`` (its path -> the path that answers for it in ``after``: where
    it moved, or for a page merge the page it is folded into) is rewritten to reach that path,
    unless its text already does; a link whose target is one of ``new_slugs`` (page names) or
    ``new_names`` (file names) that answer differently in ``after`` refuses the change, as does
    a link that cannot be rewritten unambiguously. A moved file's own relative markdown links
    follow it to its new folder. ``embed_anchor``: for a moved page, the heading an embed of
    the whole page (``![[old]]``) is pointed at (a merge: the section holding its body).
    ``by_name``: a link that names a moved page by its file name is rewritten even when the
    page keeps answering to that name by an alias (a merge: B's title becomes an alias of A,
    but editors that resolve file names only would find ``[[B]]`` broken)."""
    contents = dict(contents or {})
    notes: list[str] = []
    ctx = _Plan(
        wiki, after, moves, refusals if refusals is not None else [], embed_anchor or {}, by_name
    )
    candidates = [
        page.path for page in wiki.pages if _wanted(ctx, page, new_slugs, new_names, notes)
    ]
    texts: dict[str, str] = dict(read([p for p in candidates if p not in contents]))
    texts.update({p: t for p, t in contents.items() if p in candidates})
    files: dict[str, FileRewrite] = {old: FileRewrite(old, new) for old, new in moves.items()}
    for path in candidates:
        content = texts.get(path)
        if content is None:
            ctx.refusals.append(f"{path}: cannot read it to rewrite its links")
            continue
        edits = _page_edits(ctx, path, content)
        if edits:
            files.setdefault(path, FileRewrite(path, moves.get(path, path))).edits = edits
    return RewritePlan(dict(moves), files, ctx.refusals, notes)


def _wanted(
    ctx: _Plan, page: Page, new_slugs: Collection[str], new_names: Collection[str], notes: list[str]
) -> bool:
    """Whether ``page`` has a link to rewrite (one reaching a moved file, or a moved page's
    own relative link). A link naming a new name whose meaning would change refuses the
    change; one that was broken and will resolve is noted."""
    wiki, moves, after = ctx.wiki, ctx.moves, ctx.after
    wanted = page.path in moves and bool(page.scan.md_links)
    for line, col, inner, text, _label, _embed in page.scan.raw_links:
        target = parse_target(wiki.flavour.link_text(text))
        if target.is_self_anchor or target.is_empty:
            continue
        found = ctx.before(text)
        if (found.page is not None and found.page.path in moves) or (
            found.file is not None and found.file in moves
        ):
            wanted = True
        elif target.slug in new_slugs or (target.file_name or "").lower() in new_names:
            now = ctx.later(text)
            if found.resolved and not _same(
                now, _moved(found.page, moves, after), _moved_file(found.file, moves)
            ):
                ctx.refusals.append(
                    f"{page.path}:{line}:{col}: [[{inner}]] resolves to {found.ref} today "
                    f"and would resolve to {now.ref or 'nothing'}"
                    f"{' (ambiguous)' if now.alternatives else ''} after the move"
                )
            elif not found.resolved and now.resolved:
                notes.append(
                    f"{page.path}:{line}:{col}: [[{inner}]] was broken and will resolve to "
                    f"{now.ref}"
                )
    if not wanted and page.scan.md_links:
        wanted = any(_md_target(page.path, url) in moves for _, _, _, url in page.scan.md_links)
    return wanted


def _moved(page: Page | None, moves: Mapping[str, str], after: Wiki) -> Page | None:
    if page is None:
        return None
    return after.by_path.get(moves.get(page.path, page.path))


def _moved_file(file: str | None, moves: Mapping[str, str]) -> str | None:
    return None if file is None else moves.get(file, file)


def _md_target(page_path: str, url: str) -> str | None:
    """The repository path a markdown link's destination names (None: no file path)."""
    path, _ = destination(page_path, url)
    return path or None


def _page_edits(ctx: _Plan, path: str, text: str) -> list[Edit]:
    """The edits of one file's text (its links found by the scanner in ``text`` itself)."""
    _, _, body_line = split(text.removeprefix("\ufeff"))
    links, _headings, _blocks, md = scan_raw(text, body_line, ctx.wiki.flavour.dialect)
    starts = _line_starts(text)
    edits: list[Edit] = []
    for link in links:
        edit = _wikilink_edit(ctx, path, link, starts, text)
        if edit is not None:
            edits.append(edit)
    for md_link in md:
        edit = _markdown_edit(ctx.moves, path, md_link, starts)
        if edit is not None:
            edits.append(edit)
    return edits


def _wikilink_edit(
    ctx: _Plan, path: str, link: RawLink, starts: list[int], text: str
) -> Edit | None:
    line, col, inner, target_text, _label, embed = link
    target = parse_target(ctx.wiki.flavour.link_text(target_text))
    if target.is_self_anchor or target.is_empty:
        return None
    moves, after = ctx.moves, ctx.after
    found = ctx.before(target_text)
    page = found.page if (found.page is not None and found.page.path in moves) else None
    file = found.file if (found.file is not None and found.file in moves) else None
    if page is None and file is None:
        return None
    want_page, want_file = _moved(page, moves, after), _moved_file(file, moves)
    # An embed of a whole page folded into another keeps showing that page's text only.
    section = (
        ctx.embed_anchor.get(page.path)
        if embed and page is not None and target.anchor is None
        else None
    )
    still = _same(ctx.later(target_text), want_page, want_file) and not (
        ctx.by_name and page is not None and target.slug == slugify(page.stem)
    )
    if still and section is None:
        return None  # an alias, or a name the moved file keeps: still reaches it
    inner_start, placed, stripped, lead, vault = _name_part(ctx, link, starts, text)
    if not placed:
        ctx.refusals.append(
            f"{path}:{line}:{col}: could not place [[{inner}]] in the text; not rewritten"
        )
        return None
    new_name = (
        stripped
        if still
        else _new_wikilink_name(ctx.wiki, stripped, page, want_page, file, want_file)
    )
    if section is not None:
        new_name += "#" + section
    candidate = vault + new_name + target_text.strip()[len(vault) + len(stripped) :]
    now = ctx.later(candidate)
    if not _same(now, want_page, want_file):
        ctx.refusals.append(
            f"{path}:{line}:{col}: [[{inner}]] cannot be rewritten to reach "
            f"{want_page.id if want_page else want_file}: [[{candidate}]] would be "
            f"{'ambiguous' if now.alternatives else 'broken'}"
        )
        return None
    start = inner_start + lead
    return Edit(
        line, start - starts[line - 1] + 1, start, start + len(stripped), stripped, new_name
    )


def _name_part(
    ctx: _Plan, link: RawLink, starts: list[int], text: str
) -> tuple[int, bool, str, int, str]:
    """Where a wikilink's name is in ``text``: the inner text's offset, whether the inner
    text is found there, the name (stripped, without a vault prefix), the characters before
    it in the inner text, and the vault prefix (``dendron://vault/``)."""
    line, col, inner, _target_text, _label, embed = link
    # The name part of the inner text: before "|" (or a table's "\|") and before "#"; after
    # the "|" where the flavour writes the label first (Dendron's [[label|target]]).
    inner_start = starts[line - 1] + col - 1 + (3 if embed else 2)
    head = inner.split("|", 1)[0]
    if head.endswith("\\") and "|" in inner:
        head = head[:-1]
    placed = text[inner_start : inner_start + len(inner)] == inner
    if ctx.wiki.flavour.label_first and "|" in inner:
        pipe = inner.index("|") + 1
        inner_start += pipe
        head = inner[pipe:]
    name = head.split("#", 1)[0]
    stripped = name.strip()
    lead = len(name) - len(name.lstrip())
    vault = ctx.wiki.flavour.vault_prefix(stripped)  # kept as written: dendron://vault/
    return inner_start, placed, stripped[len(vault) :], lead + len(vault), vault


def _new_wikilink_name(
    wiki: Wiki,
    written: str,
    page: Page | None,
    new_page: Page | None,
    file: str | None,
    new_file: str | None,
) -> str:
    """The name to write for a link that named ``written`` (a bare name, a path, with or
    without ``.md``), in the same form."""
    md = written.lower().endswith(".md")
    base = written[:-3] if md else written
    parts = [p for p in base.replace("\\", "/").split("/")]
    hinted = len(parts) > 1
    if new_page is not None and page is not None:
        if not hinted:
            name = new_page.stem
        else:
            hints = [p for p in parts[:-1] if p.strip() not in ("", ".", "..")]
            depth = page.id.count("/")
            name = (
                f"{wiki.root_dir}/{new_page.id}"
                if (len(hints) > depth and wiki.root_dir)
                else new_page.id
            )
        return name + (written[len(base) :] if md else "")
    assert new_file is not None
    if not hinted:
        return posixpath.basename(new_file)
    prefix = f"{wiki.root_dir}/" if wiki.root_dir else ""
    return new_file[len(prefix) :] if prefix and new_file.startswith(prefix) else new_file


def _markdown_edit(
    moves: Mapping[str, str], path: str, link: MdLink, starts: list[int]
) -> Edit | None:
    line, _col, url_col, url = link
    dest, hash_mark, anchor = url.partition("#")
    dest, query_mark, query = dest.partition("?")
    if not dest:
        return None
    target = _md_target(path, url)
    new_here = moves.get(path, path)
    if target is None or target.startswith("../") or target == "..":
        return None
    new_target = moves.get(target, target)
    if new_target == target and new_here == path:
        return None
    relative = posixpath.relpath(new_target, posixpath.dirname(new_here) or ".")
    if dest.startswith("./") and not relative.startswith("."):
        relative = "./" + relative
    if "%" in dest:
        relative = quote(relative, safe="/.-_~!$&'()*+,;=:@")
    elif " " in relative and " " not in dest:
        relative = relative.replace(" ", "%20")
    if relative == dest:
        return None
    start = starts[line - 1] + url_col - 1
    return Edit(line, url_col, start, start + len(dest), dest, relative)
