"""`/graph`: the link graph drawn on a canvas (static/view.js). By default the local graph
around a page or a candidate's pages (two links out and in); the whole wiki on request,
capped at :data:`CAP` nodes (the best-linked ones) with a visible notice. The nodes and edges
travel as a JSON data block, which the Content-Security-Policy lets the page's own script read."""

from __future__ import annotations

import json
from collections import deque

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..errors import LlmwikiError
from ..publication.candidates import get
from .html import h, layout, notice, url
from .site import Edge, Site

CAP = 5000
DEPTH = 2


def _local(edges: list[Edge], centres: list[str], depth: int = DEPTH) -> set[str]:
    near: dict[str, set[str]] = {}
    for e in edges:
        near.setdefault(e.source, set()).add(e.target)
        near.setdefault(e.target, set()).add(e.source)
    seen = set(centres)
    todo = deque((c, 0) for c in centres)
    while todo:
        node, d = todo.popleft()
        if d == depth:
            continue
        for other in near.get(node, ()):
            if other not in seen and len(seen) < CAP:
                seen.add(other)
                todo.append((other, d + 1))
    return seen


def graph(site: Site, request: Request) -> Response:
    centre = request.query_params.get("page", "")
    cid = request.query_params.get("candidate", "")
    whole = request.query_params.get("all", "") == "1"
    with site.scope():
        wiki = site.wiki()
        edges = site.edges(wiki)
        centres: list[str] = []
        if cid:
            try:
                t = get(site.ws.require_git("showing candidates"), cid).trailers
            except LlmwikiError as exc:
                return HTMLResponse(
                    layout("Graph", notice(str(exc), "bad"), read_only=site.read_only), 404
                )
            centres = [f.target for f in t.files] if t is not None else []
        elif centre:
            centres = [centre]
    total = len(wiki.pages)
    said = ""
    if centres and not whole:
        keep = _local(edges, [c for c in centres if c in wiki.by_path] or centres)
        said = f"Local graph: {len(keep)} pages within {DEPTH} links of {', '.join(centres)}."
    else:
        if total > CAP:
            degree: dict[str, int] = {}
            for e in edges:
                degree[e.source] = degree.get(e.source, 0) + 1
                degree[e.target] = degree.get(e.target, 0) + 1
            ranked = sorted(wiki.pages, key=lambda p: (-degree.get(p.path, 0), p.path))
            keep = {p.path for p in ranked[:CAP]}
            said = (
                f"Whole graph capped: showing the {CAP:,} best-linked of {total:,} pages. "
                "Open a page's or a candidate's local graph to see the rest."
            )
        else:
            keep = {p.path for p in wiki.pages}
            said = f"Whole graph: {total:,} pages."
    index = {p: i for i, p in enumerate(sorted(keep))}
    titles = {p.path: p.id for p in wiki.pages}
    nodes = [
        {"id": p, "label": titles.get(p, p), "href": url("/page/", p), "centre": p in centres}
        for p in index
    ]
    data = {
        "nodes": nodes,
        "edges": sorted(
            {
                (index[e.source], index[e.target])
                for e in edges
                if e.source in index and e.target in index
            }
        ),
    }
    blob = json.dumps(data, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    listing = "".join(f'<li><a href="{h(n["href"])}">{h(n["label"])}</a></li>' for n in nodes[:500])
    body = (
        notice(said, "notice graph-notice")
        + '<p><a href="/graph?all=1">Whole graph</a></p>'
        + f'<canvas id="graph" width="1100" height="700" role="img" aria-label="{h(said)} Drag to pan, scroll to zoom, click a node to open its page."></canvas>'
        + f'<script type="application/json" id="graph-data">{blob}</script>'
        + f"<details><summary>The pages drawn, as a list</summary><ul>{listing}</ul></details>"
    )
    return HTMLResponse(layout("Graph", body, current="/graph", read_only=site.read_only))
