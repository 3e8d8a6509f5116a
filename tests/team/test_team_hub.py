"""The team server end to end (issue 14): the shipped deploy/jupyterhub_config.py on loopback,
two people in a real browser (Debian's Chromium through Playwright).

alice (the admin) and bob sign up with the real authenticator (NativeAuthenticator); bob cannot log
in until alice approves him. Each lands on their own aisize workbook, one moves a slider and changes
the preset, and the other neither sees that scenario nor can open the other's server. Stopping the
hub leaves no process behind (proxy, idle culler, users' servers, kernels).
"""

from __future__ import annotations

import importlib.util
import time

import pytest

from aisize.app import team
from aisize.report.pdf import chromium_path

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WORKBOOK = "[data-key='training.gpus']"
OPEN_MS = 180_000  # first login spawns the user's server on a busy 2-core machine
UPDATE_MS = 30_000
PASSWORD = {"alice": "alice-sizes-clusters-7", "bob": "bob-sizes-clusters-8"}
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


def log_in(page, hub_url: str, name: str) -> None:
    page.goto(hub_url + "hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD[name])
    page.click("[type=submit]")


def figure(page, key: str) -> str:
    return page.inner_text(f"[data-key='{key}']")


def test_two_people_log_in_and_each_has_their_own_workbook(hub, browser, tmp_path):
    alice = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    bob = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    foreign = []
    for page in (alice, bob):  # loopback only: nothing may load from anywhere else
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(hub.url)
                   else (foreign.append(route.request.url), route.abort()))

    assert "successful" in sign_up(alice, hub.url, "alice")  # the admin is approved at sign-up
    assert "admin" in sign_up(bob, hub.url, "bob").lower()  # bob waits for the admin's approval
    log_in(bob, hub.url, "bob")
    bob.wait_for_load_state()
    assert "/hub/login" in bob.url and bob.locator(WORKBOOK).count() == 0  # not approved yet

    t0 = time.monotonic()
    log_in(alice, hub.url, "alice")
    alice.wait_for_selector(WORKBOOK, timeout=OPEN_MS)  # the workbook is the page after login
    alice_seconds = time.monotonic() - t0
    assert alice.url.startswith(hub.url + "user/alice/")
    alice.goto(hub.url + "hub/authorize/bob")  # the admin approves bob
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

    # the hub runs its proxy, the idle culler and one server per user
    running = [" ".join(p.cmdline()) for p in hub.processes()]
    assert any("configurable-http-proxy" in c for c in running)
    assert any("jupyterhub_idle_culler" in c for c in running)
    assert sum("-m voila" in c and "--Voila.base_url=/user/" in c for c in running) == 2
    alice.screenshot(path=tmp_path / "alice.png")
    print(f"first login to workbook: alice {alice_seconds:.1f} s")
