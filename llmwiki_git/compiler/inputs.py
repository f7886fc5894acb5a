"""What ``llmwiki ingest`` is given on its command line, as the files to read: a file
anywhere (naming it is asking for it to be read), every file of a folder that ingest takes
(recursively, by extension), or an ``http(s)://`` URL, fetched with a size limit, a time
limit and its content type checked.

The MCP server never calls this: its tools stay confined to the repository.
"""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import InputRefused
from .convert import HTML_EXTS, MARKDOWN_EXTS, MAX_INPUT_BYTES

#: The extensions a folder's files are taken by (other files in a folder are left alone).
FOLDER_EXTS = frozenset({*MARKDOWN_EXTS, *HTML_EXTS, ".txt", ".text", ".pdf"})
#: A URL's content types ingest takes, with the extension its source is named with.
URL_TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/plain": ".txt",
    "application/pdf": ".pdf",
}
URL_TIMEOUT = 30.0  # seconds, for the connection and for each read
_URL = re.compile(r"^https?://", re.IGNORECASE)


@dataclass(frozen=True)
class Input:
    """One file to ingest: ``shown`` as the user named it (a path or a URL); ``path`` a local
    file (absolute), or ``data`` already fetched; ``name`` the file name its source is
    named after."""

    shown: str
    name: str
    path: Path | None = None
    data: bytes | None = None


def is_url(text: str) -> bool:
    return _URL.match(text) is not None


def collect(base: Path, args: Sequence[str], skip: Sequence[Path] = ()) -> list[Input]:
    """The inputs ``args`` name, relative to ``base``: files as they are, folders expanded
    (sorted; hidden folders, symbolic links and the ``skip`` folders -- the repository's
    ``sources/`` and ``.git`` -- left out), URLs fetched. InputRefused for a folder with no
    file to take, or a URL that cannot be fetched as a document."""
    found: list[Input] = []
    for arg in args:
        if is_url(arg):
            found.append(fetch(arg))
            continue
        path = Path(os.path.abspath(base / arg))
        if path.is_dir() and not path.is_symlink():
            files = list(_walk(path, {os.path.realpath(s) for s in skip}))
            if not files:
                raise InputRefused(
                    arg,
                    f"is a folder with no file ingest takes ({', '.join(sorted(FOLDER_EXTS))})",
                )
            for file in files:
                shown = os.path.join(arg, os.path.relpath(file, path))
                found.append(Input(shown, file.name, file))
        else:
            found.append(Input(arg, path.name, path))
    return found


def _walk(folder: Path, skip: set[str]) -> list[Path]:
    files: list[Path] = []
    for top, dirs, names in os.walk(folder):  # followlinks=False: a linked folder is not entered
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and not os.path.islink(os.path.join(top, d))
            and os.path.realpath(os.path.join(top, d)) not in skip
        )
        for name in sorted(names):
            full = Path(top) / name
            if (
                not name.startswith(".")
                and full.suffix.lower() in FOLDER_EXTS
                and not full.is_symlink()
            ):
                files.append(full)
    return files


class _SameSchemeRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed only to http(s) URLs (never ``file:`` or ``ftp:``)."""

    def redirect_request(
        self, req: Any, fp: IO[bytes], code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        if not is_url(newurl):
            raise InputRefused(req.full_url, f"redirects to {newurl!r}, which is not http(s)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(url: str, *, max_bytes: int | None = None, timeout: float | None = None) -> Input:
    """The document at ``url`` (http or https): at most ``max_bytes``, within ``timeout``
    seconds a read, of a content type in :data:`URL_TYPES`. urllib (the standard library)
    does this: one GET, no cookies, no scripts -- nothing a library would add is needed."""
    max_bytes = MAX_INPUT_BYTES if max_bytes is None else max_bytes
    timeout = URL_TIMEOUT if timeout is None else timeout
    opener = urllib.request.build_opener(_SameSchemeRedirects)
    request = urllib.request.Request(url, headers={"User-Agent": "llmwiki-git ingest"})
    try:
        with opener.open(request, timeout=timeout) as response:
            kind = response.headers.get_content_type()
            if kind not in URL_TYPES:
                raise InputRefused(
                    url,
                    f"is {kind}, not a document ingest takes ({', '.join(sorted(URL_TYPES))})",
                    hint="download it and convert it to markdown, HTML, text or PDF first",
                )
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > max_bytes:
                raise InputRefused(url, _too_large(int(length), max_bytes))
            data = response.read(max_bytes + 1)
            final = response.geturl()
    except InputRefused:
        raise
    except urllib.error.HTTPError as exc:
        raise InputRefused(url, f"could not be fetched: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputRefused(
            url,
            f"could not be fetched ({reason})",
            hint="check the address and the network; or download it and ingest the file",
        ) from None
    if len(data) > max_bytes:
        raise InputRefused(url, _too_large(len(data) + 1, max_bytes, at_least=True))
    return Input(url, _url_name(final, URL_TYPES[kind]), data=data)


def _too_large(size: int, limit: int, *, at_least: bool = False) -> str:
    more = "over" if at_least else f"{size / 1048576:.1f} MB,"
    return f"is {more} the {limit / 1048576:g} MB limit; not read"


def _url_name(url: str, ext: str) -> str:
    """A file name for the document at ``url``: its last path segment (else its host), with
    the extension of its content type when it has none that ingest knows."""
    parts = urllib.parse.urlsplit(url)
    stem = PurePosixPath(urllib.parse.unquote(parts.path)).name or parts.hostname or "page"
    if PurePosixPath(stem).suffix.lower() not in FOLDER_EXTS:
        stem += ext
    return stem
