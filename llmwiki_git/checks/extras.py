"""What a derived tree changed in the facts file it started from (`delta.Facts.added`):
stored in the tree's record instead of a new facts file (~5 MB on 10,000 pages, ~0.05 s to
write), merged along a chain of derivations, and how big it may grow before a tree gets a
facts file of its own."""

from __future__ import annotations

import hashlib

from .links import Outcome

Extras = tuple[
    dict[str, tuple[str, ...]],  # link target text -> paths newly using it
    dict[str, Outcome],  # link target text -> its outcome, resolved
    dict[str, "str | None"],  # page path -> its names key, None when deleted
    dict[str, bool],  # other file -> present
    tuple[str, ...],  # texts whose outcome was dropped
    str,  # names fingerprint ("" when unchanged)
]
NO_EXTRAS: Extras = ({}, {}, {}, {}, (), "")
MAX_EXTRAS = 5000  # entries kept in a tree record before a tree gets a facts file of its own


def merge_extras(first: Extras, second: Extras) -> Extras:
    """``first`` then ``second`` as one change of the facts file ``first`` started from
    (paths using a text are united, in order; outcomes are dropped before they are added)."""
    users = dict(first[0])
    for text, paths in second[0].items():
        users[text] = tuple(dict.fromkeys((*users.get(text, ()), *paths)))
    dropped = set(second[4])
    outcomes = (
        {text: outcome for text, outcome in first[1].items() if text not in dropped}
        if dropped
        else dict(first[1])
    )
    outcomes.update(second[1])
    return (
        users,
        outcomes,
        {**first[2], **second[2]},
        {**first[3], **second[3]},
        tuple(dict.fromkeys((*first[4], *second[4]))),
        second[5] or first[5],
    )


def extras_size(extras: Extras) -> int:
    users, outcomes, names, files, dropped, _ = extras
    return sum(map(len, users.values())) + len(outcomes) + len(names) + len(files) + len(dropped)


def facts_id(fingerprint: str, tree: str) -> str:
    """The name of the facts a tree's check wrote: its names fingerprint and the tree (two
    trees with the same names but other links have facts of their own)."""
    return f"{fingerprint[:24]}{tree[:16]}"


def chained_fingerprint(base: str, names: dict[str, str | None], files: dict[str, bool]) -> str:
    """A derived state's fingerprint: its base's and the names that changed (hashing every
    page's names again costs ~6 ms on 10,000 pages). It names facts, never compared with a
    full check's: a state reached two ways may have two, which costs only a file."""
    text = "\x00".join(
        [
            base,
            *(f"{path}\x01{key}" for path, key in sorted(names.items())),
            *(f"{path}\x01{present}" for path, present in sorted(files.items())),
        ]
    )
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()
