"""The team server end to end (issues 14 and 22): the shipped deploy/jupyterhub_config.py on loopback,
two people in a real browser (Debian's Chromium through Playwright).

alice is the admin named in the configuration (her first password is the one the hub wrote); bob signs
up with the real authenticator and cannot log in until alice approves him, with the button on her
approval page. A hostile sign-up (a name with TABs that would add an onanimationstart attribute to the
approval page) is refused, and a page on another site that alice visits cannot approve anyone (neither
a link to the old GET URL nor a form posted without the hub's XSRF token). Each lands on their own
aisize workbook, one moves a slider and changes the preset, and the other neither sees that scenario nor
can open the other's server. alice makes a PDF report from her workbook. Every process of a user's
server runs under the configured memory limit. Stopping the hub leaves no process behind (proxy, idle
culler, users' servers, kernels).
"""

from __future__ import annotations

import base64
import functools
import http.server
import importlib.util
import threading
import time

import psutil
import pytest

from aisize.app import team
from aisize.report.pdf import chromium_path

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WORKBOOK = "[data-key='training.gpus']"
OPEN_MS = 180_000  # first login spawns the user's server on a busy 2-core machine
UPDATE_MS = 30_000
PASSWORD = {"bob": "bob-sizes-clusters-8",
            "x\tstyle=animation-name:spinner-border\tonanimationstart=alert(document.cookie)": "hostile-password-9"}
HOSTILE = next(name for name in PASSWORD if "\t" in name)
MEMORY_LIMIT_BYTES = 1024**3  # c.Spawner.mem_limit = "1G" in deploy/jupyterhub_config.py
REPORT_MS = 300_000  # papermill and Chromium on a busy 2-core machine
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]


def _needs() -> str | None:
    if importlib.util.find_spec("jupyterhub") is None or importlib.util.find_spec("nativeauthenticator") is None:
        return "JupyterHub is not installed (pip install -e '.[team]')"
    if team.find_proxy() is None:
        return "configurable-http-proxy is not installed (npm install configurable-http-proxy; make team)"
    if chromium_path() is None:
        return "Chromium is not installed (Debian package 'chromium') or AISIZE_CHROMIUM hides it"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed"
    return None


pytestmark.append(pytest.mark.skipif(_needs() is not None, reason=str(_needs())))


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    state = tmp_path_factory.mktemp("team")
    started = team.start_hub(state / "state", state / "hub.log", admin="alice")
    yield started
    left = started.stop()
    assert left == [], f"processes left after the hub stopped (killed): {left}"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium_path()), args=BROWSER_ARGS)
        yield browser
        browser.close()


def sign_up(page, hub_url: str, name: str) -> str:
    page.goto(hub_url + "hub/signup")
    page.fill("input[name=username]", name)
    page.fill("input[name=signup_password]", PASSWORD[name])
    page.fill("input[name=signup_password_confirmation]", PASSWORD[name])
    page.click("[type=submit]")
    page.wait_for_load_state()
    return page.inner_text("body")


def log_in(page, hub_url: str, name: str, password: str | None = None) -> None:
    page.goto(hub_url + "hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", password or PASSWORD[name])
    page.click("[type=submit]")


@pytest.fixture
def other_site(tmp_path):
    """A web site elsewhere (http://localhost:PORT/, another site than the hub's 127.0.0.1) serving tmp_path."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_address[1]}/", tmp_path
    server.shutdown()


def approved(page, hub_url: str, name: str) -> bool:
    page.goto(hub_url + "hub/authorize")
    row = page.locator("tr", has=page.locator("td.aisize-username", has_text=name))
    return row.locator("td").nth(1).inner_text().strip() == "Yes"


def cross_site_approval_attempts(page, hub_url: str, site: tuple) -> None:
    """What a page on another site can do in the admin's browser: post the approval form, follow a link."""
    url, folder = site
    (folder / "post.html").write_text(
        f"<form id='f' method='post' action='{hub_url}hub/authorize'><input name='action' value='approve'>"
        "<input name='id' value='2'><input name='username' value='bob'></form>"
        "<script>document.getElementById('f').submit()</script>")
    (folder / "link.html").write_text(f"<script>location = '{hub_url}hub/authorize/bob'</script>")
    for name in ("post.html", "link.html"):
        with page.expect_navigation(url=lambda u: u.startswith(hub_url)):
            page.goto(url + name)
        page.wait_for_load_state()


def pdf_report(page) -> bytes:
    """Make a PDF report from the workbook's Summary tab; the PDF the download link holds."""
    page.click(".lm-TabBar-tab:has-text('Summary')")
    page.locator(".widget-inline-hbox:has(label:text-is('Report format')) select >> visible=true").select_option(
        label="PDF")
    page.click("button:has-text('Make report') >> visible=true")
    link = page.wait_for_selector("a.aisize-download:has-text('report (PDF)')", timeout=REPORT_MS)
    return base64.b64decode(link.get_attribute("href").split(",", 1)[1])


def figure(page, key: str) -> str:
    return page.inner_text(f"[data-key='{key}']")


def test_two_people_log_in_and_each_has_their_own_workbook(hub, browser, tmp_path, other_site):
    alice = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    bob = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    foreign = []
    for page in (alice, bob):  # loopback only: nothing may load from anywhere else
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(hub.url)
                   else (foreign.append(route.request.url), route.abort()))

    hostile = sign_up(bob, hub.url, HOSTILE)  # refused: the approval page never sees that name
    assert "Not signed up" in hostile and "lower-case letters" in hostile
    assert "admin" in sign_up(bob, hub.url, "bob").lower()  # bob waits for the admin's approval
    log_in(bob, hub.url, "bob")
    bob.wait_for_load_state()
    assert "/hub/login" in bob.url and bob.locator(WORKBOOK).count() == 0  # not approved yet

    t0 = time.monotonic()
    log_in(alice, hub.url, "alice", hub.admin_password())
    alice.wait_for_selector(WORKBOOK, timeout=OPEN_MS)  # the workbook is the page after login
    alice_seconds = time.monotonic() - t0
    assert alice.url.startswith(hub.url + "user/alice/")
    attacker = alice.context.new_page()  # alice, logged in, visits a page on another site
    cross_site_approval_attempts(attacker, hub.url, other_site)
    assert not approved(alice, hub.url, "bob") and "onanimationstart" not in alice.content()
    alice.locator("tr", has=alice.locator("td.aisize-username", has_text="bob")).locator(
        "button:has-text('Authorize')").click()  # the admin approves bob: a POST with the hub's token
    alice.wait_for_load_state()
    assert approved(alice, hub.url, "bob")
    alice.goto(hub.url + "user/alice/")
    alice.wait_for_selector(WORKBOOK, timeout=OPEN_MS)

    log_in(bob, hub.url, "bob")
    bob.wait_for_selector(WORKBOOK, timeout=OPEN_MS)
    assert bob.url.startswith(hub.url + "user/bob/")
    bob_gpus, bob_title = figure(bob, "training.gpus"), bob.inner_text(".aisize-title") if \
        bob.locator(".aisize-title").count() else None

    # alice moves a slider (one step of the first training job's target days)...
    alice.click(".lm-TabBar-tab:has-text('Inference')")
    alice.wait_for_selector("[data-key='inference.utilisation'] >> visible=true", timeout=UPDATE_MS)
    before = figure(alice, "inference.utilisation")
    alice.locator(".widget-inline-hbox:has(label:text-is('Request rate [requests/s]')) .noUi-handle "
                  ">> visible=true").first.focus()
    alice.keyboard.press("ArrowRight")
    alice.wait_for_function("old => { const e = document.querySelector(\"[data-key='inference.utilisation']\");"
                            " return e && e.offsetParent !== null && e.textContent !== old; }",
                            arg=before, timeout=UPDATE_MS)
    moved = figure(alice, "inference.utilisation")
    # ...and picks another scenario
    alice.locator(".widget-inline-hbox:has(label:text-is('Preset')) select").first.select_option(
        "llama3-70b-pretrain")
    alice.click(".lm-TabBar-tab:has-text('Training')")
    alice.wait_for_function("() => document.querySelector(\"[data-key='training.gpus']\").textContent === '1,024'",
                            timeout=UPDATE_MS)

    # bob's workbook is untouched, also after a reload (his own server, his own kernel)
    assert figure(bob, "training.gpus") == bob_gpus != "1,024"
    bob.reload()
    bob.wait_for_selector(WORKBOOK, timeout=OPEN_MS)
    assert figure(bob, "training.gpus") == bob_gpus
    bob.click(".lm-TabBar-tab:has-text('Inference')")
    bob.wait_for_selector("[data-key='inference.utilisation'] >> visible=true", timeout=UPDATE_MS)
    assert figure(bob, "inference.utilisation") == before != moved
    # and he cannot open alice's server
    response = bob.goto(hub.url + "user/alice/")
    bob.wait_for_load_state()
    assert bob.locator(WORKBOOK).count() == 0
    assert response.status == 403 or "403" in bob.inner_text("body")
    assert foreign == []

    # alice makes a PDF report from her workbook (the kernel's loop: Playwright runs in a worker thread)
    t0 = time.monotonic()
    pdf = pdf_report(alice)
    report_seconds = time.monotonic() - t0
    assert pdf[:5] == b"%PDF-" and len(pdf) > 10_000

    # the hub runs its proxy, the idle culler and one server per user, each under the memory limit
    processes = hub.processes()
    running = [" ".join(p.cmdline()) for p in processes]
    assert any("configurable-http-proxy" in c for c in running)
    assert any("jupyterhub_idle_culler" in c for c in running)
    servers = [p for p, c in zip(processes, running) if "-m voila" in c and "--Voila.base_url=/user/" in c]
    assert len(servers) == 2
    for server in servers:
        for process in [server] + server.children(recursive=True):
            assert process.rlimit(psutil.RLIMIT_DATA) == (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES)
    alice.screenshot(path=tmp_path / "alice.png")
    print(f"first login to workbook: alice {alice_seconds:.1f} s; PDF report {report_seconds:.1f} s")
