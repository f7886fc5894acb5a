"""Finding and reading pages, shared by the CLI and the MCP server.

Reads are confined to the wiki root: a path is cleaned first (absolute paths, drive letters,
backslashes, ``..`` and NUL refused), then read through ``confine.py`` (symlinks leading out
of the wiki, hidden folders, FIFOs and oversize files refused).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .. import confine
from ..config import Settings
from ..errors import PathRefused, WikiError
from ..gitstore.git import blob_id
from ..publication.write import Project
from ..wiki import frontmatter
from ..wiki.citations import Citation, citation_report
from ..wiki.model import Page, Wiki
from ..wiki.pages import decode
from ..wiki.slug import parse_target
from ..wiki.titles import page_title

_DRIVE = re.compile(r"^[A-Za-z]:")


class PagesProject(Project, Protocol):
    """What reading pages takes from the workspace: the project, the settings (the page
    size limit), and its wiki read through the checker's scan cache (`cached_wiki`: a read of
    one page scans only the pages changed since the last check, not the whole wiki)."""

    @property
    def settings(self) -> Settings: ...
    def cached_wiki(self, scope: str) -> Wiki: ...


def clean_relative(value: str, what: str) -> str:
    """A relative POSIX path with no way out: absolute paths, drive letters, backslashes,
    ``..`` segments and NUL bytes are refused; ``.`` and empty segments are dropped."""
    if "\0" in value:
        raise WikiError(f"{what} {value!r} contains a NUL byte; refused")
    if value.startswith(("/", "~")) or _DRIVE.match(value):
        raise WikiError(
            f"{what} {value!r} is an absolute path; refused",
            hint="give a path relative to the repository, under the wiki root",
        )
    if "\\" in value:
        raise WikiError(f"{what} {value!r} contains a backslash; use forward slashes")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WikiError(
            f"{what} {value!r} has a '..' segment; refused",
            hint="reads are confined to the wiki root",
        )
    if not parts:
        raise WikiError(f"{what} {value!r} names no page")
    return "/".join(parts)


def find_page(wiki: Wiki, *, page_id: str | None = None, path: str | None = None) -> Page:
    """The page ``path`` (repository-relative, or from the wiki root) or ``page_id`` (an id,
    or a ``[[link]]`` target: a title, an alias) names; WikiError when none does."""
    prefix = f"{wiki.root_dir}/" if wiki.root_dir else ""
    where = wiki.root_dir or "the repository root"
    if path is not None:
        rel = clean_relative(path, "path")
        if not rel.lower().endswith(".md"):
            raise WikiError(
                f"path {path!r} is not a markdown page; only .md files under {where} can be read"
            )
        page = wiki.by_path.get(rel)
        if page is None and prefix and not rel.startswith(prefix):
            page = wiki.by_path.get(prefix + rel)  # also accept a path from the wiki root
            if page is None:
                raise WikiError(f"path {path!r} is outside the wiki root ({where}); refused")
        if page is None:
            raise WikiError(
                f"no page at {rel}", hint="use search_pages or wiki_status to find pages"
            )
        return page
    assert page_id is not None
    key = clean_relative(page_id, "pageId")
    if key.lower().endswith(".md"):
        key = key[:-3]
    found = wiki.by_id.get(key)
    if found is None:
        found = wiki.resolve(
            parse_target(key)
        ).page  # a [[link]] target: "blobs", "Blobs", an alias
    if found is None:
        raise WikiError(f"page not found: {page_id}", hint="use search_pages to find page ids")
    return found


def read_confined(project: PagesProject, wiki: Wiki, rel_path: str) -> str:
    """The text of ``rel_path`` (repository-relative), only if its real location is a .md
    file under the real wiki root (confine.py: symlinks leading out of the wiki, hidden
    folders, FIFOs and oversize files are refused)."""
    root = Path(project.root).resolve()
    wiki_root = root / wiki.root_dir if wiki.root_dir else root
    inner = rel_path[len(wiki.root_dir) + 1 :] if wiki.root_dir else rel_path
    try:
        real = confine.confined(wiki_root, inner)
        if not real.lower().endswith(".md"):
            raise WikiError(f"{rel_path} resolves to a file that is not a .md page; refused")
        data = confine.read_file(real, max_bytes=project.settings.max_page_bytes, name=rel_path)
    except PathRefused as exc:
        raise WikiError(f"{rel_path}: {exc.reason}; refused") from exc
    text, _issues = decode(data)
    if text is None:
        raise WikiError(f"{rel_path} is a binary file; refused")
    return text


def head_blobs(project: Project, paths: list[str]) -> dict[str, str]:
    """Path -> blob id at HEAD of each of ``paths`` HEAD has (none outside git or on an
    unborn branch): the version an edit proposed against a page read now is based on."""
    return project.git.blob_ids("HEAD", paths) if project.git is not None else {}


def jsonable(value: object) -> object:
    """Frontmatter values as JSON (YAML dates and timestamps become ISO strings)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


@dataclass(frozen=True)
class PageRead:
    """A page as read: its text split into frontmatter and body, the blob id of the text read
    (an edit's ``basedOn``) and of the page at HEAD."""

    page: Page
    title: str
    frontmatter: Mapping[str, object]
    body: str
    blob: str
    head_blob: str | None
    warnings: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "version": 1,
            "pageId": self.page.id,
            "path": self.page.path,
            "blobId": self.blob,
            "headBlobId": self.head_blob,
            "title": self.title,
            "frontmatter": jsonable(self.frontmatter),
            "body": self.body,
            "warnings": self.warnings,
        }


def read_page(
    project: PagesProject, *, page_id: str | None = None, path: str | None = None
) -> PageRead:
    """Find the page (`find_page`) in the work tree and read it (`read_confined`)."""
    wiki = project.cached_wiki("worktree")
    page = find_page(wiki, page_id=page_id, path=path)
    text = read_confined(project, wiki, page.path)
    meta = frontmatter.parse(text)
    warnings = []
    if meta.error:
        warnings.append(
            {
                "code": "malformed-frontmatter",
                "message": f"{page.path}:{meta.error_line}: {meta.error}",
            }
        )
    head = project.git.blob_at("HEAD", page.path) if project.git is not None else None
    body = text[meta.body_offset :]
    return PageRead(
        page,
        page_title(meta.data, body, page.stem),
        meta.data,
        body,
        blob_id(text.encode("utf-8")),
        head,
        warnings,
    )


def links_report(project: PagesProject, text: str) -> list[Citation]:
    """Each unique ``[[link]]`` of ``text`` resolved against the work tree's wiki, pending
    review (an open candidate would create it), or broken: `llmwiki links`, MCP check_links."""
    from ..publication.candidates import pending_index

    return citation_report(
        text, project.cached_wiki("worktree"), pending_index(project.git) if project.git else None
    )
