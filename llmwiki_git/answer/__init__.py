"""Answers: the query pipeline, citation policy and publication."""
