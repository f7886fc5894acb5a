"""Progress of a long operation on standard error (docs/json.md, "Progress lines").

On a terminal: a bar (click's, with the count, a rate and the time left) that redraws one
line. With ``--json``: one JSON object a line, ``{"progress": KIND, "done": N, "total": M}``
(and ``"item"`` when a step names one), so a program reading standard output still gets
the one JSON document there and can follow the run on standard error. Anything else (a
pipe, a log file): nothing, as before; the command's own summary says what was done.

JSON lines are throttled: the first step, then at most one line per ``every`` seconds, and
always the last (``done == total``), so a run of 100,000 steps writes a few hundred lines,
not 100,000.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from ..terminal import clean, raw_stream

EVERY = 0.5  # seconds between two JSON lines of one run (the first and last always written)


class Progress:
    """Reports ``(done, total)`` of one operation named ``kind`` (``embed``, ``compile``,
    ``ingest``, ``check``); callable, so it can be handed to code that takes a
    ``progress(done, total)`` callback. Use it as a context manager: the bar is closed at
    the end however the block ends."""

    def __init__(
        self,
        kind: str,
        label: str,
        *,
        as_json: bool,
        stream: TextIO | None = None,
        every: float = EVERY,
        off_terminal: bool = False,
        unit: str = "steps",
    ) -> None:
        """``off_terminal``: draw the bar on any stream, not only a terminal (click then
        prints the label once where it cannot redraw: `index`'s behaviour of old)."""
        self.kind, self.label, self.as_json, self.every = kind, label, as_json, every
        self.unit = unit  # what the bar's rate counts: "12.5 chunks/s"
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = not as_json and (off_terminal or _isatty(self.stream))
        self.started = time.monotonic()
        self._last = -1.0  # when the last JSON line was written (-1: none yet)
        self._bar: Any = None
        self._shown = 0
        self._lock = threading.Lock()  # steps reported from worker threads (compile's writers)

    @property
    def active(self) -> bool:
        """Whether anything is shown at all (a terminal, or ``--json``)."""
        return self.as_json or self.terminal

    def __call__(self, done: int, total: int, item: str | None = None) -> None:
        with self._lock:
            if self.as_json:
                self._line(done, total, item)
            elif self.terminal:
                self._draw(done, total, item)

    def _line(self, done: int, total: int, item: str | None) -> None:
        now = time.monotonic()
        if self._last >= 0 and done < total and now - self._last < self.every:
            return
        self._last = now
        record: dict[str, Any] = {"progress": self.kind, "done": done, "total": total}
        if item is not None:
            record["item"] = item
        self.stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.stream.flush()

    def _draw(self, done: int, total: int, item: str | None) -> None:
        import click

        if self._bar is None:
            # The bar is our own text, and its carriage returns and cursor codes are the
            # point: it goes to the terminal itself, not through the filter that makes
            # control characters from files and models visible; the item shown is cleaned.
            self._bar = click.progressbar(
                length=max(total, 1),
                label=self.label,
                file=raw_stream(self.stream),
                show_pos=True,
                show_eta=True,
                item_show_func=lambda shown: shown,
            )
            self._bar.__enter__()
        rate = done / max(time.monotonic() - self.started, 1e-6)
        shown = clean(item)[:60] if item is not None else f"{rate:.1f} {self.unit}/s"
        self._bar.update(max(done - self._shown, 0), shown)
        self._shown = max(done, self._shown)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.__exit__(None, None, None)
                self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = ["EVERY", "Progress"]
