"""Growing the wiki from sources: `llmwiki ingest` and `llmwiki compile` (docs/compile.md)."""
