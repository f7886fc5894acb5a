"""Pages as the CLI and the MCP server serve them: found by id, path or link, read under
confinement, their blob at HEAD, the links of a text, and the wiki's status."""
