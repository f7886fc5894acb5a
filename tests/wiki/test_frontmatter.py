from __future__ import annotations

from llmwiki_git.wiki import frontmatter


def test_parse_and_body_line() -> None:
    fm = frontmatter.parse("---\ntitle: A\naliases: [x, 42, y]\n---\nbody\n")
    assert fm.data["title"] == "A"
    assert frontmatter.string_list(fm.data["aliases"]) == ["x", "y"]
    assert fm.body_line == 4 and fm.error is None


def test_malformed_yaml_reports_line_not_raises() -> None:
    fm = frontmatter.parse("---\ntitle: ok\nbad: [unclosed\nmore: x\n---\nbody\n")
    assert fm.data == {}
    assert fm.error and "malformed YAML" in fm.error
    assert fm.error_line is not None and fm.error_line >= 3
    assert fm.body_line == 5


def test_non_mapping_and_no_closing_fence() -> None:
    assert (
        frontmatter.parse("---\n- a\n- b\n---\n").error
        == "frontmatter is not a mapping of keys to values"
    )
    fm = frontmatter.parse("---\ntitle: x\nno closing fence\n")
    assert fm.raw is None and fm.body_line == 0


# -- the fast path against PyYAML -------------------------------------------------------------

_VALUES = [
    '"Below Asking"',
    "'single'",
    '"with: colon # hash"',
    '""',
    "''",
    "plain words",
    "a.b.c",
    "e.g.",
    "Word (concepts)",
    "yes",
    "No",
    "TRUE",
    "off",
    "On",
    "null",
    "Null",
    "~",
    "nULL",
    "y",
    "n",
    "inf",
    "nan",
    "2024-10-02",
    "2024-1-2",
    "2024-02-30",
    "2024-10-02T10:00:00",
    "0",
    "7",
    "012",
    "1_000",
    "1.5",
    "-1",
    "+1",
    "0x1f",
    "1:20",
    "12345678901",
    '"esc \\" quote"',
    '"tab\\tx"',
    "'it''s'",
    "a  b",
    "a #c",
    "a# b",
    "&anchor x",
    "*alias",
    "!tag x",
    "|",
    ">",
    "@at",
    "`tick`",
    "%pct",
    "[]",
    "[ ]",
    '["A (concepts)", "The A"]',
    "[a, b c, 'd']",
    "[a, 42]",
    "[a,]",
    "[a, [b]]",
    "{a: b}",
    '"caf\u00e9 \u2014 \U0001f600"',
    '"\u2028"',
    '"\x85"',
    '"\ufeffx"',
    '"\x7f"',
    '"a" "b"',
    "value   ",
    "-dash",
    "a-",
    "Ñame",
    "key: value",
    # JSON's escapes, as a JSON-writing tool emits them (issue 23: they sent 29 % of a
    # generated wiki's pages to PyYAML)
    '"line\\nbreak"',
    '"say \\"hi\\""',
    '"back\\\\slash"',
    '"sl\\/ash"',
    '"\\u00e9t\\u00e9"',
    '"\\b\\f\\r"',
    '"\\ud83d\\ude00"',
    '"\\uD800"',
    '"\\x41"',
    '"\\e"',
    '"\\0"',
    '"\\N"',
    '"\\ "',
    '"bad \\q"',
    '"end\\"',
    '["a\\"b", "c\\nd"]',
    # source paths and git object ids (compile's provenance: `sources:`, `sourceBlobs:`)
    "sources/s0180.md",
    "a/b c/d",
    "/abs",
    "a//b",
    "4a0017e899eb930236afd9823061ab24aa2fcb2e",
    "1234567",
    "0b10101",
    "0777777",
    "deadbeef",
    "1234e12",
    "12345.6",
    "00000000",
    "abc1234",
    "0b10201",
    "1_000_000",
]
_ENTRY_KEYS = ["sources/s0180.md", "a", "yes", "x.y", "1abc", "_p", "a-b/c.md", "null", "y"]
_KEYS = ["title", "aliases", "tags", "_x", "a-b", "yes", "on", "null", "Title", "k1"]


def _pyyaml(raw: str):  # type: ignore[no-untyped-def]
    import yaml

    try:
        return ("ok", yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except Exception as exc:  # noqa: BLE001 - what PyYAML does with it, whatever it is
        return ("error", type(exc).__name__)


def _raws() -> list[str]:
    import random

    rng = random.Random(7)
    raws = [f"{k}: {v}\n" for k in _KEYS for v in _VALUES]
    raws += [
        f"{k}:\n  - {v}\n  - {w}\n"
        for k in _KEYS[:3]
        for v in _VALUES
        for w in ("x", '"y"', "2024-01-01")
    ]
    raws += [f"tags:\n- {v}\nnext: 1\n" for v in _VALUES]
    raws += [
        "tags:\n  - a\n   - b\n",
        "tags:\n  - a\n    b\n",
        "tags:\n  - a\n  -\n",
        "tags:\n  - - a\n",
        "tags:\n  nested: x\n",
        "a: 1\na: 2\n",
        "a:\n",
        "a:   \nb: x\n",
        "",
        "\n",
        "title: x\r\n",
        "title:\tx\n",
        "title: x\n\nb: y\n",
        "# c\ntitle: x\n",
        "title:x\n",
        " title: x\n",
        "title : x\n",
        "%YAML 1.1\n",
        "title: x\n...\n",
    ]
    raws += [
        f"sourceBlobs:\n  {k}: {v}\n  {j}: {w}\n"
        for k in _ENTRY_KEYS
        for j in ("sources/b.md", k)
        for v in _VALUES[::3]
        for w in ("4a0017e899eb930236afd9823061ab24aa2fcb2e", "1234567", "x")
    ]
    raws += [
        "m:\n  a: x\n   b: y\n",
        "m:\n  a: x\n b: y\n",
        "m:\n  a: x\n    b: y\n",
        "m:\n  a:\n    b: y\n",
        "m:\n  a: x\nn: 1\n",
        "m:\n  a: x\n  - b\n",
        "m:\n  - b\n  a: x\n",
        "m:\n  a: [x, y]\n",
        "m:\n  a: x # c\n",
        "m:\n  a: \n",
        "m:\n  a:x\n",
        "m:\n  'a': x\n",
        "m:\n  a: x\n\nn: 1\n",
        "sources:\n- sources/s0180.md\n- sources/s0962.md\nsourceBlobs:\n  sources/s0180.md: "
        "4a0017e899eb930236afd9823061ab24aa2fcb2e\n  sources/s0962.md: 205cf0fd7eb44615b2d95a5f705b3c54612816dc\n",
    ]
    for _ in range(400):  # random frontmatter blocks from the pieces above
        lines = []
        for _ in range(rng.randint(1, 5)):
            key = rng.choice(_KEYS)
            if rng.random() < 0.3:
                lines.append(f"{key}:")
                lines += [
                    f"{' ' * rng.choice((0, 2, 2, 4))}- {rng.choice(_VALUES)}"
                    for _ in range(rng.randint(0, 3))
                ]
            else:
                lines.append(f"{key}: {rng.choice(_VALUES)}")
        raws.append("\n".join(lines) + "\n")
    return raws


def test_the_fast_path_reads_exactly_what_pyyaml_reads() -> None:
    """Differential: every block the fast path accepts gives PyYAML's value, type for type;
    the rest goes to PyYAML."""
    accepted = 0
    for raw in _raws():
        fast = frontmatter._simple_yaml(raw)
        if fast is None:
            continue
        accepted += 1
        status, slow = _pyyaml(raw)
        assert status == "ok", (raw, slow)
        slow = {} if slow is None else slow
        assert fast == slow and list(fast) == list(slow), raw
        assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()], raw
        for key, value in fast.items():
            if isinstance(value, list):
                assert [type(v) for v in value] == [type(v) for v in slow[key]], raw
            if isinstance(value, dict):
                assert list(value) == list(slow[key]), raw
                assert [type(v) for v in value.values()] == [type(v) for v in slow[key].values()], (
                    raw
                )
    assert accepted > 300  # the common forms do take the fast path


def test_compiled_provenance_takes_the_fast_path() -> None:
    """A compiled page's `sources:` list and `sourceBlobs:` mapping are read without PyYAML
    (they sent 4,000 of a 10,000-page wiki's pages to it: the cold check's +18 % CPU)."""
    raw = (
        'title: "Jail"\nsources:\n- sources/s0180.md\n- sources/s0962.md\nsourceBlobs:\n'
        "  sources/s0180.md: 4a0017e899eb930236afd9823061ab24aa2fcb2e\n"
        "  sources/s0962.md: 205cf0fd7eb44615b2d95a5f705b3c54612816dc\n"
    )
    assert frontmatter._simple_yaml(raw) == {
        "title": "Jail",
        "sources": ["sources/s0180.md", "sources/s0962.md"],
        "sourceBlobs": {
            "sources/s0180.md": "4a0017e899eb930236afd9823061ab24aa2fcb2e",
            "sources/s0962.md": "205cf0fd7eb44615b2d95a5f705b3c54612816dc",
        },
    }
    assert frontmatter._simple_yaml("sourceBlobs:\n  s.md: 1234567\n") is None  # an integer to YAML


def test_typical_pages_parse_without_importing_pyyaml() -> None:
    import subprocess
    import sys

    code = (
        "import sys\nfrom llmwiki_git.wiki.pages import scan_page\n"
        's = scan_page(b\'---\\ntitle: "Below Asking"\\naliases: ["Below Asking (concepts)"]\\n'
        "tags:\\n  - appeal\\nupdated: 2024-10-02\\n---\\n# Below Asking\\n[[x]]\\n')\n"
        "assert s.title == 'Below Asking' and s.aliases == ('Below Asking (concepts)',), s\n"
        "print('yaml' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_json_escapes_take_the_fast_path() -> None:
    """Double-quoted strings with JSON's escapes (what a JSON-writing tool emits) are read
    without PyYAML, as PyYAML reads them (the differential test above checks the values)."""
    raw = 'title: "Say \\"hi\\""\nsummary: "line\\nbreak \\u00e9"\naliases: ["a\\"b"]\n'
    assert frontmatter._simple_yaml(raw) == {
        "title": 'Say "hi"',
        "summary": "line\nbreak \u00e9",
        "aliases": ['a"b'],
    }
    assert (
        frontmatter._simple_yaml('t: "\\ud83d\\ude00"\n') is None
    )  # surrogate escapes: PyYAML's reading
