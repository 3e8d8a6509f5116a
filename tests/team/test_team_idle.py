"""The idle culler counts real activity, not an open tab (issue 22): an untouched tab kept its
server alive past the timeout (the websocket's pings went through the proxy, which the hub counted
as activity), so memory never came back.

The shipped configuration, with an hour made a minute: the culler stops servers idle for 45 s
(every 5 s), the hub polls the proxy every 5 s and users' servers report every 5 s. alice opens her
workbook and moves a slider every 15 s for a minute: her server stays. Then she leaves the tab open
and untouched: her server is stopped.
"""

from __future__ import annotations

import time

import psutil
import pytest

from aisize.app import team
from test_team_hub import BROWSER_ARGS, OPEN_MS, WORKBOOK, _needs, log_in

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(_needs() is not None, reason=str(_needs()))]

IDLE_SECONDS = 45  # longer than the websocket's 30 s ping, which kept servers alive
OVERLAY = '''load_subconfig({config!r})  # noqa: F821 -- the shipped configuration, an hour made a minute:
import sys
c.JupyterHub.services[0]["command"] = [sys.executable, "-m", "jupyterhub_idle_culler",
                                       "--timeout={idle}", "--cull-every=5"]
c.JupyterHub.last_activity_interval = 5
c.Spawner.args = list(c.Spawner.args) + ["--activity-interval=5"]
'''


def alice_server(hub) -> bool:
    """alice's server is running (not gone, not a zombie waiting for the hub to reap it)."""
    for process in hub.processes():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and "--Voila.base_url=/user/alice/" in " ".join(
                    process.cmdline()):
                return True
        except psutil.Error:  # gone meanwhile
            continue
    return False


def test_an_open_untouched_tab_does_not_keep_its_server(tmp_path):
    from playwright.sync_api import sync_playwright

    from aisize.report.pdf import chromium_path

    overlay = tmp_path / "idle_config.py"
    overlay.write_text(OVERLAY.format(config=str(team.hub_config_path()), idle=IDLE_SECONDS))
    hub = team.start_hub(tmp_path / "state", tmp_path / "hub.log", admin="alice", config=overlay)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium_path()), args=BROWSER_ARGS)
            page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
            log_in(page, hub.url, "alice", hub.admin_password())
            page.wait_for_selector(WORKBOOK, timeout=OPEN_MS)
            page.click(".lm-TabBar-tab:has-text('Inference')")
            handle = page.locator(".widget-inline-hbox:has(label:text-is('Request rate [requests/s]')) "
                                  ".noUi-handle >> visible=true").first
            for _ in range(5):  # a minute of work: a widget message every 15 s
                handle.focus()
                page.keyboard.press("ArrowRight")
                time.sleep(15)
            assert alice_server(hub), "culled while she worked"
            left = time.monotonic()
            while alice_server(hub) and time.monotonic() - left < 3 * IDLE_SECONDS:
                time.sleep(2)  # the tab stays open, its websocket connected, nobody touches it
            idle = time.monotonic() - left
            assert not alice_server(hub), f"an untouched tab kept the server for {idle:.0f} s"
            browser.close()
        print(f"culled {idle:.0f} s after the last slider move (timeout {IDLE_SECONDS} s)")
    finally:
        hub.stop()
