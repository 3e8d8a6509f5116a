"""Speed of the served app in a real browser (Debian's Chromium, headless).

Measures, on the real server (``aisize.app.serve.start``):

(a) page open -> first complete render (the Training tab's figures and both
    its charts drawn), with a preheated kernel: each open waits until the pool
    has a fresh kernel that has executed the notebook. A first visit opens the
    page in a fresh browser context (empty cache; the first also pays for a
    cold browser and is reported apart); a reload opens it again in the
    context that has been there (the browser's cache holds the scripts), as a
    user reopens the app, and as ``bench_team.py`` times its "page open";
(b) slider move -> every dependent output on screen updated: one ArrowRight on
    the Inference tab's request-rate slider (a log slider, x1.12 a step, from
    20 to ~630 requests/s over 30 moves, so replicas change on the way),
    timed until the utilisation figure and the latency-vs-load chart have
    both changed (sections off screen catch up when shown);
(c) every other slider of every tab (``--every N`` moves each, 0 to skip): one
    ArrowRight, timed until the last change it makes to the page
    (a mutation observer on the page; the move counts once no change
    has landed for 300 ms, and is timed to its last change).

Targets: page open < 1.5 s, p95 per update < 50 ms. Prints the figures.

    .venv/bin/python benchmarks/bench_app.py [--opens 5] [--reloads 3] [--moves 30] [--every 6]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from aisize.app import serve

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]
FIGURE = "[data-key='training.gpus']"
RATE_HANDLE = (".widget-inline-hbox:has(label:text-is('Request rate [requests/s]')) .noUi-handle"
               " >> visible=true")
POOL_FILLED = re.compile(r"Kernel pool of .* is filled")
# The pool reports "filled" when the kernel has started; the notebook then
# still executes in it (imports, Altair's offline bundle): give it this long.
SETTLE_SECONDS = 12.0

# Arms a promise that resolves, with the milliseconds from the next keydown,
# once the result text and the marked point both differ from `before`.
ARM = """before => { window.updated = new Promise(resolve => {
  let t0 = null;
  document.addEventListener('keydown', () => { t0 = performance.now(); },
                            {once: true, capture: true});
  const observer = new MutationObserver(() => {
    const [text, point] = (%s)();
    if (t0 !== null && text !== before[0] && point !== before[1]) {
      observer.disconnect();
      resolve(performance.now() - t0);
    }
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true,
                                   attributes: true});
}); }"""
# the utilisation figure and the last chart on screen (latency vs load)
STATE = """() => { const charts = [...document.querySelectorAll('.vega-embed svg.marks')]
    .filter(e => e.getBoundingClientRect().width > 0);
  return [document.querySelector("[data-key='inference.utilisation']").textContent,
          charts[charts.length - 1].innerHTML]; }"""
ARM = ARM % STATE
# Arms a promise resolving to the ms from the next keydown to the last mutation of the page
# (null when nothing changed within 3 s: a slider at its end, or a control the tab does not show).
ARM_ANY = """() => { window.updated = new Promise(resolve => {
  let t0 = null, last = null;
  document.addEventListener('keydown', () => { t0 = performance.now(); }, {once: true, capture: true});
  const observer = new MutationObserver(() => { if (t0 !== null) last = performance.now(); });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
  const poll = setInterval(() => {
    const now = performance.now();
    if (t0 === null) return;
    if ((last !== null && now - last > 300) || now - t0 > 3000) {
      clearInterval(poll); observer.disconnect(); resolve(last === null ? null : last - t0);
    }
  }, 20);
}); }"""
SLIDER = (".widget-slider:not(.mod-disabled) .noUi-handle >> visible=true")


def wait_for_warm_pool(server: serve.Server, fills_seen: int, timeout: float = 120.0) -> int:
    """Wait for the pool's next "filled" report, then let the notebook finish."""
    deadline = time.monotonic() + timeout
    while len(POOL_FILLED.findall(server.log())) <= fills_seen:
        if time.monotonic() > deadline:
            raise TimeoutError("the kernel pool did not refill")
        time.sleep(0.2)
    time.sleep(SETTLE_SECONDS)
    return fills_seen + 1


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def every_slider(page, moves: int) -> dict[str, list[float]]:
    """ms per move of every enabled slider on every tab (``moves`` ArrowRights each), by "tab: label"."""
    out = {}
    tabs = page.locator(".lm-TabBar-tab").all_inner_texts()
    for tab in tabs:
        page.click(f".lm-TabBar-tab:has-text('{tab}')")
        page.wait_for_timeout(1500)  # the tab draws when first shown
        handles = page.locator(SLIDER)
        for k in range(handles.count()):
            handle = handles.nth(k)
            label = handle.locator("xpath=ancestor::div[contains(@class,'widget-slider')]//label").first.inner_text()
            handle.focus()
            times = []
            for _ in range(moves):
                page.evaluate(ARM_ANY)
                page.keyboard.press("ArrowRight")
                ms = page.evaluate("window.updated")
                if ms is not None:
                    times.append(ms)
            if times:
                out[f"{tab}: {label}"] = times
    return out


def timed_open(page, url: str | None) -> float:
    """ms from going to ``url`` (None: reloading the page) to the Training tab's figures and both charts."""
    t0 = time.perf_counter()
    if url is None:
        page.reload()
    else:
        page.goto(url)
    page.wait_for_selector(FIGURE, timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('.vega-embed svg.marks').length >= 2", timeout=60_000)
    return (time.perf_counter() - t0) * 1e3


def bench(opens: int, moves: int, every: int = 0, reloads: int = 3) -> None:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        server = serve.start(Path(tmp) / "voila.log")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            fills = 0
            open_ms, last_page = [], None
            for _ in range(opens):
                fills = wait_for_warm_pool(server, fills)
                if last_page is not None:
                    last_page.context.close()
                page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
                open_ms.append(timed_open(page, server.url))
                last_page = page
            reload_ms = []
            for _ in range(reloads):
                fills = wait_for_warm_pool(server, fills)
                reload_ms.append(timed_open(last_page, None))
            # the pool refills after the last open; let that finish before timing updates
            wait_for_warm_pool(server, fills)
            page = last_page
            page.click(".lm-TabBar-tab:has-text('Inference')")
            page.wait_for_selector("[data-key='inference.utilisation'] >> visible=true", timeout=60_000)
            page.wait_for_function("() => [...document.querySelectorAll('.vega-embed svg.marks')]"
                                   ".filter(e => e.getBoundingClientRect().width > 0).length >= 2", timeout=60_000)
            page.locator(RATE_HANDLE).first.focus()
            update_ms = []
            for _ in range(moves):
                page.evaluate(ARM, page.evaluate(STATE))
                page.keyboard.press("ArrowRight")
                update_ms.append(page.evaluate("window.updated"))
            others = every_slider(page, every) if every else {}
        finally:
            browser.close()
            server.stop()
    print(f"page open -> first complete render, preheated kernel: first (cold browser) "
          f"{open_ms[0]:.0f} ms; next {opens - 1}: median {statistics.median(open_ms[1:]):.0f} ms, "
          f"max {max(open_ms[1:]):.0f} ms (target < 1500 ms)")
    if reload_ms:
        print(f"page reload (browser cache warm) -> first complete render, preheated kernel ({reloads}): "
              f"median {statistics.median(reload_ms):.0f} ms, max {max(reload_ms):.0f} ms (target < 1500 ms)")
    print(f"request-rate slider move -> figures and chart updated ({moves} moves): "
          f"p50 {percentile(update_ms, 50):.0f} ms, p95 {percentile(update_ms, 95):.0f} ms, "
          f"max {max(update_ms):.0f} ms (target p95 < 50 ms)")
    for name, times in others.items():
        print(f"  {name} ({len(times)} moves): p50 {percentile(times, 50):.0f} ms, p95 {percentile(times, 95):.0f} ms")
    if others:
        every_ms = [t for times in others.values() for t in times]
        print(f"every other slider ({len(others)} sliders, {len(every_ms)} moves): p50 {percentile(every_ms, 50):.0f} "
              f"ms, p95 {percentile(every_ms, 95):.0f} ms, worst slider p95 "
              f"{max(percentile(t, 95) for t in others.values()):.0f} ms (target p95 < 50 ms)")
    # a 2-core machine shared with other work: the load says how much to trust the figures
    print("load average (1, 5, 15 min) before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=6, help="page opens to time (>= 2)")
    parser.add_argument("--reloads", type=int, default=3, help="reloads of the opened page to time")
    parser.add_argument("--moves", type=int, default=30, help="slider moves to time")
    parser.add_argument("--every", type=int, default=6, help="moves of every other slider (0: skip)")
    args = parser.parse_args()
    if args.opens < 2 or args.moves < 1 or args.reloads < 0:
        parser.error("--opens must be >= 2, --moves >= 1 and --reloads >= 0")
    bench(args.opens, args.moves, args.every, args.reloads)


if __name__ == "__main__":
    main()
