"""The one control-character rule for names: a file name llmwiki writes, approves or lets
through the gate holds no character that hides, moves or reorders what a reviewer reads.

Refused in a name (a path, every part of it):

* C0 controls U+0000-U+001F (tab and newline included: a name is one line) and DEL U+007F;
* C1 controls U+0080-U+009F (the 8-bit CSI U+009B starts a terminal escape sequence);
* the bidi embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, the marks
  U+200E and U+200F and the Arabic letter mark U+061C (``\\u202egpj.md`` reads as
  ``dm.jpg``);
* the line and paragraph separators U+2028 and U+2029 (a name is one line).

Page text follows the content rule of `llmwiki_git.wiki.pages` (`REFUSED_CHARACTERS`): the
same controls but tab, newline and carriage return, and the bidi marks allowed (right-to-left
prose needs them). This module imports nothing, so the pre-commit hook stays light.
"""

from __future__ import annotations

import re

#: Characters no file name may hold (see the module docstring).
IN_NAMES = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)

#: What the rule says, for messages that refuse a name.
WHY = (
    "C0 and C1 controls and bidi characters in a file name can hide, move or reorder "
    "what a reviewer reads"
)


def name_problem(path: str) -> str | None:
    """Why ``path`` is not an acceptable file name (naming the first refused character as an
    escape and where it is), or None."""
    found = IN_NAMES.search(path)
    if found is None:
        return None
    shown = ascii(found.group())[1:-1]
    return (
        f"the file name holds the control or bidi character {shown} at character "
        f"{found.start() + 1} ({WHY}); rename it"
    )


def visible(path: str) -> str:
    """``path`` with each refused character shown as its escape (``\\u202e``), for messages."""
    return IN_NAMES.sub(lambda m: ascii(m.group())[1:-1], path)
