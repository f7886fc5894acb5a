"""What an MCP tool is: one declaration holding its name, title, description, input and
output JSON schemas and its handler (`Tool`), and the checking of a call's arguments.

A handler takes the server's long-lived workspace and the validated arguments (defaults
filled in) and returns its service's value as JSON; it never prints and never touches the
SDK. The server (``mcp_server.py``) lists the tools of ``mcptools.TOOLS`` and calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ArgumentError

if TYPE_CHECKING:
    from ..workspace import Workspace

MAX_TEXT = 1_000_000  # characters accepted in a prompt, question or text argument

#: A JSON Schema (a JSON object).
Schema = dict[str, Any]
#: The arguments of a call, validated against the tool's input schema, defaults filled in.
Arguments = Mapping[str, Any]
#: What a handler returns: the tool's structured result (validated by clients against its output schema).
Result = dict[str, Any]
Handler = Callable[["Workspace", Arguments], Result]


class Validator(Protocol):
    """jsonschema's validator, as the server builds it for a tool's input schema."""

    def iter_errors(self, instance: object) -> Any: ...


def obj(properties: Schema, required: tuple[str, ...] = (), **extra: Any) -> Schema:
    schema: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    schema.update(extra)
    return schema


def text(description: str, max_length: int = MAX_TEXT) -> Schema:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


def integer(description: str, default: int, minimum: int, maximum: int) -> Schema:
    return {
        "type": "integer",
        "minimum": minimum,
        "maximum": maximum,
        "default": default,
        "description": description,
    }


def flag(description: str) -> Schema:
    return {"type": "boolean", "default": False, "description": description}


NULLABLE_STR: Schema = {"type": ["string", "null"]}
WARNINGS: Schema = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
    },
}
CITATIONS: Schema = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["target", "status"],
        "properties": {
            "target": {"type": "string"},
            "status": {"enum": ["resolved", "ambiguous", "pending", "broken"]},
            "pageId": {"type": "string"},
            "alternatives": {"type": "array", "items": {"type": "string"}},
            "candidateIds": {"type": "array", "items": {"type": "string"}},
        },
    },
}
LINKS_ENVELOPE: Schema = {
    "type": "object",
    "required": ["version", "citations"],
    "properties": {"version": {"const": 1}, "citations": CITATIONS},
}


@dataclass
class Tool:
    """One MCP tool, declared once. ``read_only``: it changes nothing (annotations tell
    clients); ``open_world``: it may call out (a chat model); ``one_of``: the message for
    arguments that miss the schema's ``oneOf``."""

    name: str
    title: str
    description: str
    input_schema: Schema
    output_schema: Schema
    handler: Handler
    read_only: bool = True
    open_world: bool = False
    one_of: str | None = None

    def arguments(self, raw: Mapping[str, Any] | None, validator: Validator) -> dict[str, Any]:
        """Validated arguments (``validator``: the server's, compiled from `input_schema`)
        with the schema's defaults filled in; ArgumentError otherwise."""
        args = dict(raw or {})
        errors = list(validator.iter_errors(args))
        if errors:
            from jsonschema.exceptions import best_match

            error = best_match(errors)
            raise ArgumentError(f"invalid arguments for {self.name}: {self.describe(error)}")
        properties: Mapping[str, Schema] = self.input_schema.get("properties", {})
        for name, prop in properties.items():
            if name not in args and "default" in prop:
                args[name] = prop["default"]
            if prop.get("type") == "integer" and name in args:
                args[name] = int(args[name])  # 5.0 is a JSON Schema integer; the services want int
        return args

    def describe(self, error: Any) -> str:
        """One clear sentence for the most relevant jsonschema error."""
        properties = self.input_schema.get("properties", {})
        known = ", ".join(sorted(properties)) or "none"
        where = "/".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = [name for name in error.validator_value if name not in (error.instance or {})]
            return f"missing required argument {', '.join(map(repr, missing))}"
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(properties))
            return f"unknown argument {', '.join(map(repr, extra))} (valid arguments: {known})"
        if error.validator == "oneOf" and not where:
            return self.one_of or str(error.message)
        if error.validator == "type" and not where:
            return "arguments must be a JSON object"
        return f"argument {where!r}: {error.message}" if where else str(error.message)
