"""Git plumbing below every writer: the repository lock and the commit builder."""
