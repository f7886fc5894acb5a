"""The HTML around every view page: one layout with landmarks and the navigation, and small
helpers. Everything interpolated goes through :func:`h` (html.escape); no inline script or
style (the Content-Security-Policy allows only the package's own files)."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

NAV = (("/review", "Review"), ("/check", "Problems"), ("/graph", "Graph"))


def h(value: object) -> str:
    """Text as HTML (quotes too: safe in attribute values)."""
    return escape(str(value), quote=True)


def url(prefix: str, path: str, **query: str) -> str:
    """``prefix`` + the path, each segment percent-encoded, + a query string."""
    out = prefix + quote(path, safe="/")
    if query:
        out += "?" + "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items())
    return out


def layout(title: str, body: str, *, current: str = "", read_only: bool = False) -> str:
    links = "".join(
        f'<li><a href="{href}"{" aria-current=page" if href == current else ""}>{name}</a></li>'
        for href, name in NAV
    )
    mode = '<p class="mode">read-only</p>' if read_only else ""
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)} · llmwiki view</title>"
        '<link rel="stylesheet" href="/static/view.css">'
        '<script src="/static/view.js" defer></script></head><body>'
        '<header><a class="skip" href="#main">Skip to content</a>'
        f'<nav aria-label="Main"><span class="brand">llmwiki view</span><ul>{links}</ul></nav>'
        f"{mode}</header>"
        f'<main id="main"><h1>{h(title)}</h1>{body}</main></body></html>\n'
    )


def table(headers: list[str], rows: list[list[str]], caption: str) -> str:
    """A table of already-escaped cells."""
    head = "".join(f'<th scope="col">{h(x)}</th>' for x in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><caption>{h(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def notice(text: str, css: str = "notice") -> str:
    return f'<p class="{css}" role="status">{h(text)}</p>'
