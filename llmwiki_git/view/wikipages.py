"""The wiki's pages as the view shows them: a page (`/page/<path>`) rendered with its links
classified, its backlinks with their sentence, its provenance and a stale or retracted
banner; a source's cited lines (`/source/<path>`); the check's problems (`/check`)."""

from __future__ import annotations

import os

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .. import confine
from ..errors import LlmwikiError, PathRefused
from ..pages.service import clean_relative, find_page, read_confined
from ..wiki import frontmatter
from ..wiki.pages import decode
from ..wiki.provenance import claims, in_sources
from ..wiki.titles import page_title
from .html import h, layout, notice, table, url
from .site import Site, stale_marks


def _error(site: Site, title: str, text: str, status: int = 404) -> HTMLResponse:
    return HTMLResponse(
        layout(title, f'<pre class="error" role="alert">{h(text)}</pre>', read_only=site.read_only),
        status_code=status,
    )


def page(site: Site, request: Request) -> Response:
    path = request.path_params["path"]
    with site.scope():
        wiki = site.wiki()
        try:  # the pages service's lookup and confined read, on the view's scanned wiki
            found = find_page(wiki, path=path)
            text = read_confined(site.ws, wiki, found.path)
        except LlmwikiError as exc:
            return _error(site, "No such page", str(exc))
        meta = frontmatter.parse(text)
        body = text[meta.body_offset :]
        title = page_title(meta.data, body, found.stem)
        result = site.check(wiki)
        marks = stale_marks(result, found.path)
        renderer = site.renderer(wiki, body, marks)
        html = renderer.render(body, text[: meta.body_offset].count("\n"))
        backlinks = [e for e in site.edges(wiki) if e.target == found.path]
        sentences = _sentences(site, [(e.source, e.line) for e in backlinks[:200]])
    parts = []
    told = claims(meta.data)
    if told.retracted:
        parts.append(
            notice(
                "Retracted: this page drew on a source that was withdrawn: "
                + ", ".join(told.retracted),
                "banner bad",
            )
        )
    if marks:
        parts.append(
            notice("Stale: " + "; ".join(f"{k}: {v}" for k, v in marks.items()), "banner bad")
        )
    parts.append(f'<article class="page">{html}</article>')
    lead = f"{site.ws.project_prefix}/" if site.ws.project_prefix else ""
    prov = [
        f'<li><a href="{h(url("/source/", lead + s))}">{h(s)}</a>'
        f"{' — stale: ' + h(marks[lead + s]) if lead + s in marks else ''}</li>"
        for s in told.sources
    ]
    if prov:
        parts.append(f"<section><h2>Provenance</h2><ul>{''.join(prov)}</ul></section>")
    items = "".join(
        f'<li><a href="{h(url("/page/", src))}#L{line}">{h(src)}:{line}</a> — {h(text)}</li>'
        for (src, line), text in sentences.items()
    )
    parts.append(
        f'<section><h2>Backlinks ({len(backlinks)})</h2><ul class="backlinks">{items or "<li>none</li>"}</ul></section>'
        f'<p><a href="{h(url("/graph", "", page=found.path))}">Graph around this page</a></p>'
    )
    return HTMLResponse(layout(title, "".join(parts), read_only=site.read_only))


def _sentences(site: Site, where: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Each (page, line) with the text of that line (the sentence holding the link)."""
    out: dict[tuple[str, int], str] = {}
    texts: dict[str, list[str]] = {}
    for path, line in where:
        if path not in texts:
            try:
                texts[path] = _read(site, path).splitlines()
            except LlmwikiError:
                texts[path] = []
        lines = texts[path]
        out[(path, line)] = lines[line - 1].strip()[:300] if 0 < line <= len(lines) else ""
    return out


def _read(site: Site, rel: str) -> str:
    """A file of the repository, confined to it (no symlink out, no hidden folder, size-bound)."""
    rel = clean_relative(rel, "path")
    try:
        real = confine.confined(site.ws.root, rel)
        data = confine.read_file(real, max_bytes=site.ws.settings.max_page_mb << 20, name=rel)
    except PathRefused as exc:
        raise LlmwikiError(f"{rel}: {exc.reason}; refused") from exc
    text = decode(data)[0]
    if text is None:
        raise LlmwikiError(f"{rel} is a binary file; refused")
    return text


def source(site: Site, request: Request) -> Response:
    path = request.path_params["path"]
    if not in_sources(path, site.ws.project_prefix) or not os.path.splitext(path)[1]:
        return _error(site, "Not a source", f"{path} is not in the sources folder", 404)
    try:
        start, _, end = request.query_params.get("lines", "0-0").partition("-")
        first, last = int(start or 0), int(end or start or 0)
    except ValueError:
        return _error(site, "Bad lines", "lines must be START-END, e.g. 3-5", 400)
    with site.scope():
        try:
            text = _read(site, path)
        except LlmwikiError as exc:
            return _error(site, "Source unreadable", str(exc))
    rows = "".join(
        f'<tr id="L{n}"{" class=cited" if first <= n <= last and first else ""}>'
        f'<th scope="row">{n}</th><td><code>{h(line)}</code></td></tr>'
        for n, line in enumerate(text.splitlines(), 1)
    )
    cited = f"lines {first}-{last} cited" if first else "whole file"
    body = (
        notice(cited)
        + f'<table class="source"><caption>{h(path)}</caption><tbody>{rows}</tbody></table>'
    )
    return HTMLResponse(layout(path, body, read_only=site.read_only))


def check(site: Site, request: Request) -> Response:
    code = request.query_params.get("code", "")
    with site.scope():
        result = site.check(site.wiki())
    counts: dict[str, int] = {}
    for p in result.problems:
        counts[p.code] = counts.get(p.code, 0) + 1
    shown = [p for p in result.problems if not code or p.code == code]
    filters = " ".join(
        f'<a href="{h(url("/check", "", code=c))}"{" aria-current=true" if c == code else ""}>'
        f"{h(c)} ({n})</a>"
        for c, n in sorted(counts.items())
    )
    rows = [
        [
            h(p.severity),
            h(p.code),
            f'<a href="{h(url("/page/", p.path))}#L{p.line}">{h(p.location)}</a>'
            if p.path.endswith(".md")
            else h(p.location),
            h(p.message),
        ]
        for p in shown[:2000]
    ]
    more = (
        notice(f"Showing the first 2,000 of {len(shown):,} problems.") if len(shown) > 2000 else ""
    )
    body = (
        f'<nav aria-label="Filter by code" class="filters"><a href="/check">all ({len(result.problems)})</a> {filters}</nav>'
        + more
        + (
            table(["Severity", "Code", "Where", "Message"], rows, f"{len(shown)} problems")
            if shown
            else notice("No problems.")
        )
    )
    return HTMLResponse(layout("Problems", body, current="/check", read_only=site.read_only))
