"""`llmwiki view`: a local web page to read the wiki and review candidates (docs/view.md).

security.py  the guard: token, cookie, Host/Origin/Fetch Metadata, CSRF, headers
render.py    markdown-it-py with raw HTML off, wikilinks, citations, rendered diffs
site.py      the workspace, its lock, and values cached while the repository is unchanged
review.py    /review, /review/<id>, and the Approve/Reject POSTs
wikipages.py /page/<path>, /source/<path>, /check
graph.py     /graph
app.py       the routes, and serving them with Uvicorn on 127.0.0.1
"""
