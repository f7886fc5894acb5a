"""Settings from ``.llmwiki/config.toml`` (committed) with command-line overrides."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .providertable import CHAT_PROVIDERS, EMBEDDING_PROVIDERS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_PATH = ".llmwiki/config.toml"

# The valid values of the settings that name a choice, import-light, so that every command
# validates them at load: the providers from the one provider table (providertable.py);
# tests/cli/test_cli_edges.py asserts that the modes match what search accepts.
RETRIEVAL_MODES = ("rrf", "rerank", "cosine", "bm25")

#: setting -> (environment variable that overrides it, valid values)
CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "retrieval": ("LLMWIKI_RETRIEVAL", RETRIEVAL_MODES),
    "embedding_provider": ("LLMWIKI_EMBEDDING_PROVIDER", EMBEDDING_PROVIDERS),
    "chat_provider": ("LLMWIKI_PROVIDER", CHAT_PROVIDERS),
}


#: The vault flavours ``flavour`` may name (wiki/flavour.py holds their rules; unset: detected).
FLAVOURS = ("plain", "foam", "obsidian", "logseq", "dendron", "hugo")

#: What ``[check.severity]`` may set a problem code to (problems.SEVERITIES; the code names
#: are validated by the checker, checks/severity.py).
CHECK_SEVERITIES = ("error", "warning", "off")


@dataclass(frozen=True)
class Settings:
    wiki_dir: str | None = None
    max_page_mb: int = 8
    embedding_provider: str | None = None
    embedding_model: str | None = None
    retrieval: str | None = None
    chat_provider: str | None = None
    vector_store: str | None = (
        None  # a shared vector store's URI (docs/team.md); LLMWIKI_VECTOR_STORE wins
    )
    check_severity: tuple[
        tuple[str, str], ...
    ] = ()  # (problem code, severity) from [check.severity]
    flavour: str | None = None  # the vault flavour (FLAVOURS); None: detected (wiki/flavour.py)
    template_folders: tuple[str, ...] | None = None  # None: the flavour's own

    # (step, tokens) from [max_tokens] and the structured-output mode (providers/limits.py,
    # which validates both; LLMWIKI_MAX_TOKENS / LLMWIKI_STRUCTURED_OUTPUT win)
    max_tokens: tuple[tuple[str, int], ...] = ()
    structured_output: str | None = None

    @property
    def max_page_bytes(self) -> int:
        """``max_page_mb`` in bytes: the page limit every reader and writer applies."""
        return self.max_page_mb * 1024 * 1024


MAX_CONFIG_BYTES = 1024 * 1024  # a settings file is a few lines; anything bigger is refused unread


def load(
    root: Path, *, wiki_dir: str | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Read the repository's config; ``wiki_dir`` from the command line wins.

    Settings that name a choice are validated here, in the file and in the environment
    variables that override them, so that every command refuses a typo the same way."""
    path = root / CONFIG_PATH
    data: dict[str, Any] = {}
    if path.is_file():
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{CONFIG_PATH} is over {MAX_CONFIG_BYTES // 1024} KB: not a settings file",
                hint="fix the file or delete it",
            )
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{CONFIG_PATH}: {exc}", hint="fix the file or delete it") from exc
        except RecursionError:  # "a = [[[[…": bounded by the interpreter's depth, never a crash
            raise ConfigError(
                f"{CONFIG_PATH}: nested too deeply to be read", hint="fix the file or delete it"
            ) from None
    configured = data.get("wiki_dir")
    if configured is not None and not isinstance(configured, str):
        raise ConfigError(f"{CONFIG_PATH}: wiki_dir must be a string, not {configured!r}")
    chosen = wiki_dir if wiki_dir is not None else configured
    if chosen is not None:
        chosen = _safe_dir(chosen)
    max_mb = data.get("max_page_mb", 8)
    if not isinstance(max_mb, int) or max_mb <= 0:
        raise ConfigError(f"{CONFIG_PATH}: max_page_mb must be a positive integer")
    strings = {}
    for key in (
        "embedding_provider",
        "embedding_model",
        "retrieval",
        "chat_provider",
        "vector_store",
        "structured_output",
    ):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{CONFIG_PATH}: {key} must be a string, not {value!r}")
        strings[key] = value
    _validate_choices(strings, os.environ if environ is None else environ)
    flavour, templates = _vault(data)
    return Settings(
        wiki_dir=chosen,
        max_page_mb=max_mb,
        check_severity=_check_severity(data.get("check")),
        flavour=flavour,
        template_folders=templates,
        max_tokens=_max_tokens(data.get("max_tokens")),
        **strings,
    )


def _vault(data: Mapping[str, Any]) -> tuple[str | None, tuple[str, ...] | None]:
    """``flavour`` (one of FLAVOURS) and ``template_folders`` (a list of folder paths)."""
    flavour = data.get("flavour")
    if flavour is not None and (not isinstance(flavour, str) or flavour.lower() not in FLAVOURS):
        raise ConfigError(
            f"{CONFIG_PATH}: flavour = {flavour!r}: use one of {', '.join(FLAVOURS)}",
            hint="or remove the line: the flavour is then detected from the editor's files",
        )
    folders = data.get("template_folders")
    if folders is not None and (
        not isinstance(folders, list) or not all(isinstance(f, str) for f in folders)
    ):
        raise ConfigError(
            f"{CONFIG_PATH}: template_folders must be a list of folder paths, not {folders!r}",
            hint='e.g. template_folders = ["Templates"]',
        )
    templates = tuple(_safe_dir(f) for f in folders) if folders is not None else None
    return (flavour.lower() if flavour is not None else None), templates


def _max_tokens(table: Any) -> tuple[tuple[str, int], ...]:
    """``[max_tokens]``: step = tokens (the steps and bounds are checked where a model is
    used, providers/limits.py, so that `check` never imports them)."""
    if table is None:
        return ()
    if not isinstance(table, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in table.values()
    ):
        raise ConfigError(
            f"{CONFIG_PATH}: [max_tokens] must be a table of step = number of tokens",
            hint="e.g. [max_tokens] then answer = 600 and page = 3000",
        )
    return tuple((str(k), int(v)) for k, v in table.items())


def _check_severity(check: Any) -> tuple[tuple[str, str], ...]:
    """``[check.severity]``: problem code -> error, warning or off."""
    if check is None:
        return ()
    if not isinstance(check, dict) or not isinstance(check.get("severity", {}), dict):
        raise ConfigError(
            f"{CONFIG_PATH}: [check] must be a table, with a [check.severity] table of code = severity",
            hint='e.g. [check.severity] then orphan-page = "warning"',
        )
    found = []
    for code, value in check.get("severity", {}).items():
        if not isinstance(value, str) or value.strip().lower() not in CHECK_SEVERITIES:
            raise ConfigError(
                f"{CONFIG_PATH}: [check.severity] {code} = {value!r}: use one of {', '.join(CHECK_SEVERITIES)}"
            )
        found.append((str(code), value.strip().lower()))
    return tuple(found)


def _validate_choices(strings: Mapping[str, str | None], environ: Mapping[str, str]) -> None:
    for key, (variable, valid) in CHOICES.items():
        for value, where in (
            (environ.get(variable), variable),
            (strings.get(key), f"{key} in {CONFIG_PATH}"),
        ):
            text = (value or "").strip()
            if text and text.lower() not in valid:
                raise ConfigError(
                    f"{where}: unknown value {text!r}; valid values: {', '.join(valid)}",
                    hint=f"use one of {', '.join(valid)}, or unset it for the default",
                )


def _safe_dir(value: str) -> str:
    cleaned = value.replace("\\", "/").strip().strip("/")
    parts = [p for p in cleaned.split("/") if p not in ("", ".")]
    if value.startswith("/") or ".." in parts:
        raise ConfigError(f"wiki_dir {value!r} must be a folder inside the repository")
    return "/".join(parts)
