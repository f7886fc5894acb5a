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
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` with every control character (and bidi override) made visible."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_visible, text) if _CONTROL.search(text) else text


class SafeStream(io.TextIOBase):
    """A text stream that writes `clean` text to the stream it wraps."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(clean(text))
        return len(text)

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
