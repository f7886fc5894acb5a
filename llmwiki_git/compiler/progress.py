"""Progress of a compile run (steps done of how many, and the time left at this pace) and
what the model was asked (requests and tokens), shared by the writer threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """Model requests made and tokens used; ``estimated`` when a server reported no counts
    for some request (its tokens are then estimated as characters / 4)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "estimated": self.estimated,
        }


@dataclass
class Progress:
    """``total`` steps; :meth:`step` marks one done (from any thread) and calls ``report``."""

    total: int
    report: Callable[[Progress], None] | None = None
    done: int = 0
    current: str = ""
    phase: str = "compiling"
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def restart(self, phase: str, total: int) -> None:
        with self._lock:
            self.phase, self.total, self.done, self.started = phase, total, 0, time.monotonic()

    def step(self, what: str) -> None:
        with self._lock:
            self.done += 1
            self.current = what
        if self.report is not None:
            self.report(self)

    def count(
        self, input_tokens: int | None, output_tokens: int | None, sent: str, got: str
    ) -> None:
        """One model request with the tokens its server reported (None: estimated)."""
        with self._lock:
            self.usage.requests += 1
            if input_tokens is None or output_tokens is None:
                self.usage.estimated = True
            self.usage.input_tokens += input_tokens if input_tokens is not None else len(sent) // 4
            self.usage.output_tokens += (
                output_tokens if output_tokens is not None else len(got) // 4
            )

    @property
    def eta(self) -> float | None:
        """Seconds left at the pace so far (None before the first step)."""
        if not self.done:
            return None
        elapsed = time.monotonic() - self.started
        return elapsed / self.done * (self.total - self.done)
