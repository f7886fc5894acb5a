"""``llmwiki ingest FILE|FOLDER|URL…``: documents become ``sources/<slug>.md``, in one
commit made under the repository lock by the one write transaction.

Every input is read and converted before anything is written, and refused with the reason
(binary, empty, a symlink, inside ``.git`` or another hidden folder of the repository,
already in ``sources/``, too large, a URL of another content type): one bad input writes
nothing. A file outside the repository is read as named (the user asked for it; the MCP
server, confined to the repository, never calls this). A file whose source is already
exactly at ``sources/<slug>.md`` is left alone; when nothing changes, no commit is made.
Sources are the user's raw material, never pages: the wiki's table of contents does not list
them and the link checker does not read them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from .. import confine
from ..errors import InputRefused, PathRefused
from ..gitstore.commits import current_branch
from ..gitstore.git import blob_id
from ..publication.document import log_entry
from ..publication.write import Project, Site, commit_files, locked
from ..wiki.provenance import in_sources, sources_dir
from ..wiki.slug import slugify
from .convert import MAX_INPUT_BYTES, MAX_SOURCE_CHARS, Converted, convert, first_line_title
from .inputs import Input

MAX_SLUG = 80


@dataclass(frozen=True)
class Ingested:
    """One file: where its source went, what it was, and whether the commit changed it
    (``added``, ``updated``, or ``unchanged``)."""

    name: str  # as given
    target: str  # repository path of the source
    kind: str  # markdown | text | html | pdf
    original_bytes: int
    chars: int
    truncated: bool
    status: str = "added"
    stripped: int = 0  # control characters (C0, C1) removed from the text

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.name,
            "source": self.target,
            "type": self.kind,
            "originalBytes": self.original_bytes,
            "chars": self.chars,
            "truncated": self.truncated,
            "status": self.status,
            "controlCharactersRemoved": self.stripped,
        }


@dataclass(frozen=True)
class IngestResult:
    files: list[Ingested]
    commit: str | None  # None: every source was already there, nothing was committed

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "commit": self.commit, "sources": [f.to_json() for f in self.files]}


def _relative_input(top: Path, path: Path, shown: str) -> str | None:
    """``path`` (absolute) as a path inside the work tree, refused when it is a symlink or
    lies in ``.git``, another hidden folder or ``sources/``; None when it is outside the
    repository (read as the user named it, a symlink refused all the same)."""
    real_top = os.path.realpath(top)
    lexical = os.path.normpath(os.path.abspath(path))
    if os.path.islink(lexical):
        raise InputRefused(
            shown, "is a symbolic link", hint="ingest the file it points to by its own path"
        )
    for base in (str(top), real_top):
        if lexical == base or lexical.startswith(base.rstrip(os.sep) + os.sep):
            rel = os.path.relpath(lexical, base).replace(os.sep, "/")
            break
    else:
        return None
    try:
        confine.refuse_symlinks(real_top, rel)
    except PathRefused as exc:
        reason = (
            f"goes through a symbolic link ({exc.path})"
            if exc.code == "symlink-write"
            else exc.reason
        )
        raise InputRefused(shown, reason, hint="ingest the file by its own path") from None
    try:
        confine.confined(real_top, rel)
    except PathRefused as exc:
        raise InputRefused(shown, exc.reason) from None
    return rel


def _read(top: Path, item: Input, project_prefix: str) -> bytes:
    """The bytes of one input: fetched already, or read from its file (bounded, never
    through a symlink)."""
    if item.data is not None:
        return item.data
    assert item.path is not None
    rel = _relative_input(top, item.path, item.shown)
    if rel is not None and in_sources(rel, project_prefix):
        raise InputRefused(
            item.shown,
            f"is already in {sources_dir(project_prefix)}/ (sources are kept as they are)",
            hint="commit it as it is, or ingest the original file instead",
        )
    try:
        return confine.read_file(
            top / rel if rel is not None else item.path,
            max_bytes=MAX_INPUT_BYTES,
            name=item.shown,
            nofollow=True,
        )
    except PathRefused as exc:
        raise InputRefused(item.shown, exc.reason) from None


def _source_document(
    converted: Converted, name: str, size: int, url: str | None = None
) -> tuple[str, int, bool]:
    """The ``sources/<slug>.md`` text: frontmatter (title, original name, type, size,
    truncation) then the converted text, cut at a line end past :data:`MAX_SOURCE_CHARS`."""
    text = converted.text.lstrip("\n")
    chars = len(text)
    truncated = chars > MAX_SOURCE_CHARS
    if truncated:
        cut = text.rfind("\n", 0, MAX_SOURCE_CHARS)
        text = text[: cut if cut > MAX_SOURCE_CHARS // 2 else MAX_SOURCE_CHARS].rstrip() + "\n"
    meta: dict[str, Any] = {
        "title": converted.title or first_line_title(text) or Path(name).stem,
        "originalName": name,
        **({"url": url} if url is not None else {}),
        "sourceType": converted.kind,
        "originalBytes": size,
        "truncated": truncated,
    }
    if truncated:
        meta["originalChars"] = chars
    for key, value in converted.meta.items():  # a markdown file's own frontmatter, after ours
        meta.setdefault(key, value)
    head = yaml.safe_dump(
        meta, sort_keys=False, allow_unicode=True, width=10**6, default_flow_style=False
    )
    return f"---\n{head}---\n\n{text}", chars, truncated


def _slug(name: str, shown: str) -> str:
    slug = slugify(Path(name).stem)
    if len(slug) > MAX_SLUG:
        slug = slug[:MAX_SLUG].rsplit("-", 1)[0] or slug[:MAX_SLUG]
    if not slug:
        raise InputRefused(
            shown,
            "its name has no letters or digits to name the source after",
            hint="rename it (e.g. notes.md), then ingest it",
        )
    return slug


def ingest_files(
    project: Project,
    inputs: Sequence[Input],
    note: Callable[[str], None] | None = None,
    progress: Callable[[int, int, str], object] | None = None,
) -> IngestResult:
    """Ingest ``inputs`` (:func:`inputs.collect`) as one commit on the current branch.
    Everything is read and converted first; one refused input writes nothing. ``progress``:
    called with (inputs read, of how many, the one just read)."""
    project.require_git("ingesting sources")
    folder = sources_dir(project.project_prefix)
    planned = _plan(project, inputs, folder, progress)
    if note is not None:
        for done, _ in planned:
            if done.stripped:
                note(
                    f"{done.name}: {done.stripped} control character(s) (C0/C1, e.g. U+0090) "
                    f"removed from its text in {done.target}"
                )
    site = Site.of(project, "ingesting sources")
    try:
        with locked(site):
            first = site.git.rev_parse("HEAD") is None or not site.git.ls_tree_under(
                "HEAD", f":(top,literal){folder}"
            )
            result = _commit(site, planned, folder)
            if first and result.commit is not None:
                site.notes.append(layout_note(site.load_wiki(result.commit).root_dir, site))
            return result
    finally:
        for text in site.notes:
            if note is not None:
                note(text)


def _plan(
    project: Project,
    inputs: Sequence[Input],
    folder: str,
    progress: Callable[[int, int, str], object] | None,
) -> list[tuple[Ingested, bytes]]:
    """Each input read and converted into its source document (what it becomes and its
    bytes), nothing written: InputRefused when two inputs would become one file."""
    top = Path(project.root)
    planned: list[tuple[Ingested, bytes]] = []
    seen: dict[str, str] = {}
    for item in inputs:
        data = _read(top, item, project.project_prefix)
        shown = item.shown
        target = f"{folder}/{_slug(item.name, shown)}.md"
        if target in seen:
            raise InputRefused(
                shown,
                f"would become {target}, as {seen[target]} does",
                hint="rename one of them, then ingest both",
            )
        seen[target] = shown
        converted = convert(shown, data)
        document, chars, truncated = _source_document(
            converted, item.name, len(data), shown if item.data is not None else None
        )
        done = Ingested(
            shown, target, converted.kind, len(data), chars, truncated, stripped=converted.stripped
        )
        planned.append((done, document.encode("utf-8")))
        if progress is not None:
            progress(len(planned), len(inputs), shown)
    return planned


def layout_note(root: str, site: Site) -> str:
    """What the first ingest says: which layout the wiki has, and where llmwiki writes."""
    from ..wiki.generated import index_path, log_path

    index, log = index_path(root), log_path(site.project_prefix)
    if root == site.project_prefix:
        where = (
            f"pages at {'the repository root' if not root else root + '/'} (the root layout: "
            "a vault whose notes sit beside llmwiki's)"
        )
        instead = (
            'for a wiki/ folder of its own instead, put wiki_dir = "wiki" in '
            ".llmwiki/config.toml (and mkdir wiki) before you compile"
        )
    else:
        where = f"pages under {root}/ (the wiki-folder layout)"
        instead = "set wiki_dir in .llmwiki/config.toml to use another folder"
    return (
        f"First sources of this wiki: {where}; compiled notes go to "
        f"{root + '/' if root else ''}concepts/, sources to {sources_dir(site.project_prefix)}/, "
        f"the table of contents to {index} and the journal to {log} where llmwiki owns them "
        f"(else to {site.state_dir.name}/). {instead[0].upper()}{instead[1:]} "
        '(docs/compile.md, "From nothing").'
    )


def _commit(site: Site, planned: list[tuple[Ingested, bytes]], folder: str) -> IngestResult:
    git = site.git
    ref = current_branch(git)  # a detached HEAD refuses before anything is written
    head = git.rev_parse("HEAD")
    # the sources folder listed once (naming every path on one command line fails past
    # some 100,000 files: "Argument list too long")
    old = (
        {e.path: e.blob for e in git.ls_tree_under(head, f":(top,literal){folder}")} if head else {}
    )
    files: dict[str, bytes] = {}
    done: list[Ingested] = []
    for item, data in planned:
        before = old.get(item.target)
        status = "unchanged" if before == blob_id(data) else "updated" if before else "added"
        done.append(replace(item, status=status))
        if status != "unchanged":
            files[item.target] = data
    if not files:
        return IngestResult(done, None)
    for target in (
        files
    ):  # a sources/ folder that is a symlink (out of the repository) is never written through
        try:
            confine.refuse_symlinks(site.top, target)
        except PathRefused as exc:
            raise InputRefused(target, exc.reason) from None
    changed = [i for i in done if i.status != "unchanged"]
    entry = log_entry(
        "ingest",
        f"{len(changed)} source{'s' if len(changed) != 1 else ''}",
        [f"{i.status.capitalize()}: {i.target} (from {i.name})" for i in changed],
    )
    commit = commit_files(
        site,
        ref=ref,
        head=head,
        files=files,
        message=_message(changed),
        entry=entry,
        what=f"ingest of {len(changed)} source(s)",
    )
    return IngestResult(done, commit)


def _message(changed: list[Ingested]) -> str:
    """The ingest commit's message: what changed, each source with where it came from."""
    subject = (
        f"llmwiki: ingest {changed[0].target}"
        if len(changed) == 1
        else f"llmwiki: ingest {len(changed)} sources"
    )
    lines = [
        f"{i.target} ({i.status}, from {i.name}, {i.kind}{', truncated' if i.truncated else ''})"
        for i in changed
    ]
    return subject + "\n\n" + "\n".join(lines) + "\n"
