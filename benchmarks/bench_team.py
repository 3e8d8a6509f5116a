"""How many people one team server holds (JupyterHub + one aisize server per user), on this machine.

Starts the team hub (``aisize.app.team.start_hub`` with deploy/jupyterhub_config.py; only the
authenticator is swapped for JupyterHub's dummy one so that logins need no sign-up), then logs
users in, in steps (default 1, 2, 4, 8, 12, 16), each in its own context of one headless Chromium
with ``--tabs`` tabs open on their workbook (default 1; at most 4, the per-user cap).
At each step it measures

- first open: login -> the workbook drawn through the hub (includes starting the user's server);
- page open: one logged-in user reloading the workbook (the user's server already running);
- update latency: one keyboard step of the Inference request-rate slider -> its figure changed,
  each user in turn;
- memory per user: RSS, USS and PSS of each user's server with its kernels, and the machine's available
  memory; people per machine = (total memory - 4 GiB for the system - the hub) / PSS per user.

It stops early when available memory falls under ``--min-free-gib`` or a step takes longer than
``--step-limit`` seconds, then stops the hub (and checks nothing it started is left).

    .venv/bin/python benchmarks/bench_team.py [--steps 1,2,4,8,12,16] [--tabs 4] [--report]

``--floor N``: instead of the steps, times the app against its floor behind the same hub, in the same run:
users floor01.. get a bare server (``benchmarks/floor/team_server.py``: the app's own server command from
``aisize.app.team.user_server_command``, started by the same spawner, with the same voila flags, template,
preheated pool and hub authentication, serving ``benchmarks/floor/one_slider.ipynb`` instead of the app),
users app01.. the app. N users of each log in, alternating (floor, app; app, floor; ...), then ``--reloads``
reloads of each kind's last page and ``--moves`` slider moves alternate (an untimed login of floor00 first takes
the cold browser's and the hub's first-page costs); each open and reload waits until
every server's preheated pool is full and settled. It prints app, floor, ratio and difference for the first
open (login -> drawn, the server's start included), the reload and the slider (ms p95).

    .venv/bin/python benchmarks/bench_team.py --floor 2 [--reloads 3] [--moves 10]

``--report``: after the steps, the first user makes an HTML+PDF report from the Summary tab while their
processes' memory is sampled; it prints the report's time and the person's peak RSS and PSS (the report's
kernel and Chromium included), and people per machine if each made a report at once.

The browser shares the machine's cores with the servers, so the latencies are pessimistic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

import bench_app  # the sibling scripts: run as `python benchmarks/bench_team.py`
import bench_load
from aisize.app import team
from aisize.units import GiB, MiB

WORKBOOK = "[data-key='training.gpus']"
UTILISATION, RATE_HANDLE = bench_load.UTILISATION, bench_load.RATE_HANDLE
OPEN_MS = 300_000
SYSTEM_BYTES = 4 * GiB  # the operating system, the browser people use elsewhere, headroom
OVERLAY = '''load_subconfig({config!r})  # noqa: F821 -- the shipped configuration, then:
c.JupyterHub.authenticator_class = "dummy"  # benchmark only: log in without signing up
c.DummyAuthenticator.password = "bench-password"
c.Authenticator.allow_all = True
'''
FLOOR_OVERLAY = '''
# benchmark only: users named floor* get the bare server (benchmarks/floor/team_server.py), from the same spawner
def _floor_server(spawner):
    if spawner.user.name.startswith("floor"):
        spawner.cmd = [{python!r}, {script!r}]


c.Spawner.pre_spawn_hook = _floor_server
'''
FLOOR_SCRIPT = Path(__file__).resolve().parent / "floor" / "team_server.py"


def log_in(browser, url: str, name: str, tabs: int = 1, drawn: str = WORKBOOK):
    """Log ``name`` in and open ``tabs`` tabs of their workbook (``drawn``: the selector that says it is drawn);
    (first tab, seconds to its workbook)."""
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    page = context.new_page()
    t0 = time.perf_counter()
    page.goto(url + "hub/login", timeout=OPEN_MS)
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "bench-password")
    page.click("[type=submit]")
    page.wait_for_selector(drawn, timeout=OPEN_MS)
    seconds = time.perf_counter() - t0
    for _ in range(tabs - 1):
        tab = context.new_page()
        tab.goto(page.url, timeout=OPEN_MS)
        tab.wait_for_selector(drawn, timeout=OPEN_MS)
    return page, seconds


def reopen(page, drawn: str = WORKBOOK) -> float:
    t0 = time.perf_counter()
    page.reload(timeout=OPEN_MS)
    page.wait_for_selector(drawn, timeout=OPEN_MS)
    return time.perf_counter() - t0


def slider_ms(page) -> float:
    page.click(".lm-TabBar-tab:has-text('Inference')")
    page.wait_for_selector(UTILISATION, timeout=OPEN_MS)
    page.wait_for_function(bench_load.TWO_CHARTS, timeout=OPEN_MS)
    page.locator(RATE_HANDLE).first.focus()
    page.evaluate(bench_app.ARM, page.evaluate(bench_app.STATE))
    page.keyboard.press("ArrowRight")
    return page.evaluate("Promise.race([window.updated, new Promise((_, no) => setTimeout(() => no('no update'),"
                         " 60000))])")


def report_peak(page, hub, user: str) -> tuple[float, int, int, str]:
    """Make an HTML+PDF report in ``page``; (seconds, peak RSS, peak PSS of ``user``'s processes, what it said)."""
    page.click(".lm-TabBar-tab:has-text('Summary')")
    page.locator(".widget-dropdown:has-text('Report format') select").select_option(label="HTML and PDF")
    page.click("button:has-text('Make report')")
    t0, peak_rss, peak_pss = time.perf_counter(), 0, 0
    done = "text=/Report ready|could not be made/"
    while page.locator(done).count() == 0 and time.perf_counter() - t0 < OPEN_MS / 1000:
        rss, _, pss = user_memory(hub).get(user, (0, 0, 0))
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        page.wait_for_timeout(250)
    said = page.locator(done).first.inner_text() if page.locator(done).count() else "no answer"
    return time.perf_counter() - t0, peak_rss, peak_pss, said[:80]


def user_memory(hub) -> dict[str, tuple[int, int, int]]:
    """user -> (RSS, USS, PSS) of their server and its kernels."""
    out = {}
    for proc in hub.processes():
        try:
            cmd = " ".join(proc.cmdline())
            if "-m voila" not in cmd or "--Voila.base_url=/user/" not in cmd:
                continue
            user = cmd.split("--Voila.base_url=/user/")[1].split("/")[0]
            full = [p.memory_full_info() for p in [proc] + proc.children(recursive=True)]
            out[user] = (sum(m.rss for m in full), sum(m.uss for m in full), sum(m.pss for m in full))
        except Exception:  # a process gone meanwhile
            continue
    return out


def hub_memory(hub) -> int:
    """PSS of the hub, its proxy and the idle culler (everything under the hub but users' servers)."""
    import psutil

    total = 0
    for proc in [psutil.Process(hub.process.pid)] + hub.processes():
        try:
            if "--Voila.base_url=/user/" in " ".join(proc.cmdline()) or any(
                    "--Voila.base_url=/user/" in " ".join(p.cmdline()) for p in proc.parents()):
                continue
            total += proc.memory_full_info().pss
        except Exception:  # a process gone meanwhile
            continue
    return total


def bench(args) -> None:
    import psutil

    steps = [int(s) for s in args.steps.split(",")]
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        overlay = Path(tmp) / "bench_config.py"
        overlay.write_text(OVERLAY.format(config=str(team.hub_config_path())))
        hub = team.start_hub(Path(tmp) / "state", Path(tmp) / "hub.log", config=overlay)
        browser = playwright.chromium.launch(executable_path=bench_app.CHROMIUM, args=bench_app.CHROMIUM_ARGS)
        pages, stopped = [], "all steps done"
        try:
            print(f"{args.tabs} tab(s) per user; users | first open s (median, max) | page open s (reload) | "
                  "slider ms p50/p95 | per user RSS / USS / PSS MiB | all users GiB | available GiB | "
                  "people per machine | step s", flush=True)
            for target in steps:
                t0 = time.monotonic()
                firsts = []
                while len(pages) < target:
                    page, seconds = log_in(browser, hub.url, f"user{len(pages) + 1:02d}", args.tabs)
                    pages.append(page)
                    firsts.append(seconds)
                reloads = [reopen(pages[0]), reopen(pages[-1])]
                sliders = [slider_ms(p) for p in pages]
                mem = user_memory(hub)
                rss, uss, pss = ([m[i] for m in mem.values()] for i in range(3))
                available = psutil.virtual_memory().available
                hub_bytes = hub_memory(hub)
                people = (psutil.virtual_memory().total - SYSTEM_BYTES - hub_bytes) / statistics.mean(pss)
                seconds = time.monotonic() - t0
                ordered = sorted(sliders)
                print(f"{len(pages):5d} | {statistics.median(firsts):8.1f}, {max(firsts):6.1f} | "
                      f"{statistics.median(reloads):20.1f} | {ordered[len(ordered) // 2]:6.0f} / "
                      f"{ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]:5.0f} | "
                      f"{statistics.mean(rss) / MiB:10.0f} / {statistics.mean(uss) / MiB:4.0f} / "
                      f"{statistics.mean(pss) / MiB:4.0f} | {sum(rss) / GiB:13.2f} | {available / GiB:13.1f} | "
                      f"{people:5.0f} | {seconds:6.0f}", flush=True)
                if available < args.min_free_gib * GiB:
                    stopped = f"stopped: available memory under {args.min_free_gib} GiB"
                    break
                if seconds > args.step_limit:
                    stopped = f"stopped: the step took over {args.step_limit} s"
                    break
            print(stopped, flush=True)
            if args.report and pages:
                seconds, rss, pss, said = report_peak(pages[0], hub, "user01")
                people = (psutil.virtual_memory().total - SYSTEM_BYTES - hub_memory(hub)) / pss
                print(f"report (HTML+PDF) by user01: {seconds:.1f} s, {said!r}; their peak RSS {rss / MiB:.0f} MiB, "
                      f"PSS {pss / MiB:.0f} MiB; people per machine all making a report at once: {people:.0f}",
                      flush=True)
        finally:
            browser.close()
            left = hub.stop()
    print(f"hub stopped; processes left: {left or 'none'}; total {time.monotonic() - began:.0f} s; "
          "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


def settle(hub, fills: int, timeout: float = 300.0) -> None:
    """Wait until the users' servers have reported ``fills`` pool fills in all (one when a server starts, one
    after each page open or reload takes its kernel), then let the notebooks run."""
    deadline = time.monotonic() + timeout
    while len(bench_app.POOL_FILLED.findall(hub.log())) < fills:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the users' kernel pools did not refill ({fills} fills expected)")
        time.sleep(0.3)
    time.sleep(bench_app.SETTLE_SECONDS)


def bench_floor(args) -> None:
    """The app against its floor (a bare server from the same spawner, the one-slider notebook), alternating."""
    began = time.monotonic()
    load_before = os.getloadavg()
    kinds = {"floor": {"drawn": bench_app.FLOOR_VALUE, "first": [], "reload": [], "slider": [], "page": None},
             "app": {"drawn": WORKBOOK, "first": [], "reload": [], "slider": [], "page": None}}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        overlay = Path(tmp) / "bench_config.py"
        overlay.write_text(OVERLAY.format(config=str(team.hub_config_path()))
                           + FLOOR_OVERLAY.format(python=sys.executable, script=str(FLOOR_SCRIPT)))
        hub = team.start_hub(Path(tmp) / "state", Path(tmp) / "hub.log", config=overlay)
        browser = playwright.chromium.launch(executable_path=bench_app.CHROMIUM, args=bench_app.CHROMIUM_ARGS)
        fills = 0
        order = [("floor", "app") if k % 2 == 0 else ("app", "floor") for k in range(max(args.floor, args.reloads,
                                                                                          args.moves))]
        try:
            # not timed: the run's first login pays for a cold browser and a hub serving its first pages
            log_in(browser, hub.url, "floor00", drawn=bench_app.FLOOR_VALUE)[0].context.close()
            fills += 2
            for k in range(args.floor):
                for kind in order[k]:
                    settle(hub, fills)
                    kinds[kind]["page"], seconds = log_in(browser, hub.url, f"{kind}{k + 1:02d}",
                                                          drawn=kinds[kind]["drawn"])
                    kinds[kind]["first"].append(seconds)
                    fills += 2  # the new server's pool, then its refill after this open
                    print(f"  first open {kind}{k + 1:02d}: {seconds:.2f} s", flush=True)
            for k in range(args.reloads):
                for kind in order[k]:
                    settle(hub, fills)
                    kinds[kind]["reload"].append(reopen(kinds[kind]["page"], kinds[kind]["drawn"]))
                    fills += 1
            settle(hub, fills)
            app_page, floor_page = kinds["app"]["page"], kinds["floor"]["page"]
            app_page.click(".lm-TabBar-tab:has-text('Inference')")
            app_page.wait_for_selector(UTILISATION, timeout=OPEN_MS)
            app_page.wait_for_function(bench_load.TWO_CHARTS, timeout=OPEN_MS)
            app_page.locator(RATE_HANDLE).first.focus()
            floor_page.locator(bench_app.FLOOR_HANDLE).first.focus()
            for k in range(args.moves):
                for kind in order[k]:
                    if kind == "app":
                        ms, _ = bench_app.timed_move(app_page, bench_app.ARM, bench_app.STATE, split=False)
                    else:
                        ms, _ = bench_app.timed_move(floor_page, bench_app.FLOOR_ARM, bench_app.FLOOR_STATE,
                                                      split=False)
                    kinds[kind]["slider"].append(ms)
        finally:
            browser.close()
            left = hub.stop()
    app, floor = kinds["app"], kinds["floor"]
    print("team server against its floor (a bare server from the same hub, proxy and spawner, serving "
          "benchmarks/floor/one_slider.ipynb; alternating with the app in this run):")
    for kind in ("floor", "app"):
        print(f"  {kind}: first opens s {', '.join(f'{x:.2f}' for x in kinds[kind]['first'])}; reloads s "
              f"{', '.join(f'{x:.2f}' for x in kinds[kind]['reload']) or '-'}")
    print("  " + bench_app.against("first open (login -> drawn, server start included) median",
                                   [x * 1e3 for x in app["first"]], [x * 1e3 for x in floor["first"]], None, "s"))
    if args.reloads:
        print("  " + bench_app.against("reload median", [x * 1e3 for x in app["reload"]],
                                       [x * 1e3 for x in floor["reload"]], None, "s"))
    if args.moves:
        print("  " + bench_app.against("slider p95", app["slider"], floor["slider"], 95, "ms"))
    print(f"hub stopped; processes left: {left or 'none'}; total {time.monotonic() - began:.0f} s; load average "
          "before " + ", ".join(f"{x:.2f}" for x in load_before) + "; after "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1,2,4,8,12,16", help="user counts, increasing")
    parser.add_argument("--tabs", type=int, default=1, choices=range(1, 5), help="tabs each user opens (1 to 4)")
    parser.add_argument("--min-free-gib", type=float, default=4.0, help="stop under this available memory [GiB]")
    parser.add_argument("--step-limit", type=float, default=600.0, help="stop after a step longer than this [s]")
    parser.add_argument("--report", action="store_true", help="then time an HTML+PDF report and its peak memory")
    parser.add_argument("--floor", type=int, default=0, metavar="N",
                        help="instead of the steps: N users of the app against N of the floor, alternating")
    parser.add_argument("--reloads", type=int, default=3, help="with --floor: reloads of each kind to time")
    parser.add_argument("--moves", type=int, default=10, help="with --floor: slider moves of each kind to time")
    args = parser.parse_args()
    if args.floor < 0 or args.reloads < 0 or args.moves < 0:
        parser.error("--floor, --reloads and --moves must be >= 0")
    if args.floor:
        bench_floor(args)
    else:
        bench(args)


if __name__ == "__main__":
    main()
