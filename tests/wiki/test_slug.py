from __future__ import annotations

import pytest

from llmwiki_git.wiki.slug import parse_target, slugify, split_label


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Alpha", "alpha"),
        ("Hello World", "hello-world"),
        ("  Spaces   everywhere  ", "spaces-everywhere"),
        ("Don't Stop", "dont-stop"),
        ("It\u2019s", "its"),
        ("Mixed_CASE v1.2", "mixedcase-v12"),
        ("Café crème", "café-crème"),
        ("Cafe\u0301", "café"),  # NFD input compares equal to NFC
        ("--a---b--", "a-b"),
        ("Привет мир", "привет-мир"),
        ("数据 库", "数据-库"),
        ("C++ & C#", "c-c"),
        ("", ""),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_split_label_takes_first_pipe_and_table_escape() -> None:
    assert split_label("a|b|c") == ("a", "b|c")
    assert split_label("a\\|b") == ("a", "b")
    assert split_label("a") == ("a", None)


def test_parse_target_anchor_path_extension() -> None:
    t = parse_target("Concepts/Alpha Beta.md#Some Heading")
    assert (t.slug, t.hint, t.anchor, t.file_name, t.key) == (
        "alpha-beta",
        ("concepts",),
        "Some Heading",
        None,
        "concepts/alpha-beta",
    )
    b = parse_target("note#^block-1")
    assert (b.slug, b.anchor) == ("note", "^block-1")
    f = parse_target("assets/diagram.PNG")
    assert f.file_name == "diagram.PNG" and f.hint == ("assets",)
    assert parse_target("#Heading").is_self_anchor
    assert parse_target("").is_empty and parse_target("  ").is_empty
    assert not parse_target("x").is_empty


def test_key_of_attachments_and_dotted_names() -> None:
    assert parse_target("missing.png").key == "missing.png"
    assert parse_target("assets/Missing.PDF").key == "assets/Missing.PDF"
    assert parse_target("dendron.topic.lookup").key == "dendrontopiclookup"
