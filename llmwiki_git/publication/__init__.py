"""Publication: page documents, candidates, trailers, validation and the one write transaction."""
