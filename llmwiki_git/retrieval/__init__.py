"""Retrieval: chunking, the embedding store, lexical and dense search, the context pack."""
