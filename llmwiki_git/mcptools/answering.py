"""``query_wiki``: a cited answer, exactly the JSON of `llmwiki query --json`; save and review
follow the CLI's publication policy."""

from __future__ import annotations

from ..errors import UsageError
from ..providertable import CHAT_PROVIDERS
from ..workspace import Workspace
from .base import LINKS_ENVELOPE, NULLABLE_STR, WARNINGS, Arguments, Result, Tool, flag, obj, text


def query(ws: Workspace, args: Arguments) -> Result:
    from ..answer.service import run_query
    from ..review.stage import answer_stager

    if args["review"] and not args["save"]:
        raise UsageError(
            "review=true requires save=true",
            hint="pass save=true and review=true to stage a review candidate",
        )
    # A refusal (exit code 1 in the CLI) is not a tool error: the answer is kept and
    # publicationRefusal says why nothing was written, exactly as `query --json` prints it.
    return run_query(
        ws,
        args["question"],
        save=args["save"],
        lang=args.get("lang"),
        debug=args["debug"],
        provider=args.get("provider"),
        stage=answer_stager(ws) if args["review"] else None,
    ).to_json()


QUERY_WIKI = Tool(
    "query_wiki",
    "Answer from the wiki",
    "Answer a question only from wiki pages, citing them with [[wikilinks]], then report which links "
    "resolve, are pending review, or are broken (the JSON of `llmwiki query --json`). save=true publishes "
    "the answer as one git commit when every citation resolves; save=true with review=true stages a review "
    "branch instead. A refused publication is reported in publicationRefusal and writes nothing.",
    obj(
        {
            "question": text("The question to answer from the wiki."),
            "save": flag(
                "Publish the answer as wiki/queries/<slug>.md in one git commit; refused (nothing written) "
                "when a citation is ambiguous, pending or broken."
            ),
            "review": flag(
                "With save=true: stage the answer as a review candidate branch instead of publishing."
            ),
            "lang": {
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": "Answer language (e.g. ja, zh-CN, German); wins over LLMWIKI_OUTPUT_LANG.",
            },
            "provider": {
                "type": "string",
                "enum": list(CHAT_PROVIDERS),
                "description": "Chat provider (default: LLMWIKI_PROVIDER, config, first with credentials, "
                "else extractive).",
            },
            "debug": flag("Add the retrieval snapshot (pages, chunks, scores) to the result."),
        },
        ("question",),
    ),
    {
        "type": "object",
        "required": [
            "version",
            "question",
            "answer",
            "provider",
            "pageIds",
            "source",
            "warnings",
            "answerCitations",
            "saved",
            "candidateId",
            "publicationRefusal",
        ],
        "properties": {
            "version": {"const": 1},
            "question": {"type": "string"},
            "answer": {"type": "string"},
            "provider": {"type": "object", "required": ["name", "model"]},
            "pageIds": {"type": "array", "items": {"type": "string"}},
            "source": {"type": "string"},
            "warnings": WARNINGS,
            "answerCitations": {"oneOf": [LINKS_ENVELOPE, {"type": "null"}]},
            "saved": NULLABLE_STR,
            "candidateId": NULLABLE_STR,
            "publicationRefusal": {"type": ["object", "null"]},
            "truncated": {"type": ["object", "null"]},
        },
    },
    query,
    read_only=False,
    open_world=True,
)
