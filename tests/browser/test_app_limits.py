"""The served app's limits (issue 14), over plain HTTP as an outsider would send it (no browser):

- a malformed ``/voila/templates/...`` path is a 404, not a 500 with a traceback in the log;
- only IP addresses, localhost and the allowed host names are answered (DNS rebinding);
- at most ``max_sessions`` pages are served at once: past that a "busy, try again" 503;
- a served kernel whose page never connects is shut down after ``connect_timeout_seconds``,
  one whose page is connected is kept;
- a page that comes while the pool's refill is held back starts that refill at once.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest

from aisize.app import serve

pytestmark = pytest.mark.browser

KERNEL_ID = re.compile(rb'"kernelId":\s*"([0-9a-f-]{36})"')


def get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.mark.parametrize("path", ["voila/templates/../../etc/passwd", "voila/templates/..%2F..%2Fetc%2Fpasswd",
                                  "voila/templates/aisize/static/../../../../../../etc/passwd",
                                  "voila/templates/aisize", "voila/templates/"])
def test_malformed_template_paths_are_not_found(served_app, path):
    status, _, body = get(served_app.url + path)
    assert status == 404, (path, status)  # was 500 with an AssertionError traceback in the log
    assert b"root:" not in body and b"Traceback" not in body


@pytest.fixture(scope="module")
def small_app(tmp_path_factory):
    """A server with room for two pages, a 6-second connect timeout and one allowed host name."""
    app = serve.start(tmp_path_factory.mktemp("small") / "voila.log", pool_size=1, max_sessions=2,
                      connect_timeout_seconds=6, allowed_hosts=("sizing.example.com",))
    yield app
    app.stop()


@pytest.mark.parametrize("host, status", [("evil.example", 403), ("sizing.example.com.evil.example", 403),
                                          ("localhost", 200), ("127.0.0.1", 200), ("sizing.example.com", 200),
                                          ("SIZING.example.com", 200), ("192.0.2.7", 200), ("[::1]", 200)])
def test_only_addresses_localhost_and_allowed_names_are_answered(small_app, host, status):
    got, _, _ = get(small_app.url + "api/kernels/00000000-0000-4000-8000-000000000000",
                    {"Host": f"{host}:{small_app.port}"})
    # the kernel does not exist: an accepted host gets 404 from the handler, a refused one 403 before it
    assert got == (404 if status == 200 else 403), (host, got)
    if status == 403:
        assert f"Refused a request for host {host.lower()!r}" in small_app.log()


def test_a_rebinding_page_is_refused(small_app):
    status, _, body = get(small_app.url, {"Host": f"attacker.example:{small_app.port}"})
    assert status == 403 and not KERNEL_ID.search(body)  # no kernel was started for it


def kernel_alive(app, kernel_id: bytes) -> bool:
    status, _, _ = get(f"{app.url}api/kernels/{kernel_id.decode()}")
    return status == 200


def test_past_the_cap_a_busy_page_then_unconnected_kernels_are_culled(small_app):
    websocket = pytest.importorskip("websocket")
    # the first page must take the preheated kernel, so that its refill is the one a page admits: wait for voila's
    # pool to be rendered (run alone, this test's first request came before it and got a kernel of its own)
    deadline = time.monotonic() + 120
    while "is filled with 1 kernel(s)" not in small_app.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "is filled with 1 kernel(s)" in small_app.log()
    opened = []
    status, _, body = get(small_app.url)
    assert status == 200
    opened.append(KERNEL_ID.search(body)[1])
    # the first page connects, as a browser does, before its 6 s run out; the second only fetches the HTML
    ws = websocket.create_connection(f"ws://127.0.0.1:{small_app.port}/api/kernels/{opened[0].decode()}/channels",
                                     timeout=30)
    try:
        status, _, body = get(small_app.url)  # takes the pool's refill, which starts at once for it
        assert status == 200
        opened.append(KERNEL_ID.search(body)[1])
        assert "Pool refill started at once: a page was admitted" in small_app.log()
        before = len(small_app.log())
        status, headers, body = get(small_app.url)
        assert status == 503
        deadline = time.monotonic() + 30  # the server logs a request after its answer has gone
        while "503 GET /" not in small_app.log()[before:] and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = small_app.log()[before:]
        assert "503 GET /" in refused  # refused at once: no kernel taken or started for it in the meantime
        assert "Using pre-heated kernel" not in refused and "Kernel started" not in refused
        assert headers.get("Retry-After") == "30" and b"busy" in body and b"Try again" in body
        assert not KERNEL_ID.search(body)
        deadline = time.monotonic() + 40
        while kernel_alive(small_app, opened[1]) and time.monotonic() < deadline:
            time.sleep(1.0)
        assert not kernel_alive(small_app, opened[1]), "a kernel whose page never connected was kept"
        assert f"Culling kernel {opened[1].decode()}: its page did not connect within 6 s" in small_app.log()
        assert kernel_alive(small_app, opened[0])  # connected: kept
        status, _, body = get(small_app.url)  # a session is free again
        assert status == 200
    finally:
        ws.close()


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_sessions=0), "max_sessions"), (dict(connect_timeout_seconds=0), "connect_timeout_seconds"),
    (dict(allowed_hosts=("evil host",)), "allowed_hosts"), (dict(allowed_hosts=("a/b",)), "allowed_hosts"),
    (dict(base_url="user/alice"), "base_url"), (dict(base_url="/user/../"), "base_url"),
])
def test_bad_limits_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        serve.build_command(**kwargs)


def test_a_tab_that_dies_without_closing_frees_its_session(tmp_path):
    """Issue 46.6: a page connected, then its websocket dropped with no unload (a killed tab): its session is
    given back after the grace, where it was held until the 10-minute idle cull."""
    websocket = pytest.importorskip("websocket")
    app = serve.start(tmp_path / "voila.log", pool_size=0, max_sessions=1, disconnect_grace_seconds=3)
    try:
        status, _, body = get(app.url)
        assert status == 200
        kernel = KERNEL_ID.search(body)[1]
        ws = websocket.create_connection(f"ws://127.0.0.1:{app.port}/api/kernels/{kernel.decode()}/channels",
                                         timeout=30)
        assert get(app.url)[0] == 503  # the one session is taken
        ws.sock.close()  # the tab's process is gone: no close frame, no shutdown request
        deadline = time.monotonic() + 30
        while kernel_alive(app, kernel) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not kernel_alive(app, kernel), "a page that left without closing kept its kernel"
        assert "its page left without closing and did not come back within 3 s" in app.log()
        assert get(app.url)[0] == 200  # its session is free again
    finally:
        app.stop()


def test_a_page_that_reconnects_within_the_grace_keeps_its_kernel(tmp_path):
    websocket = pytest.importorskip("websocket")
    app = serve.start(tmp_path / "voila.log", pool_size=0, max_sessions=1, disconnect_grace_seconds=8)
    try:
        kernel = KERNEL_ID.search(get(app.url)[2])[1]
        channels = f"ws://127.0.0.1:{app.port}/api/kernels/{kernel.decode()}/channels"
        websocket.create_connection(channels, timeout=30).sock.close()
        time.sleep(2)
        ws = websocket.create_connection(channels, timeout=30)  # a network blip: the page comes back
        try:
            time.sleep(12)  # past the grace and a check
            assert kernel_alive(app, kernel)
        finally:
            ws.close()
    finally:
        app.stop()
