"""Connection strings read as libpq reads them (retrieval/conninfo.py): this module's parser
agrees with the driver's own (``psycopg.conninfo.conninfo_to_dict``, libpq's) on every form
issue 34 named, and a message shows host, port and database name only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llmwiki_git.retrieval import conninfo

FORMS = [
    "host=h user=wiki dbname=w password = S3cretPW!",
    "host=h dbname=w password='S3cret PW!'",
    "host=h dbname=w password=S3cret\\ PW",
    "password='it\\'s S3cret' host = h  port=5 dbname =w",
    "postgresql://u:S3cret%20PW%21@h:5/w",
    "postgresql://u@h/w?password=S3cretPW!",
    "postgres://u:S3cret?PW@h/w",
    "postgresql:///w?host=/tmp/socket&port=5&password=S3cretPW!",
    "postgresql://h1:1,h2:2/w?sslmode=require",
    "postgresql://[::1]:5/w",
    "password=''",
]


@pytest.mark.parametrize("form", FORMS)
def test_the_parser_agrees_with_the_drivers(form: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    assert "psycopg" in sys.modules  # so `parse` is the driver's: compare with this module's
    theirs = {k: str(v) for k, v in conninfo_to_dict(form).items()}
    assert conninfo.parse(form) == theirs
    ours = conninfo._parse_uri(form) if conninfo.is_uri(form) else conninfo._parse_pairs(form)
    assert ours == theirs


@pytest.mark.parametrize("form", FORMS)
def test_a_display_holds_no_password_nor_user(form: str) -> None:
    shown = conninfo.display(form)
    assert shown.startswith("postgresql://")
    for secret in ("S3cret", "PW", "wiki", "u:", "u@", "sslmode", "it's"):
        assert secret not in shown, (form, shown)


def test_displays() -> None:
    assert conninfo.display("host=h user=wiki dbname=w password = S3cretPW!") == "postgresql://h/w"
    assert conninfo.display("postgresql://u:pw@h:5/w") == "postgresql://h:5/w"
    assert (
        conninfo.display("postgresql:///w?host=/tmp/socket&port=5")
        == "postgresql:///w?host=/tmp/socket&port=5"
    )
    assert conninfo.display("postgresql://[::1]:5/w") == "postgresql://[::1]:5/w"
    assert conninfo.display("host=h password='unterminated") == conninfo.UNNAMED


def test_naming_a_store_imports_no_driver() -> None:
    """A message about the setting (no connection made) does not load psycopg (~0.8 s)."""
    code = (
        "import sys\n"
        "from llmwiki_git.retrieval import storetable\n"
        "print(storetable.display(\"host=h dbname=w password='S3cret PW!'\"))\n"
        "assert 'psycopg' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "postgresql://h/w\n"
