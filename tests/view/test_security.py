"""The view's guard, request by request: the one-time token and its cookie, Host (DNS
rebinding), Origin and Sec-Fetch-Site, the response headers, the CSRF token on POSTs."""

from __future__ import annotations

from starlette.testclient import TestClient

from ..conftest import Repo
from .conftest import PORT, Viewed, client_for, login, make_wiki

ORIGIN = f"http://127.0.0.1:{PORT}"


def test_without_the_token_everything_is_refused(repo: Repo) -> None:
    make_wiki(repo, "wiki/")
    guard, client = client_for(repo)
    with client:
        for path in ("/", "/review", "/page/wiki/concepts/alpha.md", "/static/view.js", "/check"):
            r = client.get(path)
            assert r.status_code == 401, path
            assert "one-time token" in r.text
        assert client.get("/?token=wrong").status_code == 401


def test_the_token_is_traded_once_for_an_httponly_strict_cookie(repo: Repo) -> None:
    make_wiki(repo, "wiki/")
    guard, client = client_for(repo)
    with client:
        r = client.get(f"/?token={guard.token}", follow_redirects=False)
        assert r.status_code == 303
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert guard.token not in cookie  # the session is another secret than the URL's
        assert client.get("/review").status_code == 200


def test_a_used_token_is_refused_in_a_fresh_browser(repo: Repo) -> None:
    make_wiki(repo, "wiki/")
    guard, client = client_for(repo)
    with client:
        login(guard, client)
        with TestClient(client.app, base_url=ORIGIN) as fresh:
            r = fresh.get(f"/?token={guard.token}")
            assert r.status_code == 403 and "used already" in r.text


def test_foreign_host_origin_and_cross_site_requests_are_refused(viewed: Viewed) -> None:
    c = viewed.client
    assert c.get("/review").status_code == 200
    assert c.get("/review", headers={"Host": "evil.example:80"}).status_code == 421
    assert c.get("/review", headers={"Host": f"evil.example:{PORT}"}).status_code == 421
    assert c.get("/review", headers={"Host": "127.0.0.1:1"}).status_code == 421
    assert c.get("/review", headers={"Host": f"localhost:{PORT}"}).status_code == 200
    assert c.get("/review", headers={"Origin": "http://evil.example"}).status_code == 403
    for site in ("cross-site", "same-site"):
        assert c.get("/review", headers={"Sec-Fetch-Site": site}).status_code == 403
    assert c.get("/review", headers={"Sec-Fetch-Site": "none"}).status_code == 200
    assert c.request("PUT", "/review").status_code == 405
    assert c.request("DELETE", "/review").status_code == 405


def test_every_response_carries_the_security_headers_and_no_cors(viewed: Viewed) -> None:
    c = viewed.client
    for path, status in (("/review", 200), ("/page/nope.md", 404), ("/static/view.css", 200)):
        r = c.get(path, headers={"Origin": ORIGIN})
        assert r.status_code == status, path
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert not any(k.lower().startswith("access-control-") for k in r.headers)
    refused = c.get("/review", headers={"Host": "evil.example"})
    assert refused.headers["x-content-type-options"] == "nosniff"


def test_a_post_needs_its_origin_the_same_origin_and_the_csrf_token(viewed: Viewed) -> None:
    c, cid, repo = viewed.client, viewed.cid, viewed.repo
    main = repo.git("rev-parse", "main").strip()
    sha = repo.git("rev-parse", f"llmwiki/review/{cid}").strip()
    good = {"csrf": viewed.guard.csrf(), "sha": sha, "tip": main}
    same = {"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"}
    url = f"/review/{cid}/approve"
    assert c.post(url, data=good).status_code == 403  # no Origin
    assert c.post(url, data=good, headers={"Origin": "http://evil.example"}).status_code == 403
    assert (
        c.post(url, data=good, headers={"Origin": ORIGIN, "Sec-Fetch-Site": "none"}).status_code
        == 403
    )
    # a browser's own form post under no-referrer: Origin null, vouched for by Fetch Metadata
    assert c.post(url, data=good, headers={"Origin": "null"}).status_code == 403
    cross = {"Origin": "null", "Sec-Fetch-Site": "cross-site"}
    assert c.post(url, data=good, headers=cross).status_code == 403
    r = c.post(url, data={**good, "csrf": "0" * 64}, headers=same)
    assert r.status_code == 403 and "CSRF" in r.text
    r = c.post(url, data={"sha": sha, "tip": main}, headers=same)
    assert r.status_code == 403
    assert repo.git("rev-parse", "main").strip() == main  # nothing was approved
    r = c.post(url, data=good, headers=same, follow_redirects=False)
    assert r.status_code == 303, r.text
    assert repo.git("rev-parse", "main").strip() != main


def test_the_process_binds_loopback_on_the_port_asked_and_refuses_without_token(
    repo: Repo,
) -> None:
    import socket
    import urllib.error
    import urllib.request

    from .browser import view_process

    make_wiki(repo, "")
    with socket.socket() as probe:  # a port free right now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with view_process(repo.root, "--port", str(port)) as url:
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/review", timeout=30)
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
            exc.close()
        else:
            raise AssertionError("served without the token")
