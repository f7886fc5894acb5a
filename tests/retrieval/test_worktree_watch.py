"""A long-lived process reuses its page listing while nothing changed, and notices every kind
of change on the next call (issue 15, Deliver 1): an in-place edit (no rename, the folder's
mtime unchanged), a new page, a new folder and a page inside it, a deletion, `git add`
(the index file). Real git repository, real files, the real kernel watch (Linux) and the
stat walk it falls back to elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llmwiki_git.errors import GitError
from llmwiki_git.wiki.stamp import WorktreeWatch
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, page


@pytest.mark.parametrize("prefix", ["wiki/", ""])
@pytest.mark.parametrize("watched", [True, False])
def test_the_listing_is_reused_until_something_changes(
    repo: Repo, prefix: str, watched: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not prefix:
        repo.write("index.md", "# My own home page\n")
    repo.write(
        f"{prefix}concepts/apple.md", page("Apple", "Apple trees are pruned in late winter.")
    )
    repo.commit("pages")
    if not watched:
        monkeypatch.setattr(WorktreeWatch, "create", classmethod(lambda cls, root, extra=(): None))
    ws = Workspace.open(Path(repo.root), long_lived=True)
    first = ws.listing()
    assert ws.listing() is first  # nothing changed: the very same listing
    assert ws.listing.watched is (watched and os.uname().sysname == "Linux")

    apple = Path(repo.root) / f"{prefix}concepts/apple.md"
    folder_mtime = apple.parent.stat().st_mtime_ns
    with open(apple, "a", encoding="utf-8") as fh:  # in place: the folder does not change
        fh.write("\nGrafted in spring.\n")
    assert apple.parent.stat().st_mtime_ns == folder_mtime
    second = ws.listing()
    assert (
        second is not first
        and second[f"{prefix}concepts/apple.md"] != first[f"{prefix}concepts/apple.md"]
    )
    assert ws.listing() is second

    repo.write(
        f"{prefix}people/ada/notes.md", page("Ada", "Ada grafts.")
    )  # a new folder, a page in it
    third = ws.listing()
    assert f"{prefix}people/ada/notes.md" in third
    repo.write(f"{prefix}people/ada/more.md", page("More", "More notes."))  # inside the new folder
    fourth = ws.listing()
    assert f"{prefix}people/ada/more.md" in fourth

    (Path(repo.root) / f"{prefix}people/ada/notes.md").unlink()
    fifth = ws.listing()
    assert f"{prefix}people/ada/notes.md" not in fifth
    assert ws.listing() is fifth
    repo.git("add", "-A")  # only git's index file changes
    assert ws.listing() is not fifth


@pytest.mark.parametrize("prefix", ["wiki/", ""])
def test_a_failed_listing_does_not_leave_the_old_one_current(repo: Repo, prefix: str) -> None:
    """The watch's events are consumed before the new listing is made; when making it fails
    (a transient git error here: a broken global config outside the work tree), the next
    call must list again, not find a quiet queue and serve the listing from before the
    change (found in review: it served the old listing until something else changed)."""
    if not prefix:
        repo.write("index.md", "# My own home page\n")
    repo.write(f"{prefix}apple.md", page("Apple", "Apple trees are pruned in late winter."))
    repo.commit("pages")
    ws = Workspace.open(Path(repo.root), long_lived=True)
    assert f"{prefix}pear.md" not in ws.listing()
    repo.write(f"{prefix}pear.md", page("Pear", "Pears ripen off the tree."))
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    good = gitconfig.read_text(encoding="utf-8")
    gitconfig.write_text("[broken\n", encoding="utf-8")
    try:
        with pytest.raises(GitError):
            ws.listing()
    finally:
        gitconfig.write_text(good, encoding="utf-8")
    assert f"{prefix}pear.md" in ws.listing()
