"""Small helpers for the words of messages."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``0 pages``: the count with its noun in the right number."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
