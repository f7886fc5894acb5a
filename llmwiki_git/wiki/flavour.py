"""Vault flavours: the rules that differ between the editors a wiki is written in.

A flavour is detected from the files an editor leaves in the project (an ``.obsidian/``
folder, Dendron's ``dendron.yml``, Logseq's ``logseq/`` folder, Foam's ``.foam/`` folder or
its recommendation in ``.vscode/extensions.json``, Hugo's ``hugo.toml``), or set with ``flavour = "…"`` in
``.llmwiki/config.toml``. It decides (docs/wikilinks.md has the table):

* ``md_links_by_name``: a markdown link or image whose relative path names no file is looked
  up by its file name anywhere in the wiki, as Obsidian does (its "shortest path" links);
* ``percent_comments``: ``%% … %%`` is a comment (inline and over lines), as in Obsidian
  and Logseq;
* ``raw_shortcodes``: the inner text of a paired Hugo shortcode ``{{< name >}} …
  {{< /name >}}`` is not markdown (Hugo passes it to the shortcode as it is), so no link;
  a definition list's term is an anchor (Hugo's ``autoDefinitionTermID``, which its
  own docs turn on); and a page has the headings of the files its ``include`` shortcodes
  name (wiki/includes.py);
* ``label_first``: ``[[a|b]]`` is label ``a``, target ``b``, as Dendron writes it;
* ``templates``: folders (or, for Dendron, a dotted name prefix) holding templates, which
  are not pages to compare titles of;
* ``dendron_targets``: a target may name its vault (``dendron://vault/note``, the vault
  being one of the workspace's: the prefix is dropped) and a note reference may take a range
  (``#start,1:#end``, ``#*``: the start heading is checked);
* ``namespaces``: a file ``A___B.md`` (or ``A%2FB.md``) is the page ``A/B``, as Logseq
  stores namespaced pages, and ``[[A/B]]`` names it;
* ``properties``: Logseq's first-block ``title::`` and ``alias::`` properties are the page's
  title and aliases, and an alias of any page resolves links (Logseq's alias pages);
* ``empty_is_text``: ``[[]]`` is text, not a link (Obsidian and Logseq show it as written);
* ``severity``: the flavour's own defaults of problem severities, before
  ``[check.severity]``: in Logseq a link to a page no file holds is a page not written
  yet (Logseq shows it as an empty page, never as broken), so ``broken-link`` is a warning.

Import-light (the hook reads it): no YAML, no JSON beyond the standard library.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple

from ..config import FLAVOURS


class Flavour(NamedTuple):
    name: str = "plain"
    md_links_by_name: bool = False
    percent_comments: bool = False
    label_first: bool = False
    raw_shortcodes: bool = False
    empty_is_text: bool = False
    templates: tuple[str, ...] = ()  # "Templates/" (a folder) or "templates." (Dendron names)
    dendron_targets: bool = False
    namespaces: bool = False
    properties: bool = False  # Logseq's title:: and alias:: name a page, aliases resolve links
    severity: tuple[tuple[str, str], ...] = ()

    @property
    def dialect(self) -> str:
        """What the scanner reads differently ("" for the common rules): a page scan is
        cached under its blob id plus this (the same bytes scan differently)."""
        return (
            ("%" if self.percent_comments else "")
            + ("<" if self.label_first else "")
            + ("h" if self.raw_shortcodes else "")
            + ("p" if self.properties else "")
        )

    @property
    def plain(self) -> bool:
        """No rule differs from the common ones (the staged delta may be used)."""
        return not (
            self.md_links_by_name
            or self.percent_comments
            or self.label_first
            or self.raw_shortcodes
            or self.empty_is_text
            or self.templates
            or self.dendron_targets
            or self.namespaces
            or self.properties
            or self.severity
        )

    def vault_prefix(self, text: str) -> str:
        """The ``dendron://vault/`` a target starts with ("" when none, or not Dendron)."""
        if not self.dendron_targets or not text.startswith("dendron://"):
            return ""
        found = _VAULT.match(text)
        return found.group() if found else ""

    def link_text(self, text: str) -> str:
        """A target as the common rules read it: Dendron's vault prefix dropped and a note
        reference's range reduced to its start heading (``a#h,1:#*`` -> ``a#h``)."""
        if not self.dendron_targets:
            return text
        text = text[len(self.vault_prefix(text)) :]
        name, sep, anchor = text.partition("#")
        if not sep or (":" not in anchor and "," not in anchor and anchor.strip() != "*"):
            return text
        start = _RANGE_END.sub("", anchor.split(":", 1)[0]).strip()
        return f"{name}#{start}" if start and start != "*" else name

    def is_template(self, page_id: str) -> bool:
        """Whether the page ``page_id`` (from the wiki root, no ``.md``) is a template."""
        lowered = page_id.lower()
        return any(lowered.startswith(prefix.lower()) for prefix in self.templates)


PLAIN = Flavour()
_VAULT = re.compile(r"dendron://[^/|#\]]*/")
_RANGE_END = re.compile(r",[0-9]+$")  # a note reference's line offset: `#heading,1`

_RULES: dict[str, Flavour] = {
    "plain": PLAIN,
    "foam": Flavour("foam"),
    "obsidian": Flavour(
        "obsidian", md_links_by_name=True, percent_comments=True, empty_is_text=True
    ),
    "logseq": Flavour(
        "logseq",
        percent_comments=True,
        namespaces=True,
        properties=True,
        empty_is_text=True,
        severity=(("broken-link", "warning"),),
    ),
    "dendron": Flavour(
        "dendron", label_first=True, templates=("templates.",), dendron_targets=True
    ),
    "hugo": Flavour("hugo", raw_shortcodes=True),
}
assert tuple(_RULES) == FLAVOURS  # config validates the names; this module owns the rules


def detect(project: Path) -> str:
    """The flavour whose editor left its files in ``project`` ("plain" when none did)."""
    if (project / ".obsidian").is_dir():
        return "obsidian"
    if (project / "dendron.yml").is_file():
        return "dendron"
    if (project / "logseq").is_dir() and (project / "logseq" / "config.edn").is_file():
        return "logseq"
    if (project / ".foam").is_dir() or _recommends_foam(project / ".vscode" / "extensions.json"):
        return "foam"
    if any((project / f"hugo.{ext}").is_file() for ext in ("toml", "yaml", "yml", "json")):
        return "hugo"
    return "plain"


def _recommends_foam(path: Path) -> bool:
    try:
        with path.open("rb") as handle:  # a settings file is small: read 1 MB at most
            head = handle.read(1024 * 1024)
    except OSError:
        return False
    return b"foam.foam-vscode" in head.lower()


def _obsidian_templates(project: Path) -> tuple[str, ...]:
    """The template folders Obsidian's core Templates plugin and Templater are set to."""
    found = []
    for settings, key in (
        (project / ".obsidian" / "templates.json", "folder"),
        (
            project / ".obsidian" / "plugins" / "templater-obsidian" / "data.json",
            "templates_folder",
        ),
    ):
        try:
            if settings.stat().st_size > 1024 * 1024:
                continue
            value = json.loads(settings.read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue  # no such settings, or not what Obsidian writes: no folder from it
        if isinstance(value, str) and value.strip("/ "):
            found.append(value.strip("/ ") + "/")
    return tuple(found)


def flavour_for(
    project: Path, name: str | None = None, templates: tuple[str, ...] | None = None
) -> Flavour:
    """The flavour of the wiki in ``project``: ``name`` when set (config), else detected;
    ``templates`` (config) replaces the flavour's template folders."""
    chosen = name or detect(project)
    rules = _RULES[chosen]
    if templates is not None:
        folders = (t.strip("/") for t in templates)
        return rules._replace(
            templates=tuple(t if t.endswith(".") else t + "/" for t in folders if t)
        )
    if chosen == "obsidian":
        return rules._replace(templates=_obsidian_templates(project))
    return rules
