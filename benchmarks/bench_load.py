"""How many concurrent users one app server holds (headless Chromium on loopback).

Starts ONE voila server (``aisize.app.serve.start``, preheated pool, short kernel
culling), then opens sessions in steps (default 1, 2, 4, 8, 12, 16), each a page
in its own browser context of one headless Chromium. At each step it measures

- time to open a page at that load (navigation -> the Training figures and
  both charts drawn, then the Inference tab shown);
- update latency: one keyboard step of the Inference tab's request-rate slider
  -> the utilisation figure and the latency-vs-load chart both changed
  (the approach of ``bench_app.py``), (a) one session at a time, round-robin,
  and (b) in bursts where every open session moves at once;
- memory: RSS of the server's kernel processes (one per session, plus the
  preheated pool) and of the server itself, and the machine's available memory.

It stops early when available memory falls under ``--min-free-gib`` or a step
takes longer than ``--step-limit`` seconds. Then it closes every page and
watches the kernels: voila's page-close beacon should shut them down, else the
culler removes them after ``cull_idle_seconds``; it reports when their memory
came back.

Then the cap (``--plain-loads``, on a fresh server with the default limits):
that many concurrent plain page loads, as a script would send them (no
websocket ever connects), against ``max_sessions``: how many are served and
how many get the "busy, try again" page and how fast, the kernels' peak memory,
and how long until the never-connected kernels are culled
(``connect_timeout_seconds``). Everything is bounded (about 15 minutes at the
defaults).

    .venv/bin/python benchmarks/bench_load.py [--steps 1,2,4,8,12,16] [--moves 3] [--plain-loads 24]
    .venv/bin/python benchmarks/bench_load.py --steps none --plain-loads 24   # the cap only

The browser shares the machine's cores with the server, so on a small machine
the latencies are pessimistic for real, remote users.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

import bench_app  # the sibling script: run as `python benchmarks/bench_load.py`
from aisize.app import serve
from aisize.units import GiB, MiB

CHROMIUM, CHROMIUM_ARGS = bench_app.CHROMIUM, bench_app.CHROMIUM_ARGS
# Selectors as in bench_app.py; the update detector is bench_app's.
FIGURE = "[data-key='training.gpus']"
UTILISATION = "[data-key='inference.utilisation'] >> visible=true"
RATE_HANDLE = (".widget-inline-hbox:has(label:text-is('Request rate [requests/s]')) .noUi-handle"
               " >> visible=true")
STATE = bench_app.STATE  # the utilisation figure and the last chart on screen
# Resolves window.updated with the ms from the next keydown until both the figure and the chart changed.
ARM = bench_app.ARM
TWO_CHARTS = ("() => [...document.querySelectorAll('.vega-embed svg.marks')]"
              ".filter(e => e.getBoundingClientRect().width > 0).length >= 2")
OPEN_MS = 120_000
UPDATE_TIMEOUT_MS = 60_000


@dataclass
class Session:
    page: object
    moves: int = 0


@dataclass
class Step:
    sessions: int
    open_ms: list[float]
    sequential_ms: list[float]
    burst_ms: list[float]
    kernels: int
    kernel_rss_bytes: int
    kernel_uss_bytes: int
    server_rss_bytes: int
    available_bytes: int
    seconds: float


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def kernels(server: serve.Server) -> list[psutil.Process]:
    """The server's kernel processes (its ipykernel children)."""
    out = []
    for child in psutil.Process(server.process.pid).children(recursive=True):
        try:
            if "ipykernel" in " ".join(child.cmdline()):
                out.append(child)
        except psutil.NoSuchProcess:
            pass
    return out


def _memory(processes: list[psutil.Process], read) -> int:
    total = 0
    for p in processes:
        try:
            total += read(p)
        except psutil.NoSuchProcess:  # a kernel culled or shut down meanwhile
            pass
    return total


def rss(processes: list[psutil.Process]) -> int:
    return _memory(processes, lambda p: p.memory_info().rss)


def uss(processes: list[psutil.Process]) -> int:
    """Memory unique to the processes (freed when they exit): RSS counts shared libraries once per kernel."""
    return _memory(processes, lambda p: p.memory_full_info().uss)


def open_session(browser, url: str) -> tuple[Session, float]:
    page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
               else route.abort())  # loopback only
    t0 = time.perf_counter()
    page.goto(url, timeout=OPEN_MS)
    page.wait_for_selector(FIGURE, timeout=OPEN_MS)
    page.wait_for_function(TWO_CHARTS, timeout=OPEN_MS)
    opened_ms = (time.perf_counter() - t0) * 1e3
    page.click(".lm-TabBar-tab:has-text('Inference')")
    page.wait_for_selector(UTILISATION, timeout=OPEN_MS)
    page.wait_for_function(TWO_CHARTS, timeout=OPEN_MS)
    return Session(page), opened_ms


def press(session: Session) -> None:
    """Arm the detector and move the rate slider one step (right, then left: it stays near 20/s)."""
    page = session.page
    page.locator(RATE_HANDLE).first.focus()
    page.evaluate(ARM, page.evaluate(STATE))
    page.keyboard.press("ArrowRight" if session.moves % 2 == 0 else "ArrowLeft")
    session.moves += 1


def wait_update(session: Session) -> float:
    return session.page.evaluate(f"Promise.race([window.updated, new Promise((_, no) => "
                                 f"setTimeout(() => no('no update'), {UPDATE_TIMEOUT_MS}))])")


def measure_updates(sessions: list[Session], moves: int) -> tuple[list[float], list[float]]:
    sequential, burst = [], []
    for _ in range(moves):
        for s in sessions:  # one user at a time
            press(s)
            sequential.append(wait_update(s))
        for s in sessions:  # every user at once
            press(s)
        burst.extend(wait_update(s) for s in sessions)
    return sequential, burst


def wait_for_pool(server: serve.Server, pool_size: int, timeout: float) -> None:
    """Let the preheated pool finish executing the notebook before timing."""
    deadline = time.monotonic() + timeout
    while len(re.findall(r"Kernel pool of .* is filled", server.log())) < pool_size:
        if time.monotonic() > deadline:
            return
        time.sleep(0.5)
    time.sleep(10.0)


def bench(args) -> None:
    steps = [int(s) for s in args.steps.split(",")]
    began = time.monotonic()
    results: list[Step] = []
    stopped = "all steps done"
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        server = serve.start(Path(tmp) / "voila.log", pool_size=args.pool,
                             cull_idle_seconds=args.cull, cull_interval_seconds=args.cull_interval)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            wait_for_pool(server, args.pool, 120)
            idle_kernels = kernels(server)
            pool_rss = rss(idle_kernels)
            print(f"server up; {len(idle_kernels)} preheated kernel(s), {pool_rss / MiB:.0f} MiB; "
                  f"server {rss([psutil.Process(server.process.pid)]) / MiB:.0f} MiB; "
                  f"available {psutil.virtual_memory().available / GiB:.1f} GiB", flush=True)
            print(HEADER, flush=True)
            sessions: list[Session] = []
            for target in steps:
                t0 = time.monotonic()
                opens = []
                while len(sessions) < target:
                    session, ms = open_session(browser, server.url)
                    sessions.append(session)
                    opens.append(ms)
                sequential, burst = measure_updates(sessions, args.moves)
                time.sleep(2.0)  # let the pool's refill show in the memory figures
                ks = kernels(server)
                step = Step(len(sessions), opens, sequential, burst, len(ks), rss(ks), uss(ks),
                            rss([psutil.Process(server.process.pid)]), psutil.virtual_memory().available,
                            time.monotonic() - t0)
                results.append(step)
                print(row(step, args.pool), flush=True)
                if step.available_bytes < args.min_free_gib * GiB:
                    stopped = f"stopped: available memory under {args.min_free_gib} GiB"
                    break
                if step.seconds > args.step_limit:
                    stopped = f"stopped: the step took over {args.step_limit} s"
                    break
                if time.monotonic() - began > args.budget:
                    stopped = f"stopped: over the {args.budget} s budget for opening sessions"
                    break
            print(stopped, flush=True)
            for s in sessions:  # as a user closing the tab: voila's beforeunload beacon asks for shutdown
                s.page.close(run_before_unload=True)
            time.sleep(3.0)
            for s in sessions:
                s.page.context.close()
            reclaim(server, args, results[-1].kernel_rss_bytes if results else 0)
        finally:
            browser.close()
            server.stop()
    print(f"total {time.monotonic() - began:.0f} s; load average now "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


def plain_load(url: str) -> tuple[int, float]:
    """(status, seconds) of one page load that never connects a websocket."""
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=300) as reply:
            reply.read()
            status = reply.status
    except urllib.error.HTTPError as error:
        status = error.code
    return status, time.perf_counter() - t0


def bench_cap(args) -> None:
    """``--plain-loads`` concurrent plain loads against a server with the default limits."""
    with tempfile.TemporaryDirectory() as tmp:
        server = serve.start(Path(tmp) / "voila.log", pool_size=args.pool)
        try:
            wait_for_pool(server, args.pool, 120)
            base = rss(kernels(server))
            print(f"cap: max_sessions {serve.MAX_SESSIONS}, pool {args.pool} ({base / MiB:.0f} MiB); "
                  f"{args.plain_loads} concurrent plain page loads", flush=True)
            peak = [0, 0]

            def watch(stop_at):
                while time.monotonic() < stop_at:
                    ks = kernels(server)
                    peak[0], peak[1] = max(peak[0], len(ks)), max(peak[1], rss(ks))
                    time.sleep(1.0)

            t0 = time.monotonic()
            with ThreadPoolExecutor(args.plain_loads + 1) as pool:
                watcher = pool.submit(watch, t0 + 400)
                results = list(pool.map(plain_load, [server.url] * args.plain_loads))
                served = [s for code, s in results if code == 200]
                busy = [s for code, s in results if code == 503]
                print(f"cap: {len(served)} served (median {statistics.median(served or [0]):.1f} s, max "
                      f"{max(served or [0]):.1f} s), {len(busy)} busy pages (max {max(busy or [0]):.2f} s), "
                      f"other {len(results) - len(served) - len(busy)}; all answered in {time.monotonic() - t0:.0f} s",
                      flush=True)
                t1 = time.monotonic()
                while len(kernels(server)) > args.pool and time.monotonic() - t1 < 300:
                    time.sleep(2.0)
                gone = time.monotonic() - t1
                watcher.cancel()
            left = kernels(server)
            log = server.log()
            print(f"cap: peak {peak[0]} kernels, {peak[1] / GiB:.2f} GiB; {len(left)} kernels "
                  f"({rss(left) / MiB:.0f} MiB) {gone:.0f} s after the last load; "
                  f"{len(re.findall(r'its page did not connect', log))} culled as never connected", flush=True)
        finally:
            server.stop()


HEADER = ("sessions | open ms (median, max) | one-at-a-time p50/p95 ms | all-at-once p50/p95 ms | "
          "kernels | kernel RSS MiB | per kernel RSS / USS MiB | server MiB | available GiB | step s")


def row(step: Step, pool: int) -> str:
    opened = (f"{statistics.median(step.open_ms):6.0f}, {max(step.open_ms):6.0f}" if step.open_ms
              else "     -,      -")
    n = max(step.kernels, 1)
    return (f"{step.sessions:8d} | {opened:>21} | {percentile(step.sequential_ms, 50):8.0f} / "
            f"{percentile(step.sequential_ms, 95):6.0f} | {percentile(step.burst_ms, 50):8.0f} / "
            f"{percentile(step.burst_ms, 95):6.0f} | {step.kernels:7d} | {step.kernel_rss_bytes / MiB:14.0f} | "
            f"{step.kernel_rss_bytes / n / MiB:14.0f} / {step.kernel_uss_bytes / n / MiB:4.0f} | "
            f"{step.server_rss_bytes / MiB:10.0f} | "
            f"{step.available_bytes / GiB:13.1f} | {step.seconds:6.0f}")


def reclaim(server: serve.Server, args, loaded_rss: int) -> None:
    """After the pages close: when do the session kernels go and their memory come back?"""
    t0 = time.monotonic()
    limit = args.cull + args.cull_interval + 30
    seen = []
    while True:
        elapsed = time.monotonic() - t0
        ks = kernels(server)
        seen.append((elapsed, len(ks), rss(ks)))
        if len(ks) <= args.pool or elapsed > limit:
            break
        time.sleep(5.0)
    log = server.log()
    print("after closing every page: " + "; ".join(f"{t:.0f} s: {n} kernels, {m / MiB:.0f} MiB"
                                                     for t, n, m in seen[:: max(1, len(seen) // 8)] + seen[-1:]))
    print(f"kernel RSS {loaded_rss / MiB:.0f} MiB under load -> {seen[-1][2] / MiB:.0f} MiB "
          f"({seen[-1][1]} kernels, pool {args.pool}) {seen[-1][0]:.0f} s after the pages closed "
          f"(cull_idle_timeout {args.cull} s, cull_interval {args.cull_interval} s)")
    print(f"server log: {len(re.findall(r'Culling .* kernel', log))} kernels culled; page-close beacons "
          f"(POST /voila/api/shutdown): {len(re.findall(r'204 POST /voila/api/shutdown', log))} answered 204, "
          f"{len(re.findall(r'403 POST /voila/api/shutdown', log))} answered 403")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1,2,4,8,12,16", help="session counts, increasing ('none': skip)")
    parser.add_argument("--moves", type=int, default=3, help="slider rounds per step (each: one-at-a-time + burst)")
    parser.add_argument("--pool", type=int, default=2, help="preheated kernels (voila --pool_size)")
    parser.add_argument("--cull", type=int, default=60, help="cull_idle_timeout [s]")
    parser.add_argument("--cull-interval", type=int, default=10, help="cull_interval [s]")
    parser.add_argument("--min-free-gib", type=float, default=4.0, help="stop under this available memory [GiB]")
    parser.add_argument("--step-limit", type=float, default=120.0, help="stop after a step longer than this [s]")
    parser.add_argument("--budget", type=float, default=420.0, help="stop opening sessions after this [s]")
    parser.add_argument("--plain-loads", type=int, default=24, help="concurrent plain loads against the cap (0: skip)")
    args = parser.parse_args()
    if args.moves < 1 or args.pool < 0 or not 0 <= args.plain_loads <= 200:
        parser.error("--moves must be >= 1, --pool >= 0 and --plain-loads 0..200")
    if args.steps != "none":
        bench(args)
    if args.plain_loads:
        bench_cap(args)


if __name__ == "__main__":
    main()
