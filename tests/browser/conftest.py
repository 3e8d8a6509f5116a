"""Fixtures that serve the aisize app and drive Debian's Chromium against it.

``served_app`` starts the real server (``aisize.app.serve.start``, which runs
``serve.build_command``) on a free loopback port; ``page`` opens it in headless
Chromium with every request routed through a handler that aborts, and records,
anything bound for a host other than loopback. Browser tests skip if Chromium
(``aisize.report.pdf.chromium_path``: ``$AISIZE_CHROMIUM`` or Debian's) or
Playwright is missing; tests that only speak HTTP to the server need neither.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

from aisize.app import serve
from aisize.report.pdf import chromium_path

# Without these Chromium phones home at start (updates, sync, field trials).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic", "--disable-features=Translate,OptimizationHints,MediaRouter"]


def is_loopback(url: str) -> bool:
    scheme = urlsplit(url).scheme
    if scheme in ("data", "blob", "about"):
        return True
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class RequestLog:
    """Every request the page made; ``blocked`` are the non-loopback ones (aborted)."""

    seen: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    def websocket(self, ws) -> None:
        # route() does not see websockets; the CSP (connect-src 'self') blocks
        # foreign ones, and this records any attempt
        self.seen.append(ws.url)
        if not is_loopback(ws.url.replace("ws", "http", 1)):
            self.blocked.append(ws.url)

    def handle(self, route) -> None:
        url = route.request.url
        self.seen.append(url)
        if is_loopback(url):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()


@pytest.fixture(scope="session")
def served_app(tmp_path_factory):
    # one server for the whole browser suite, whose tests open many pages without connecting them:
    # room for all of them (tests/browser/test_app_limits.py checks the cap on a server of its own)
    app = serve.start(tmp_path_factory.mktemp("app") / "voila.log", max_sessions=256)
    yield app
    app.stop()


# Module scope: Playwright's sync API keeps an event loop running while it is open,
# and the report tests' own sync_playwright() refuses to start inside it.
@pytest.fixture(scope="module")
def browser():
    chromium = chromium_path()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium') or AISIZE_CHROMIUM hides it")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def requests_made() -> RequestLog:
    return RequestLog()


# The browser refuses what the CSP forbids before any request is made, so the
# route handler never sees it; the page reports it as a violation event.
RECORD_CSP_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation",
    e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));
"""


def open_context(browser, log: RequestLog, bypass_csp: bool = False):
    """A browser context whose every request goes through ``log``."""
    context = browser.new_context(viewport={"width": 1100, "height": 900}, bypass_csp=bypass_csp)
    context.route("**/*", log.handle)
    context.add_init_script(RECORD_CSP_VIOLATIONS)
    context.on("page", lambda page: page.on("websocket", log.websocket))
    return context


@pytest.fixture
def page(browser, requests_made):
    """A page under the app's Content-Security-Policy."""
    context = open_context(browser, requests_made)
    yield context.new_page()
    context.close()


@pytest.fixture
def page_without_csp(browser, requests_made):
    """A page that ignores the CSP, so every load the page attempts reaches the route handler."""
    context = open_context(browser, requests_made, bypass_csp=True)
    yield context.new_page()
    context.close()
