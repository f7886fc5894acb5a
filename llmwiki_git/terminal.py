"""Terminal-safe output: control characters from files, models, branch names and trailers
never reach the terminal raw.

Escape sequences (CSI ``ESC [``, OSC ``ESC ]`` window titles and hyperlinks, the 8-bit C1
forms such as U+009B) can move the cursor, rewrite what was printed, set the window title or
plant hidden links. Every character that is a C0 or C1 control (tab and newline excepted; a
carriage return only as part of CRLF) is shown as a visible ``\\xNN`` escape instead. The
filter is stateless per character, so a sequence split across streamed chunks is disarmed
just the same.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Iterator
from typing import TextIO

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    """C0 as ``\\xNN``; DEL, C1 and the rest as ``\\uNNNN``, which is also a valid JSON
    escape: ``--json`` output (``ensure_ascii=False``) holds those raw inside strings."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` with every control character (and bidi override) made visible."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text) if _CONTROL.search(text) else text


# GitHub's runner takes a log line for a workflow command when, leading whitespace trimmed,
# it starts with "::" (``::error file=…::``, ``::add-mask::``), or holds the older "##[".
_COMMAND_V2 = re.compile(r"(?:^|\n)[^\S\n]*:(:)")
_COMMAND_V1 = re.compile(r"##(\[)")
# "[" is shown as the JSON escape ``\u005b``: "##" appears in ``--json`` output only inside a
# string, where that escape parses back to the page's own "[" (``\x5b`` is no JSON escape);
# in text and markdown it is a visible escape like the ``\uNNNN`` of `clean`. A line of
# JSON never starts with ":", so ``\x3a`` only ever lands in text.
_DISARMED = {":": "\\x3a", "[": "\\u005b"}


class SafeStream(io.TextIOBase):
    """A text stream that writes `clean` text to the stream it wraps, in which no line can
    start a GitHub workflow command: the character that would complete ``::`` at the start
    of a line (or ``##[`` anywhere) is shown as its escape (``\\x3a``, ``\\u005b``), whether it
    came from a file name, a page or a model answer, and however the text is split across
    writes. `write_command` writes llmwiki's own annotations (``check --format github``)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self._line = ""  # the current line so far: "" (blank), ":" (blank then one colon), "x" (anything else)
        self._last = ""  # the last two characters written

    def write(self, text: str) -> int:
        self.inner.write(self._disarm(clean(text)))
        return len(text)

    def write_command(self, line: str) -> None:
        """One workflow command line of llmwiki's own, written as it is (control characters
        still made visible)."""
        self.inner.write(clean(line) + "\n")
        self._line, self._last = "", "\n"

    def _disarm(self, text: str) -> str:
        line, last = self._line, self._last
        spots = {
            m.start(1) - len(line)
            for m in _COMMAND_V2.finditer(line + text)
            if m.start(1) >= len(line)
        }
        spots |= {
            m.start(1) - len(last)
            for m in _COMMAND_V1.finditer(last + text)
            if m.start(1) >= len(last)
        }
        if spots:
            text = "".join(_DISARMED[c] if i in spots else c for i, c in enumerate(text))
        newline = text.rfind("\n")
        current = (line + text if newline < 0 else text[newline + 1 :]).lstrip()
        self._line = "" if not current else (":" if current == ":" else "x")
        self._last = (last + text)[-2:]
        return text

    def flush(self) -> None:
        self.inner.flush()

    @property
    def buffer(self) -> object:
        """The raw byte stream, for writers of binary or protocol data (the MCP server's
        JSON-RPC on stdout, escaped by its own encoder)."""
        return self.inner.buffer

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.inner.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.inner.errors


def echo_command(line: str) -> None:
    """Print one workflow command of llmwiki's own (an annotation of ``check --format
    github``, already escaped by ``github.command``) on standard output."""
    stream = sys.stdout
    if isinstance(stream, SafeStream):
        stream.write_command(line)
    else:
        stream.write(line + "\n")
    stream.flush()


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through `SafeStream` for the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(saved[0]), SafeStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def raw_stream(stream: TextIO) -> TextIO:
    """The stream a `SafeStream` wraps (any other stream as it is): for output llmwiki
    composes from no outside text and whose control characters are the point, the
    progress bar's carriage returns and cursor codes."""
    return stream.inner if isinstance(stream, SafeStream) else stream
