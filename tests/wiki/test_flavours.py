"""Vault flavours (issue 37): the rules that differ between Obsidian, Dendron, Logseq and
Foam, detected from the editor's files or set in the config; name resolution as editors do
it (exact name first, the slug rule only without one). Real repositories, the CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

from llmwiki_git.checks.duplicates import suggest
from llmwiki_git.config import load
from llmwiki_git.errors import ConfigError
from llmwiki_git.wiki.flavour import detect, flavour_for
from llmwiki_git.wiki.scanner import scan_raw
from llmwiki_git.wiki.slug import parse_target
from llmwiki_git.workspace import Workspace

from ..conftest import Repo, layout_prefix


def problems(repo: Repo, *args: str) -> tuple[int, list[dict]]:
    proc = repo.llmwiki("check", "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["problems"]


def codes(found: list[dict]) -> list[tuple[str, str]]:
    return sorted((p["code"], p["path"]) for p in found)


# -- detection and the config ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        (".obsidian/app.json", "obsidian"),
        ("dendron.yml", "dendron"),
        ("logseq/config.edn", "logseq"),
        (".foam/templates/new.md", "foam"),
        (".vscode/extensions.json", "foam"),
        ("hugo.toml", "hugo"),
        ("README.md", "plain"),
    ],
)
def test_flavour_is_detected_from_the_editors_files(repo: Repo, marker: str, expected: str) -> None:
    repo.write(marker, '{"recommendations": ["foam.foam-vscode"]}\n')
    assert detect(repo.root) == expected
    assert Workspace.open(repo.root).flavour.name == expected


def test_config_sets_the_flavour_and_template_folders_and_refuses_a_typo(repo: Repo) -> None:
    repo.write(".obsidian/app.json", "{}")
    repo.write(".llmwiki/config.toml", 'flavour = "Dendron"\ntemplate_folders = ["Tpl/"]\n')
    chosen = Workspace.open(repo.root).flavour
    assert chosen.name == "dendron" and chosen.label_first and chosen.templates == ("Tpl/",)
    repo.write(".llmwiki/config.toml", 'flavour = "roam"\n')
    with pytest.raises(ConfigError, match="flavour = 'roam': use one of plain, foam"):
        load(repo.root)
    repo.write(".llmwiki/config.toml", 'template_folders = "Tpl"\n')
    with pytest.raises(ConfigError, match="template_folders must be a list"):
        load(repo.root)
    proc = repo.llmwiki("check")
    assert proc.returncode == 2 and "template_folders" in proc.stderr


def test_obsidian_template_folder_is_read_from_its_settings(repo: Repo) -> None:
    repo.write(".obsidian/templates.json", '{"folder": "Meta/Templates"}')
    repo.write(
        ".obsidian/plugins/templater-obsidian/data.json", '{"templates_folder": "Templater"}'
    )
    assert flavour_for(repo.root).templates == ("Meta/Templates/", "Templater/")
    repo.write(".obsidian/templates.json", "not json")
    assert flavour_for(repo.root).templates == ("Templater/",)


# -- the scanner's dialects --------------------------------------------------------------------


def test_percent_comments_inline_and_over_lines_only_in_their_dialect() -> None:
    text = (
        "# Top\n"
        "Seen [[a]] %% hidden [[b]] %% seen [[c]].\n"
        "%%\n"
        "# Not a heading\n"
        "[[d]] and ![[author#Some heading]]\n"
        "%%\n"
        "```\n"
        "%% in a fence opens nothing\n"
        "```\n"
        "After [[e]]; `%%` in code opens nothing: [[f]]\n"
    )
    plain = [link[3] for link in scan_raw(text)[0]]
    assert plain == ["a", "b", "c", "d", "author#Some heading", "e", "f"]
    links, headings, _, _ = scan_raw(text, 0, "%")
    assert [link[3] for link in links] == ["a", "c", "e", "f"]
    assert headings == {"top"}
    assert [link[0] for link in links] == [2, 2, 10, 10]


def test_label_first_dialect_swaps_target_and_label_in_both_scanners() -> None:
    simple = "See [[Lookup|dendron.topic.lookup]] and [[plain.note]].\n"
    blocks = simple + "```\nx\n```\n"  # a fence: the full walk
    for text in (simple, blocks):
        links = scan_raw(text, 0, "<")[0]
        assert [(link[3], link[4]) for link in links] == [
            ("dendron.topic.lookup", "Lookup"),
            ("plain.note", None),
        ]
        assert [link[3] for link in scan_raw(text)[0]] == ["Lookup", "plain.note"]


def test_hugo_dialect_skips_paired_shortcode_blocks_only() -> None:
    text = (
        "See [[a]].\n"
        "{{< code-toggle file=hugo >}}\n"
        "[[menus.main]]\n"
        "# not a heading\n"
        "{{< /code-toggle >}}\n"
        "{{< note >}} [[b]] {{< /note >}}\n"
        "{{< figure src=x.png >}}\n"
        "[[c]]\n"
        "# Heading\n"
        "`permalinkable`\n"
        ": (`bool`) a definition list's term\n"
    )
    links, headings, _, _ = scan_raw(text, 0, "h")
    assert [link[3] for link in links] == ["a", "b", "c"]
    assert headings == {"heading", "permalinkable"}
    assert scan_raw(text)[1] == {"heading", "not-a-heading"}
    assert [link[3] for link in scan_raw(text)[0]] == ["a", "menus.main", "b", "c"]


# -- resolution order ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_exact_name_beats_the_slug_rule_and_a_trailing_dot_is_kept(repo: Repo, layout: str) -> None:
    prefix = layout_prefix(repo, layout)
    repo.write(f"{prefix}People/some-theme.md", "# Some theme person\n")
    repo.write(f"{prefix}Themes/Some Theme.md", "# Themes\n")
    repo.write(f"{prefix}Books/Name - Subtitle.md", "# Name - Subtitle\n")
    repo.write(f"{prefix}Books/Name: Subtitle.md", "# Name: Subtitle\n")
    repo.write(f"{prefix}Some Note.md", "# Some Note\n")
    repo.write(f"{prefix}Twins/A/Twin.md", "x\n")
    repo.write(f"{prefix}Twins/B/Twin.md", "x\n")
    repo.write(
        f"{prefix}links.md",
        "[[Some Theme]] [[some theme]] [[Books/Name: Subtitle]] [[Name - Subtitle]] "
        "[[Some Note.]] [[Some Note]] [[some-theme]] [[Twin]]\n",
    )
    repo.commit()
    wiki = Workspace.open(repo.root).wiki("HEAD")

    def ref(text: str) -> tuple[str | None, tuple[str, ...]]:
        found = wiki.resolve(parse_target(text))
        return found.ref, found.alternatives

    assert ref("Some Theme") == ("Themes/Some Theme", ())
    assert ref("some theme") == ("Themes/Some Theme", ())  # case-insensitive
    assert ref("Books/Name: Subtitle") == ("Books/Name: Subtitle", ())
    assert ref("Name - Subtitle") == ("Books/Name - Subtitle", ())
    assert ref("some-theme") == ("People/some-theme", ())
    assert ref("Some Note.") == (None, ())  # the dot is part of the name
    assert ref("Some Note") == ("Some Note", ())
    # a genuine clash: fewest folders, then alphabetical; reported as ambiguous
    assert ref("Twin") == ("Twins/A/Twin", ("Twins/B/Twin",))
    _, found = problems(repo)
    assert sorted((p["code"], p["message"].split(":")[0]) for p in found) == [
        ("ambiguous-link", "ambiguous link [[Twin]]"),
        ("broken-link", "broken link [[Some Note.]]"),
    ]


# -- an Obsidian vault -----------------------------------------------------------------------------


def obsidian_vault(repo: Repo, prefix: str) -> None:
    """A small vault as Obsidian users keep one: attachments in their folder, images linked by
    bare file name, a commented-out template line, templates sharing `# {{title}}`."""
    repo.write(".obsidian/app.json", '{"attachmentFolderPath": "Attachments"}')
    repo.write(".obsidian/templates.json", '{"folder": "Templates"}')
    repo.write(f"{prefix}Attachments/diagram.png", b"\x89PNG")
    repo.write(f"{prefix}author.md", "# Author\n\nWho wrote it.\n")
    repo.write(
        f"{prefix}Topic/Some page.md",
        "# Some page\n\n![alt](diagram.png) and [the author](author.md#Author) and "
        "[by path](Attachments/diagram.png).\n\n"
        "%% ![[author#Some heading]] %%\n\n"
        "%%\nA draft: [[Nowhere]]\n%%\n\n"
        "Back to [[author]].\n",
    )
    repo.write(f"{prefix}Templates/Book.md", "# {{title}}\n\nAuthor: [[author]]\n")
    repo.write(f"{prefix}Templates/Film.md", "# {{title}}\n\nDirector: [[author]]\n")
    repo.write(f"{prefix}Templates/Daily.md", "# Daily note\n\n%% fill in %%\n")
    repo.write(f"{prefix}2020-07-17.md", "# Daily note\n\n[[Some page]]\n")


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_obsidian_vault_is_clean_where_obsidian_shows_nothing_broken(
    repo: Repo, layout: str
) -> None:
    prefix = layout_prefix(repo, layout)
    obsidian_vault(repo, prefix)
    repo.commit()
    assert json.loads(repo.llmwiki("check", "--json").stdout)["flavour"] == "obsidian"
    code, found = problems(repo)
    # The template titled "Daily note" is no page to compare with the daily note.
    assert (code, [p for p in found if p["code"] != "orphan-page"]) == (0, [])
    # The same files read by the common rules: what the issue reported.
    repo.write(".llmwiki/config.toml", 'flavour = "plain"\n')
    code, found = problems(repo)
    assert code == 1
    assert {p["code"] for p in found} >= {
        "broken-relative-link",
        "missing-heading",
        "broken-link",
        "duplicate-title",
    }
    titles = [p for p in found if p["code"] == "duplicate-title"]
    assert all("{{title}}" not in p["message"] for p in titles)  # placeholders in no flavour


def test_obsidian_markdown_link_by_name_is_still_broken_when_no_file_has_the_name(
    repo: Repo,
) -> None:
    repo.write(".obsidian/app.json", "{}")
    repo.write(
        "Topic/page.md", "# Page\n\n![x](missing.png) [y](other.md#Nope) [z](../../out.md)\n"
    )
    repo.write("Else/other.md", "# Other\n")
    repo.commit()
    _, found = problems(repo)
    assert [c for c in codes(found) if c[0] != "orphan-page"] == [
        ("broken-relative-link", "Topic/page.md"),
        ("broken-relative-link", "Topic/page.md"),
        ("missing-heading", "Topic/page.md"),
    ]


def test_switching_flavour_does_not_reuse_scans_or_results_of_the_other(repo: Repo) -> None:
    repo.write("a.md", "# A\n\n%% [[gone]] %%\n[[b|Label]]\n")
    repo.write("b.md", "# B\n\n[[a]]\n")
    repo.commit()
    for flavour, expected in (
        ("plain", ["broken-link"]),  # [[gone]]: plain markdown has no %% comments
        ("obsidian", []),
        ("dendron", ["broken-link", "broken-link"]),  # [[gone]], and [[b|Label]] is Label
        ("logseq", []),
        ("plain", ["broken-link"]),
    ):
        repo.write(".llmwiki/config.toml", f'flavour = "{flavour}"\n')
        _, found = problems(repo)
        got = sorted(p["code"] for p in found if p["code"] != "orphan-page")
        assert got == expected, flavour


# -- Dendron: label-first links, templates, mv, --suggest ---------------------------------------


def dendron_vault(repo: Repo) -> None:
    repo.write("dendron.yml", "version: 5\n")
    repo.write(
        "dendron.topic.lookup.md",
        "---\ntitle: Lookup\n---\n# Lookup\n\n## Usage\n",
    )
    repo.write(
        "dendron.topic.md",
        "---\ntitle: Topic\n---\n"
        "See [[Lookup|dendron.topic.lookup]], [[dendron.topic.lookup]], "
        "[[Usage|dendron.topic.lookup#usage]] and ![[dendron.topic.lookup]].\n"
        "| t | [[Lookup\\|dendron.topic.lookup]] |\n"
        "Other vault: [[Lookup|dendron://site/dendron.topic.lookup#usage]], "
        "![[dendron.topic.lookup#usage,1:#*]]\n",
    )
    repo.write("templates.meeting.md", "---\ntitle: Meeting notes\n---\n- attendees\n")
    repo.write("templates.standup.md", "---\ntitle: Meeting notes\n---\n- yesterday\n")
    repo.write(
        "people.journal.2020-07-17-105322.md",
        "---\ntitle: Journal 2020-07-17\n---\nOn [[dendron.topic]] today.\n",
    )


def test_dendron_reads_label_first_links_and_ignores_template_titles(repo: Repo) -> None:
    dendron_vault(repo)
    repo.commit()
    code, found = problems(repo)
    assert code == 0
    assert [p for p in found if p["code"] not in ("orphan-page",)] == [], found


def test_dendron_mv_rewrites_label_first_links(repo: Repo) -> None:
    dendron_vault(repo)
    repo.commit()
    proc = repo.llmwiki("mv", "dendron.topic.lookup.md", "dendron.topic.finder.md")
    assert proc.returncode == 0, proc.stderr
    assert "rewrote 7 links in 2 pages" in proc.stdout
    # its title was the one Dendron derives from the old name: it follows the new name
    moved = (repo.root / "dendron.topic.finder.md").read_text(encoding="utf-8")
    assert moved.startswith("---\ntitle: Finder\n---\n# Lookup\n")
    text = (repo.root / "dendron.topic.md").read_text(encoding="utf-8")
    assert text == (
        "---\ntitle: Topic\n---\n"
        "See [[Lookup|dendron.topic.finder]], [[dendron.topic.finder]], "
        "[[Usage|dendron.topic.finder#usage]] and ![[dendron.topic.finder]].\n"
        "| t | [[Lookup\\|dendron.topic.finder]] |\n"
        "Other vault: [[Lookup|dendron://site/dendron.topic.finder#usage]], "
        "![[dendron.topic.finder#usage,1:#*]]\n"
    )
    code, found = problems(repo)
    assert code == 0 and [p for p in found if p["code"] != "orphan-page"] == []


def test_suggest_never_offers_a_dated_note(repo: Repo) -> None:
    dendron_vault(repo)
    repo.write("people.journal.2020-07-17-105322.md", "---\ntitle: Lookup\n---\nx\n")
    repo.write("notes.2024-01-02.md", "---\ntitle: Lookup\n---\n")
    repo.write("zettel/202001011200 Lookup.md", "---\ntitle: Lookup\n---\n")
    repo.write("lookup-copy.md", "---\ntitle: Lookup\n---\n")
    repo.commit()
    groups = suggest(Workspace.open(repo.root).wiki("HEAD"))
    offered = {p.path for g in groups for p, _ in g.pages}
    assert offered == {"dendron.topic.lookup.md", "lookup-copy.md"}


def test_logseq_comments_namespaces_and_pages_not_written_yet(repo: Repo) -> None:
    repo.write("logseq/config.edn", "{}\n")
    repo.write(
        "pages/Alpha.md",
        "- a block [[Beta]]\n- %% [[Gone]] %%\n- [[setting/theme modes]] [[Setting/Language]]\n"
        "- [[Not written yet]], and [[]] is text\n"
        "- by alias [[B2]] and [[Bee]], by title [[Gamma Page]]\n",
    )
    repo.write("pages/Beta.md", "alias:: B2, [[Bee]]\n\n- back to [[Alpha]]\n")
    repo.write("pages/gamma.md", "title:: Gamma Page\n- a page named by its title\n")
    repo.write("pages/setting___theme modes.md", "- dark\n")
    repo.write("pages/setting%2Flanguage.md", "- en\n")
    repo.commit()
    code, found = problems(repo)
    # Logseq shows a link to a page no file holds as an empty page: a warning, not an error
    assert code == 0 and [(p["code"], p["severity"], p["target"]) for p in found] == [
        ("broken-link", "warning", "not-written-yet")
    ]
    repo.write(".llmwiki/config.toml", '[check.severity]\nbroken-link = "error"\n')
    assert problems(repo)[0] == 1  # the config still wins


def test_hook_accepts_a_whole_obsidian_vault_committed_and_refuses_it_read_plainly(
    repo: Repo,
) -> None:
    assert repo.llmwiki_process("hooks", "install").returncode == 0
    obsidian_vault(repo, "")
    repo.write(".llmwiki/config.toml", 'flavour = "plain"\n')
    repo.git("add", "-A")
    refused = subprocess.run(
        ["git", "commit", "-q", "-m", "vault"], cwd=repo.root, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "broken relative link" in refused.stderr
    (repo.root / ".llmwiki/config.toml").unlink()
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "vault")  # the hook checks every page of a first commit
    assert repo.git("log", "--format=%s").split() == ["vault"]


def test_dendron_merge_pages_rewrites_label_first_links(repo: Repo) -> None:
    dendron_vault(repo)
    repo.write("dendron.topic.finder.md", "---\ntitle: Finder\n---\n# Finder\n\nFinds.\n")
    repo.write("notes.md", "---\ntitle: Notes\n---\nSee [[Find it|dendron.topic.finder]].\n")
    repo.commit()
    proc = repo.llmwiki(
        "merge-pages",
        "dendron.topic.lookup.md",
        "dendron.topic.finder.md",
        "--dry-run",
        env={"LLMWIKI_EMBEDDING_PROVIDER": "none"},
    )
    assert proc.returncode == 0, proc.stderr
    # the name after the label is rewritten; the label stays
    assert "notes.md:4:" in proc.stdout and "dendron.topic.finder → dendron.topic.lookup" in (
        proc.stdout
    )


# -- Hugo includes ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_hugo_pages_have_the_headings_of_the_files_they_include(repo: Repo, layout: str) -> None:
    """A heading that reaches a page through `{{% include %}}` / `{{< include >}}` is a
    heading of that page (no false missing-heading); an include naming no file, leaving the
    repository or making a cycle adds nothing and is no error."""
    prefix = layout_prefix(repo, layout)
    repo.write("hugo.toml", "title = 'docs'\n")
    repo.write(f"{prefix}_common/options.md", "## Options\n\nWhat each option does.\n")
    repo.write(f"{prefix}_common/nested.md", '{{% include "/_common/deeper.md" %}}\n')
    repo.write(f"{prefix}_common/deeper.md", "### Deep heading\n\nIncluded twice over.\n")
    repo.write(
        f"{prefix}functions/ref.md",
        '# Ref\n\n{{% include "/_common/options.md" %}}\n\n{{< include "_common/nested" >}}\n\n'
        '`{{% include "/_common/code.md" %}}` is how it is written.\n',
    )
    repo.write(f"{prefix}_common/code.md", "## Only in code\n")
    repo.write(
        f"{prefix}functions/broken.md",
        '# Broken\n\n{{% include "/_common/missing.md" %}}\n\n'
        '{{% include "../../../../etc/passwd" %}}\n',
    )
    repo.write(f"{prefix}cycle-a.md", '## A heading\n\n{{% include "cycle-b.md" %}}\n')
    repo.write(f"{prefix}cycle-b.md", '## B heading\n\n{{% include "/cycle-a" %}}\n')
    repo.write(
        f"{prefix}guide.md",
        "# Guide\n\n[[ref#options]] [[ref#deep-heading]] [opts](functions/ref.md#options)\n"
        "[[broken#options]] [[cycle-a#b-heading]] [[cycle-b#a-heading]] [[ref#only-in-code]]\n",
    )
    repo.commit()
    _, found = problems(repo)
    assert sorted((p["code"], p["message"]) for p in found) == [
        (
            "missing-heading",
            'missing heading [[broken#options]]: no heading "options" in functions/broken',
        ),
        (
            "missing-heading",
            'missing heading [[ref#only-in-code]]: no heading "only-in-code" in functions/ref',
        ),
    ]
    # the included file changes: the links through the including page are checked again
    repo.write(f"{prefix}_common/options.md", "## Settings\n\nRenamed.\n")
    repo.commit()
    _, found = problems(repo)
    said = " ".join(p["message"] for p in found)
    assert "[[ref#options]]" in said and "[…](functions/ref.md#options)" in said


@pytest.mark.parametrize("layout", ["wiki", "vault"])
def test_a_hugo_page_about_to_be_written_has_the_headings_it_includes(
    repo: Repo, layout: str
) -> None:
    """The wiki as it will be after a write (what a save or an approval checks the new page's
    links against) reads the new page as the checker will: with the headings it includes."""
    prefix = layout_prefix(repo, layout)
    repo.write("hugo.toml", "title = 'docs'\n")
    repo.write(f"{prefix}_common/options.md", "## Options\n\nWhat each option does.\n")
    repo.write(f"{prefix}ref.md", "# Ref\n")
    repo.commit()
    ws = Workspace.open(repo.root)
    after = ws.wiki().with_page(
        f"{prefix}ref.md", '# Ref\n\n{{% include "/_common/options.md" %}}\n'
    )
    ref = next(p for p in after.pages if p.path == f"{prefix}ref.md")
    assert ref.scan.headings == ("options", "ref")
    # what is not Hugo does not follow includes
    repo.git("rm", "-q", "hugo.toml")
    repo.commit()
    plain = Workspace.open(repo.root).wiki()
    ref = next(
        p
        for p in plain.with_page(
            f"{prefix}ref.md", '# Ref\n\n{{% include "/_common/options.md" %}}\n'
        ).pages
        if p.path == f"{prefix}ref.md"
    )
    assert ref.scan.headings == ("ref",)
