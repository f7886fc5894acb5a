"""The review pages: the queue (`/review`), one candidate (`/review/<id>`) with each page's
rendered diff, and its Approve and Reject buttons, which call exactly what `llmwiki review
approve` and `reject` call (review/service.py), after refusing a stale page."""

from __future__ import annotations

import re
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..errors import LlmwikiError, WriteRefused
from ..publication import kinds
from ..publication.candidates import get
from ..review.service import (
    CandidateRow,
    CandidateView,
    approve_candidate,
    list_view,
    reject_candidate,
    show_view,
)
from ..wiki.frontmatter import parse
from ..wiki.pages import decode
from .html import h, layout, notice, table, url
from .site import Site


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _queue_data(
    site: Site,
) -> tuple[list[CandidateRow], dict[str, CandidateView | LlmwikiError]]:
    """`review list`'s rows, and `review show`'s view of each (its verdict says why not)."""
    rows = list_view(site.ws)
    views: dict[str, CandidateView | LlmwikiError] = {}
    for row in rows:
        try:
            views[row.id] = _show(site, row.id)
        except LlmwikiError as exc:  # one bad candidate never hides the others
            views[row.id] = exc
    return rows, views


def _show(site: Site, cid: str) -> CandidateView:
    """`review show`'s view of ``cid``, kept while the repository's state is unchanged
    (the queue computes it for every candidate; opening one then costs nothing)."""
    return site.memo(f"candidate {cid}", site.state(), lambda: show_view(site.ws, cid))


def queue(site: Site, request: Request) -> Response:
    with site.scope():
        rows, views = site.memo("queue", site.state(), lambda: _queue_data(site))
    now = time.time()
    said = request.query_params.get("said", "")
    cells = []
    for row in rows:
        view = views[row.id]
        if isinstance(view, LlmwikiError):
            verdict = f'<span class="bad">cannot be shown: {h(view)}</span>'
            new = ""
        else:
            v = view.verdict
            verdict = (
                '<span class="ok">would pass</span>'
                if v.ok
                else f'<span class="bad">refused ({h(v.code)})</span>: {h(v.message)}'
            )
            broken = v.details.get("newlyBroken") or []
            new = "<br>".join(
                h(f"{p['path']}:{p['line']}: {p['code']}: {p['message']}") for p in broken
            )
        pages = "<br>".join(
            f'<a href="{h(url("/page/", t))}">{h(t)}</a>' for t in row.targets
        ) or h(row.target or "?")
        cells.append(
            [
                f'<a href="{h(url("/review/", row.id))}">{h(row.id)}</a>',
                h(row.kind or "?"),
                pages,
                h(_age(now - row.committed_at)),
                h(row.citation_status),
                verdict,
                new or "none",
            ]
        )
    body = (
        table(
            ["Candidate", "Kind", "Pages", "Age", "Links now", "Approval", "New problems"],
            cells,
            f"{len(rows)} open candidate{'s' if len(rows) != 1 else ''}, oldest first",
        )
        if rows
        else notice("No pending candidates.")
    )
    if said:
        body = notice(said, "said") + body
    return HTMLResponse(layout("Review queue", body, current="/review", read_only=site.read_only))


def _body(data: bytes | None) -> tuple[str, str] | None:
    """A page's body and its frontmatter block, or None when there is none."""
    if data is None:
        return None
    text = decode(data)[0]
    if text is None:
        return None
    meta = parse(text)
    return text[meta.body_offset :], text[: meta.body_offset]


def _rendered_diff(site: Site, old: bytes | None, new: bytes | None, text_for_links: str) -> str:
    renderer = site.renderer(site.wiki(), text_for_links)
    a, b = _body(old), _body(new)
    if b is None:
        return notice("This page is deleted by the candidate.", "deleted")
    blocks = renderer.diff(a[0] if a is not None else "", b[0])
    out = []
    if a is not None and a[1] != b[1]:  # a retraction marks pages there (`retracted:`)
        out.append(
            f'<div class="blk del"><span class="mark">removed</span><pre>{h(a[1])}</pre></div>'
        )
    if (a is None and b[1]) or (a is not None and a[1] != b[1]):
        out.append(
            f'<div class="blk add"><span class="mark">added</span><pre>{h(b[1])}</pre></div>'
        )
    for kind, html in blocks:
        label = {"add": "added", "del": "removed"}.get(kind)
        mark = f'<span class="mark">{label}</span>' if label else ""
        out.append(f'<div class="blk {kind}">{mark}{html}</div>')
    return '<div class="rendered">' + "".join(out) + "</div>"


def _page_section(
    site: Site, view: CandidateView, target: str, diff: str, title: str | None, heading: str
) -> str:
    git = site.ws.require_git("showing candidates")
    tip = view.verdict.tip or (view.candidate.trailers.base if view.candidate.trailers else None)
    old = git.read_blob_at(tip, target) if tip else None
    new = git.read_blob_at(view.candidate.commit, target)
    text = decode(new)[0] if new is not None else ""
    rendered = _rendered_diff(site, old, new, text or "")
    titled = f" “{title}”" if title else ""
    return (
        f'<section class="cpage"><h2>{h(heading)}: {h(target)}{h(titled)}</h2>'
        f"{rendered}<details><summary>Source diff</summary>"
        f'<pre class="diff">{_diff_lines(diff)}</pre></details></section>'
    )


def _diff_lines(diff: str) -> str:
    out = []
    for line in diff.splitlines():
        css = (
            "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else "hunk"
            if line.startswith("@@")
            else ""
        )
        out.append(f'<span class="{css}">{h(line)}</span>' if css else h(line))
    return "\n".join(out) or "(no change against the current tip)"


def _plan(plan: dict[str, Any]) -> str:
    row = kinds.row(str(plan.get("kind")))
    if row is not None and not row.renames_files:  # a merge: one page folded into another
        head = (
            f"Folds {plan['from']} into {plan['into']} under “{plan['heading']}”; "
            f"aliases added: {', '.join(plan.get('aliasesAdded') or []) or 'none'}; "
            f"{plan['from']} deleted."
        )
        moves = ""
    else:
        head = f"Moves {plan['from']} → {plan['to']}."
        moves = "".join(
            f"<li>{h(m['from'])} → {h(m['to'])}</li>"
            for m in plan.get("moves", [])
            if m["from"] != plan["from"]
        )
    edits = "".join(
        f"<li>{h(e['path'])}:{h(e['line'])}:{h(e['col'])}: <del>{h(e['old'])}</del> → "
        f"<ins>{h(e['new'])}</ins></li>"
        for e in plan.get("edits", [])
    )
    return (
        f'<section><h2>Plan</h2><p>{h(head)}</p><ul class="moves">{moves}</ul>'
        f"<h3>Link rewrites</h3><ul>{edits or '<li>none</li>'}</ul></section>"
    )


def candidate(site: Site, request: Request) -> Response:
    cid = request.path_params["cid"]
    with site.scope():
        try:
            view = _show(site, cid)
        except LlmwikiError as exc:
            return _message(site, "Candidate", str(exc), 404)
        body = _candidate_body(site, view, request.query_params.get("said", ""))
    return HTMLResponse(layout(f"Candidate {cid}", body, current="", read_only=site.read_only))


def _candidate_body(site: Site, view: CandidateView, said: str) -> str:
    c, v = view.candidate, view.verdict
    meta = {k: val for k, val in view.metadata().items() if val not in (None, "")}
    provenance = view.provenance()
    rows = [[h(k), h(val)] for k, val in meta.items()]
    rows.append(["rendered from", f"<code>{h(c.commit)}</code> (tip <code>{h(v.tip)}</code>)"])
    for source in provenance.get("sources", []):
        rows.append(["source", f"{h(source['path'])} (blob <code>{h(source['blob'])}</code>)"])
    for key in ("model", "prompt", "retracts"):
        if provenance.get(key):
            rows.append([h(key), h(provenance[key])])
    verdict = (
        notice(f"Approval would pass: {v.message}", "ok")
        if v.ok
        else notice(f"Approval would be refused ({v.code}): {v.message}", "bad")
    )
    parts = [notice(said, "said")] if said else []
    parts.append(verdict)
    if not site.read_only:
        parts.append(_buttons(site, view))
    parts.append(
        f'<p><a href="{h(url("/graph", "", candidate=c.id))}">Graph around its pages</a></p>'
    )
    if view.plan is not None:
        parts.append(_plan(view.plan))
    retracts = provenance.get("retracts")
    if view.pages and "threeWay" not in v.details:
        for n, item in enumerate(view.pages, 1):
            what = "retracted source" if item["target"] == retracts else "page"
            parts.append(
                _page_section(
                    site,
                    view,
                    item["target"],
                    item["diff"],
                    item.get("title"),
                    f"{what.capitalize()} {n}/{len(view.pages)}",
                )
            )
    elif c.trailers is not None and c.trailers.kind not in ("move/1", "merge/1"):
        parts.append(_page_section(site, view, c.trailers.target, view.diff, view.title, "Page"))
    else:
        parts.append(
            f'<details open><summary>Source diff</summary><pre class="diff">{_diff_lines(view.diff)}</pre></details>'
        )
    if view.pages:  # a compile run or retraction: its commit message is the run's report
        git = site.ws.require_git("showing candidates")
        report = _without_trailers(git.commit_body(c.commit))
        if report:
            parts.append(f"<section><h2>Run report</h2><pre>{h(report)}</pre></section>")
    if view.verdict.citations:
        items = "".join(
            f"<li>{h(x.status)}: {h(x.target)}{' → ' + h(x.page_id) if x.page_id else ''}</li>"
            for x in view.verdict.citations
        )
        parts.append(f"<section><h2>Citations</h2><ul>{items}</ul></section>")
    parts.append(table(["Field", "Value"], rows, "Candidate and its provenance"))
    return "".join(parts)


def _without_trailers(body: str) -> str:
    """A commit message without its last paragraph when that is a trailer block."""
    head, _, last = body.strip().rpartition("\n\n")
    lines = last.splitlines()
    if head and lines and all(re.match(r"[A-Za-z][\w-]*: ", line) for line in lines):
        return head.strip()
    return body.strip()


def _buttons(site: Site, view: CandidateView) -> str:
    cid = view.candidate.id
    hidden = (
        f'<input type="hidden" name="csrf" value="{h(site.guard.csrf())}">'
        f'<input type="hidden" name="sha" value="{h(view.candidate.commit)}">'
        f'<input type="hidden" name="tip" value="{h(view.verdict.tip or "")}">'
    )
    return (
        '<div class="actions">'
        f'<form method="post" action="{h(url("/review/", cid))}/approve">{hidden}'
        '<button type="submit" class="approve">Approve</button></form>'
        f'<form method="post" action="{h(url("/review/", cid))}/reject">{hidden}'
        '<button type="submit" class="reject">Reject</button></form></div>'
    )


def _message(site: Site, title: str, text: str, status: int) -> HTMLResponse:
    return HTMLResponse(
        layout(title, f'<pre class="error" role="alert">{h(text)}</pre>', read_only=site.read_only),
        status_code=status,
    )


async def act(site: Site, request: Request) -> Response:
    """POST /review/<id>/approve or /reject: the CSRF token, then the shas the page was
    rendered from, then the CLI's own function; a refusal is shown as the CLI prints it."""
    from starlette.concurrency import run_in_threadpool

    cid, action = request.path_params["cid"], request.path_params["action"]
    if site.read_only:
        return _message(site, "Read-only", "this view was started with --read-only", 403)
    if action not in ("approve", "reject"):
        return _message(site, "Not found", f"no action {action}", 404)
    form = await request.form()
    csrf, sha, tip = (str(form.get(k, "")) for k in ("csrf", "sha", "tip"))
    if not site.guard.csrf_ok(csrf):
        return _message(site, "Refused", "the form's CSRF token is missing or wrong", 403)
    return await run_in_threadpool(_act, site, cid, action, sha, tip)


def _act(site: Site, cid: str, action: str, sha: str, tip: str) -> Response:
    with site.scope():
        try:
            _refuse_stale(site, cid, sha, tip, action)
            site.forget_state()
            if action == "approve":
                done = approve_candidate(site.ws, cid)
                how = "replayed on the current tip" if done.replayed else "fast-forward"
                said = (
                    f"Approved {cid} ({how}, commit {done.commit[:12]}). Candidate {cid} cleared."
                )
            else:
                rejected = reject_candidate(site.ws, cid)
                said = f"Rejected {cid}; its commit is kept at {rejected.ref}."
        except LlmwikiError as exc:
            return _message(site, f"{action.capitalize()} refused", f"Error: {exc}", 409)
    return RedirectResponse(url("/review", "", said=said), status_code=303)


def _refuse_stale(site: Site, cid: str, sha: str, tip: str, action: str) -> None:
    git = site.ws.require_git("reviewing candidates")
    now = get(git, cid).commit
    if now != sha:
        raise WriteRefused(
            f"candidate {cid} moved since the page was rendered ({sha[:12] or 'no sha'} → {now[:12]}); nothing was done",
            hint="reload the candidate's page and review it again",
        )
    head = git.rev_parse("HEAD") or ""
    if action == "approve" and tip and head != tip:
        raise WriteRefused(
            f"the branch moved since the page was rendered ({tip[:12]} → {head[:12]}); nothing was done",
            hint="reload the candidate's page: its diff is now against the new tip",
        )
