"""PostgreSQL connection strings read as libpq reads them, and the one way they are shown.

A connection string is either a URI (``postgresql://user:pw@host:port/db?key=value``) or
keyword/value pairs (``host=h dbname=w password = 'S3cret PW!'``: spaces around ``=``, single
quotes, backslash escapes). Only its host, port and database name are ever shown (`display`):
never the password, the user or any other parameter, however the string is written.

`parse` uses the driver's own parser (``psycopg.conninfo.conninfo_to_dict``, libpq's) when
psycopg is already imported; otherwise this module's, which follows libpq's rules
(``conninfo_parse`` and ``conninfo_uri_parse`` of libpq's fe-connect.c) so that a message
can name the store without importing psycopg (0.7-0.9 s; not imported by a path that
never connects, such as an error about the setting itself). The tests check that the two
agree on every form the issues named.
"""

from __future__ import annotations

import sys
from urllib.parse import unquote

from ..errors import ConninfoError

SCHEMES = ("postgresql", "postgres")
"""The URI schemes libpq accepts (``postgresql://`` and ``postgres://``)."""

SHOWN = ("host", "port", "dbname")
"""What a message may show of a connection string."""

UNNAMED = "the configured PostgreSQL store"
"""What a message says of a connection string that cannot be parsed at all."""


_NOT = "not a PostgreSQL connection string"


def is_uri(text: str) -> bool:
    """A URI of a scheme libpq reads (else keyword/value pairs)."""
    return any(text.startswith(f"{scheme}://") for scheme in SCHEMES)


def parse(text: str) -> dict[str, str]:
    """The parameters of ``text`` (keyword -> value), as the driver reads them.
    ConninfoError when it is no connection string."""
    if "psycopg" in sys.modules:  # the driver is loaded anyway: its own parser, libpq's
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict

        try:
            return {k: str(v) for k, v in conninfo_to_dict(text).items() if v is not None}
        except ProgrammingError:
            raise ConninfoError(_NOT) from None
    return _parse_uri(text) if is_uri(text) else _parse_pairs(text)


def display(text: str) -> str:
    """How every message names the store: its host, port and database name only, as a URI
    (``postgresql://host:port/dbname``; a Unix socket folder as ``?host=``)."""
    try:
        params = parse(text)
    except ConninfoError:
        return UNNAMED
    host, port, dbname = (params.get(k, "") for k in SHOWN)
    if not host and params.get("hostaddr"):
        host = params["hostaddr"]
    query = ""
    if host.startswith("/") or "," in host and "/" in host:
        query, host = f"?host={host}", ""
    elif ":" in host and "," not in host:
        host = f"[{host}]"  # an IPv6 address
    netloc = f"{host}:{port}" if port and not query else host
    if port and query:
        query += f"&port={port}"
    return f"postgresql://{netloc}/{dbname}{query}"


def secrets(text: str) -> list[str]:
    """The values of ``text`` that no message may show (longest first): everything but the
    host, port and database name, to scrub from a driver's message."""
    try:
        params = parse(text)
    except ConninfoError:
        return [text] if text else []
    found = {v for k, v in params.items() if k not in SHOWN and k != "hostaddr" and len(v) > 2}
    return sorted(found, key=len, reverse=True)


# -- the parser libpq's rules describe (hand-written: libpq's own needs the driver) ---------


def _parse_pairs(text: str) -> dict[str, str]:
    """``keyword = value`` pairs: a value unquoted (up to whitespace, ``\\`` escaping the next
    character) or single-quoted (``\\`` escaping the next character)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return out
        start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        key = text[start:i]
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] != "=" or not key:
            raise ConninfoError(_NOT + ': a keyword without "="')
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        if i < n and text[i] == "'":
            i += 1
            while True:
                if i >= n:
                    raise ConninfoError(_NOT + ": a quoted value without its closing quote")
                if text[i] == "\\" and i + 1 < n:
                    value.append(text[i + 1])
                    i += 2
                elif text[i] == "'":
                    i += 1
                    break
                else:
                    value.append(text[i])
                    i += 1
        else:
            while i < n and not text[i].isspace():
                if text[i] == "\\":  # escapes the next character (none at the end: dropped)
                    value.append(text[i + 1 : i + 2])
                    i += 2
                else:
                    value.append(text[i])
                    i += 1
        out[key] = "".join(value)


def _parse_uri(text: str) -> dict[str, str]:
    """``postgresql://[user[:password]@][host[:port][,...]][/dbname][?key=value&...]``,
    percent-decoded; the query's parameters win over the parts before it."""
    rest = text.split("://", 1)[1]
    out: dict[str, str] = {}
    at, slash_at = rest.find("@"), rest.find("/")
    if at >= 0 and (slash_at < 0 or at < slash_at):  # user info: up to the first "@" before "/"
        userinfo, rest = rest[:at], rest[at + 1 :]
        user, colon, password = userinfo.partition(":")
        if user:
            out["user"] = unquote(user)
        if colon:
            out["password"] = unquote(password)
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, rest = rest[:end], rest[end:]
    slash = rest.startswith("/")
    path, _, query = rest[1:].partition("?") if slash else ("", "", rest[1:])
    hosts, ports = [], []
    for spec in netloc.split(",") if netloc else []:
        if spec.startswith("["):
            host, bracket, after = spec[1:].partition("]")
            if not bracket or (after and not after.startswith(":")):
                raise ConninfoError(_NOT + ": an IPv6 host without its closing bracket")
            port = after[1:]
        else:
            host, _, port = spec.partition(":")
        hosts.append(unquote(host))
        ports.append(unquote(port))
    if any(hosts):
        out["host"] = ",".join(hosts)
    if any(ports):
        out["port"] = ",".join(ports)
    if slash and path:
        out["dbname"] = unquote(path)
    for pair in query.split("&") if query else []:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise ConninfoError(_NOT + ': a URI parameter without "="')
        out[unquote(key)] = unquote(value)
    return out
