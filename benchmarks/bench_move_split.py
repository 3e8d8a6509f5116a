"""Where a slider move's time goes, outside and inside the kernel: the plan, the outputs, the messages, the browser.

Two parts, for the Inference tab's request-rate and prompt sliders (the default preset, the rate first moved
``--rate-moves`` steps right, as ``bench_sliders.py --rate-moves`` does, so the service is at 200 requests/s):

1. The kernel, in this process. Each move is applied as the browser's comm ``update`` message is
   (``Widget.set_state``: the echo, then the callbacks), with every widget's comm replaced by one that records
   what it would publish. Per move it prints thread CPU time of: the state's edit (validation, the scenario's
   names followed: ``AppState.replace`` less the rest), the plan (``aisize.plan.plan``), the scenario bar
   (title, download link), the other built sections' control sync, the shown section's sync and its outputs
   (``Section.update``), and the messages' serialization (``jupyter_client.session.json_packer``, as the kernel's
   session packs them; the signing and the socket are not counted); and the messages and bytes sent, by output.
2. The browser (``--browser``): the app served by ``aisize.app.serve.start`` (template, pool) in Debian's Chromium
   (Playwright), the pool left to refill before the moves. The page records its websocket's frames (its own
   update; the kernel's busy/idle and output messages, classified by their text, with the time the kernel stamped
   in each header) and every mutation of the page. Per move, ms from the keydown: the update sent, the kernel's
   busy, first and last output message and idle, each as the kernel sent it and as the page received it, the
   page's last change, and the main thread's busy time (Chrome's counters, CDP ``Performance.getMetrics``; with
   ``--trace``, a Chrome trace summed by script, style, layout and paint; with ``--count``, the calls of the Vega
   view's ``runAsync`` and ``render``, exact, from V8's precise coverage). A move counts as done once the page has
   not changed for 300 ms. ``--dump FILE`` writes the page's charts (SVG), text, tables and download links after
   the moves: run with ``PYTHONPATH=<tree>`` for two trees and compare the files (what the page shows, byte for
   byte).

``--every N`` also moves every other shown slider of every tab N steps (after the above), and prints one line a
slider: in process, the messages and bytes a move sends and to which outputs; with ``--browser``, in the page, the
bytes and output messages it received and ms from the last output's arrival to the page's last change.

    .venv/bin/python benchmarks/bench_move_split.py [--moves 10] [--rate-moves 20] [--every 3] [--browser [--trace]
        [--count] [--dump FILE] [--kernel-timer]] [--no-kernel]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import comm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser_trace import CATEGORIES, SHOWN, WATCH, _browser_move, traced, vega_calls  # noqa: E402

SLIDERS = ("Request rate [requests/s]", "Prompt [tokens]")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def spread(values: list[float], unit: str = "ms") -> str:
    return f"median {statistics.median(values):6.2f} {unit}, p95 {p95(values):6.2f} {unit}"


# part 1: the kernel


class _Sent:
    """What the widgets' comms publish during a move: (widget's comm id, message data, buffers)."""

    def __init__(self):
        self.messages: list[tuple[str, dict, list]] = []

    def __call__(self, comm_, msg_type, data=None, metadata=None, buffers=None, **keys):
        if msg_type == "comm_msg":
            self.messages.append((comm_.comm_id, data, list(buffers or ())))


class _Timer:
    """Thread CPU time of named pieces of a move, summed per move."""

    def __init__(self):
        self.now: dict[str, float] = collections.defaultdict(float)

    def wrap(self, name: str, function):
        def timed(*args, **kwargs):
            t = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.now[name] += (time.thread_time() - t) * 1e3
        return timed


def _names(app, section) -> dict[str, str]:
    """comm id -> what the output is, for the widgets a move may update."""
    from bench_sliders import sliders

    names = {app.download: "scenario bar: download link", app.title: "scenario bar: title",
             app.status: "scenario bar: status", section.figures: "figures (HTML cards)",
             section.memory_note: "memory note (HTML)", section.latency_note: "latency note (HTML)",
             section.error: "error line (HTML)"}
    for slot, what in ((section.memory_chart, "memory chart"), (section.latency_chart, "latency chart")):
        if slot.chart is not None:
            names[slot.chart] = what
    for s in sliders(section.view):
        names[s] = f"slider: {s.description}"
    return {w.comm.comm_id: what for w, what in names.items() if w.comm is not None}


def kernel(moves: int, rate_moves: int) -> None:
    from jupyter_client.session import json_packer

    sent = _Sent()
    # every widget's comm (no kernel: comm's default) records its messages
    comm.DummyComm.publish_msg = lambda self, *args, **kwargs: sent(self, *args, **kwargs)
    import aisize.app.state as state_module
    from aisize.app import build_app
    from aisize.app.sections import Section
    from bench_sliders import sliders, step

    timer = _Timer()
    state_module.plan = timer.wrap("plan", state_module.plan)
    app = build_app(display=False)
    section = app.open_tab("Inference")
    # who listens: the scenario bar first, then each section as it was built
    app.state.listeners = [timer.wrap("shown section: sync + outputs" if getattr(f, "__self__", None) is section
                                      else "other sections: sync" if isinstance(getattr(f, "__self__", None), Section)
                                      else "scenario bar (title, download link)", f) for f in app.state.listeners]
    section.update = timer.wrap("  of which outputs (Section.update)", section.update)
    replace = timer.wrap("whole edit (state, plan, listeners)", app.state.replace)
    app.state.replace = replace
    shown = {s.description: s for s in sliders(section.view)}
    for _ in range(rate_moves):
        shown[SLIDERS[0]].set_state({"value": step(shown[SLIDERS[0]])})
    print(f"kernel, in process: thread CPU ms per move, {moves} moves a slider, request rate "
          f"{shown[SLIDERS[0]].value:.4g}/s first ({rate_moves} steps); messages as the kernel would send them")
    for label in SLIDERS:
        slider, names = shown[label], _names(app, section)
        pieces, counts, sizes, pack_ms = collections.defaultdict(list), [], collections.defaultdict(list), []
        for _ in range(moves):
            sent.messages.clear()
            timer.now.clear()
            t = time.thread_time()
            slider.set_state({"value": step(slider)})  # as the browser's update: echo, then callbacks
            total = (time.thread_time() - t) * 1e3
            t = time.thread_time()
            packed = [(cid, len(json_packer(data)) + sum(len(b) for b in buffers))
                      for cid, data, buffers in sent.messages]
            pack_ms.append((time.thread_time() - t) * 1e3)
            for name, ms in timer.now.items():
                pieces[name].append(ms)
            whole = timer.now["whole edit (state, plan, listeners)"]
            pieces["state: validate, follow names"].append(whole - sum(
                ms for name, ms in timer.now.items() if not name.startswith(("whole", "  "))))
            pieces["move (set_state: echo + callbacks)"].append(total)
            counts.append(len(packed))
            per = collections.defaultdict(int)
            names = _names(app, section)  # a chart rebuilt is a new widget
            for cid, n in packed:
                per[names.get(cid, "other widget")] += n
            for what in set(names.values()) | set(per):
                sizes[what].append(per.get(what, 0))
        print(f"  {label}:")
        for name in ("move (set_state: echo + callbacks)", "whole edit (state, plan, listeners)",
                     "state: validate, follow names", "plan", "scenario bar (title, download link)",
                     "other sections: sync", "shown section: sync + outputs", "  of which outputs (Section.update)"):
            if pieces.get(name):
                print(f"    {name:<40} {spread(pieces[name])}")
        print(f"    {'serialize (json_packer)':<40} {spread(pack_ms)}")
        print(f"    messages per move: {spread(counts, '')}; bytes per move: "
              f"{spread([sum(s[k] for s in sizes.values()) for k in range(moves)], 'B')}")
        for what, bytes_ in sorted(sizes.items(), key=lambda kv: -sum(kv[1])):
            if any(bytes_):
                print(f"      {what:<38} sent in {sum(1 for b in bytes_ if b)}/{moves} moves, "
                      f"median {statistics.median(bytes_):7.0f} B")


def _outputs(app, section) -> dict[str, str]:
    """comm id -> the name of each output a move of ``section``'s sliders may update: the scenario bar's and the
    section's widgets and charts, by attribute name."""
    from ipywidgets import Widget

    from aisize.app.controls import ChartSlot

    names = {app.download: "bar.download", app.title: "bar.title", app.status: "bar.status"}
    for attr, value in vars(section).items():
        if isinstance(value, Widget) and not hasattr(value, "min"):
            names[value] = attr
        elif isinstance(value, ChartSlot) and value.chart is not None:
            names[value.chart] = attr
    return {w.comm.comm_id: what for w, what in names.items() if w.comm is not None}


def kernel_every(moves: int) -> None:
    """Every shown slider of every tab, ``moves`` steps each, in process: messages and bytes a move sends."""
    from jupyter_client.session import json_packer

    from aisize.app import build_app
    from aisize.app.layout import TITLES
    from bench_sliders import sliders, step

    sent = _Sent()
    comm.DummyComm.publish_msg = lambda self, *args, **kwargs: sent(self, *args, **kwargs)
    app = build_app(display=False)
    print(f"kernel, in process, every slider of every tab ({moves} moves each): messages and bytes a move sends "
          "(median), by output (bytes summed over the moves / moves; sliders' own echoes under 'controls'); "
          "'same' counts messages that set only values the page already had (waste)")
    last: dict[tuple[str, str], object] = {}  # (comm id, trait) -> the value last sent
    for title in TITLES:
        section = app.open_tab(title)
        for slider in list(sliders(section.view)):
            label = slider.description
            counts, totals, per, same = [], [], collections.Counter(), 0
            for _ in range(moves):
                sent.messages.clear()
                slider.set_state({"value": step(slider)})
                names = _outputs(app, section)
                for cid, data, _buffers in sent.messages:
                    state = data.get("state", {}) if data.get("method") == "update" else {}
                    same += bool(state) and all(last.get((cid, k), last) == v for k, v in state.items())
                    last.update({(cid, k): v for k, v in state.items()})
                sizes = [(names.get(cid, "controls"), len(json_packer(data)) + sum(len(b) for b in buffers))
                         for cid, data, buffers in sent.messages]
                counts.append(len(sizes))
                totals.append(sum(n for _, n in sizes))
                for what, n in sizes:
                    per[what] += n
            shown = ", ".join(f"{what} {n / moves / 1e3:.1f}" for what, n in per.most_common(4))
            print(f"  {title}: {label:<34} {statistics.median(counts):3.0f} messages, "
                  f"{statistics.median(totals) / 1e3:6.1f} kB a move, same {same}; kB: {shown}")


# part 2: the browser

KERNEL_TIMED = (("busy to idle, wall", "wall"), ("  thread CPU", "cpu"),
                ("  process CPU (all threads)", "process_cpu"),
                ("  waiting for a CPU (run queue)", "runqueue"),
                ("handler (set_state), wall", "handler_wall"), ("  thread CPU", "handler_cpu"),
                ("plan, wall", "plan_wall"), ("  thread CPU", "plan_cpu"))


def kernel_timed(folder: Path, parts: list[tuple[str, int]], every: list[str] = (), n_every: int = 0) -> None:
    """Print what ``aisize.app.move_timer`` recorded in the page's kernel: the slider moves' messages (value
    updates), in order, cut into ``parts``: (what, n); other messages are counted. Then one line for each slider
    of ``every`` (labels as moved by :func:`_browser_every`, ``n_every`` moves each): its last moves' medians."""
    import json

    logs = [p for p in folder.glob("moves-*.jsonl") if p.stat().st_size]
    if len(logs) != 1:
        print(f"kernel timer: {len(logs)} kernels logged moves (want 1)")
        return
    records = [json.loads(line) for line in logs[0].read_text(encoding="utf-8").splitlines()]
    by_label = collections.defaultdict(list)
    for r in records:
        by_label[r["what"].split(": update ['value']")[0]].append(r)
    moves_ = [r for r in records if r["what"].startswith(SLIDERS) and "'value'" in r["what"]]
    others = collections.Counter(r["what"] for r in records if r not in moves_)
    print(f"in the page's kernel (aisize.app.move_timer): ms a move; other widget messages: {dict(others)}")
    records = moves_
    start = 0
    for what, n in parts:
        rs, start = records[start:start + n], start + n
        if not rs:
            continue
        print(f"  {what} ({len(rs)} moves):")
        for label, key in KERNEL_TIMED:
            print(f"    {label:<40} {spread([r[key] for r in rs])}")
        print(f"    {'messages sent (session.send), wall':<40} {spread([r['send_wall'] for r in rs])}; "
              f"{statistics.median(r['sends'] for r in rs):.0f} a move")
        print(f"    {'  thread CPU':<40} {spread([r['send_cpu'] for r in rs])}")
        print(f"    {'busy to idle less handler, wall':<40} {spread([r['wall'] - r['handler_wall'] for r in rs])}")
        print(f"    {'handler less plan and sends, wall':<40} "
              f"{spread([r['handler_wall'] - r['plan_wall'] - r['send_wall'] for r in rs])}")
        print(f"    {'  thread CPU':<40} {spread([r['handler_cpu'] - r['plan_cpu'] - r['send_cpu'] for r in rs])}")
        print(f"    {'garbage collector pauses':<40} {spread([sum(r['gc_ms']) for r in rs])}; collections "
              f"by generation {[sum(r['gc_n'][g] for r in rs) for g in range(3)]}")
        print(f"    {'planned ahead (aisize.app.ahead)':<40} shown {sum(r.get('ahead_used', 0) for r in rs)} of "
              f"{len(rs)} moves; planned within a move's span {sum(r.get('ahead_planned', 0) for r in rs)}")
    profiled = [r["profile"] for label in every for r in by_label.get(label, [])[-n_every:] if r.get("profile")]
    if profiled:
        _profiled(profiled)
    if every:
        print("  every slider (medians, ms a move): busy to idle wall, thread CPU, run queue; thread CPU of the "
              "handler, of the plan, of the sends and of the handler less both; messages sent: n, wall")
    for label in every:
        rs = by_label.get(label, [])[-n_every:]
        if rs:
            def med(key):
                return statistics.median(r[key] for r in rs)
            rest = statistics.median(r["handler_cpu"] - r["plan_cpu"] - r["send_cpu"] for r in rs)
            print(f"    {label:<34} {med('wall'):6.1f} {med('cpu'):6.1f} {med('runqueue'):6.1f}; "
                  f"{med('handler_cpu'):6.1f} {med('plan_cpu'):6.1f} {med('send_cpu'):6.1f} {rest:6.1f}; "
                  f"{med('sends'):3.0f} {med('send_wall'):6.1f}")


def _profiled(files: list[str], top: int = 40) -> None:
    """The ``--kernel-profile`` moves' cProfile statistics merged: the functions with the most cumulative time, and
    with the most own time, in ms a move (cProfile's clock, its overhead included: where, not how long)."""
    import io
    import pstats

    out = io.StringIO()
    stats = pstats.Stats(*files, stream=out)
    n = len(files)
    rows = [(func, cc, nc, tt, ct) for func, (cc, nc, tt, ct, _) in stats.stats.items()]
    for title, key in (("cumulative", 4), ("own", 3)):
        print(f"  profiled ({n} moves of the --every sliders), by {title} time: ms a move (cumulative, own), calls a move")
        for func, _cc, nc, tt, ct in sorted(rows, key=lambda r: -r[key])[:top]:
            where = f"{Path(func[0]).parent.name}/{Path(func[0]).name}:{func[1]}" if func[0] != "~" else ""
            print(f"    {ct / n * 1e3:7.2f} {tt / n * 1e3:7.2f} {nc / n:8.1f}  {where} {func[2]}")


def _browser_every(page, cdp, moves: int, tabs: list[str] | None = None) -> list[str]:
    """Every enabled slider of every tab (or of ``tabs``), ``moves`` ArrowRights each, in the page: one line a
    slider (medians); returns the sliders' labels in the order moved."""
    from bench_app import sliders_shown

    print(f"browser, every slider of {'the tabs ' + ', '.join(tabs) if tabs else 'every tab'} ({moves} moves each; "
          "medians): bytes and output messages received, ms from the keydown to the kernel's busy and idle as "
          "sent, to the last output in and to the page's last change, and between the two; the main thread's "
          "busy ms from the keydown to the last change (counters: task, of which script and layout)")
    moved = []
    for tab, label in sliders_shown(page, tabs):
        moved.append(label)
        rows = [r for r in (_browser_move(page, cdp) for _ in range(moves)) if r is not None]
        if not rows:
            print(f"  {tab}: {label:<34} no output changed")
            continue

        def med(name):
            return statistics.median(r[name] for r in rows)
        print(f"  {tab}: {label:<34} {med('received bytes') / 1e3:6.1f} kB, "
              f"{med('output messages received'):2.0f} outputs; busy {med('kernel: busy sent'):5.1f}, idle "
              f"{med('kernel: idle sent'):5.1f}, last output in {med('page: last output in'):6.1f}"
              f" ms, last change {med('page: last change'):6.1f} ms, after the last output "
              f"{med('page: last change after last output in'):5.1f} ms; main thread "
              + ", ".join(f"{med('main thread (counters): ' + c):.1f}" for c in ("Task", "Script", "Layout")))
    return moved


def browser(moves: int, rate_moves: int, trace: bool, dump: str | None = None, count: bool = False,
            kernel_timer: bool = False, every: int = 0, tabs: list[str] | None = None,
            kernel_profile: str | None = None) -> None:
    from playwright.sync_api import sync_playwright

    from aisize.app import serve
    from aisize.app.move_timer import ENV
    from bench_app import CHROMIUM, CHROMIUM_ARGS, Served, app_drawn, rate_slider_ready, settle

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        if kernel_timer:  # the server's kernels inherit it
            os.environ[ENV] = tmp
            if kernel_profile:
                from aisize.app.move_timer import PROFILE_ENV

                os.environ[PROFILE_ENV] = kernel_profile
        app = Served("app", serve.start(Path(tmp) / "voila.log"), app_drawn)
        browser_ = None
        try:
            browser_ = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            settle([app])
            context = browser_.new_context(viewport={"width": 1100, "height": 900})
            context.add_init_script(WATCH)
            page = context.new_page()
            page.goto(app.server.url)
            app_drawn(page)
            app.fills_expected += 1  # the pool refills after the open: not under the moves
            settle([app])
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            rate_slider_ready(page)
            for _ in range(rate_moves):
                _browser_move(page, cdp)
            print(f"browser ({moves} moves a slider, after {rate_moves} rate steps): ms from the keydown ('kernel: "
                  "... sent' by the kernel's clock, 'page: ... in' as the page received it), and the page's main "
                  "thread's work from the keydown to the page's last change")
            for label in SLIDERS:
                page.locator(f".widget-inline-hbox:has(label:text-is('{label}')) .noUi-handle"
                             " >> visible=true").first.focus()
                if trace:
                    browser_.start_tracing(page=page, categories=CATEGORIES)
                if count:  # call counts, exact (V8's precise coverage); reset by the first take
                    cdp.send("Profiler.enable")
                    cdp.send("Profiler.startPreciseCoverage", {"callCount": True, "detailed": False})
                    cdp.send("Profiler.takePreciseCoverage")
                rows = [r for r in (_browser_move(page, cdp) for _ in range(moves)) if r is not None]
                windows = [r.pop("window") for r in rows]
                print(f"  {label} ({len(rows)} moves timed):")
                for name in rows[0] if rows else ():
                    unit = "B" if name.endswith("bytes") else "" if name.startswith(("messages", "output")) else "ms"
                    print(f"    {name:<52} {spread([r[name] for r in rows], unit)}")
                if count:
                    calls = vega_calls(cdp.send("Profiler.takePreciseCoverage"))
                    cdp.send("Profiler.stopPreciseCoverage")
                    print("    Vega calls per move: " + ", ".join(f"{name} {n / moves:.2f}"
                                                           for name, n in calls.items()))
                if trace:
                    for what, values in traced(browser_.stop_tracing(), windows).items():
                        print(f"    main thread (trace): {what:<44} {spread(values)}")
            moved = _browser_every(page, cdp, every, tabs) if every else []
            if dump:
                Path(dump).write_text(page.evaluate(SHOWN), encoding="utf-8")
            if kernel_timer:
                kernel_timed(Path(tmp), [(f"request rate, the first {rate_moves} steps (bench_app.py's path)",
                                          rate_moves)] + [(label, moves) for label in SLIDERS], moved, every)
        finally:
            if browser_ is not None:
                browser_.close()
            app.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=10, help="moves per slider")
    parser.add_argument("--rate-moves", type=int, default=20, help="request-rate steps taken first (kept)")
    parser.add_argument("--browser", action="store_true", help="also time the moves in the served page")
    parser.add_argument("--trace", action="store_true", help="with --browser: sum the main thread's traced events")
    parser.add_argument("--count", action="store_true",
                        help="with --browser: count the Vega view's runs and renders per move (slows the moves)")
    parser.add_argument("--dump", help="with --browser: write the page's charts (SVG), text, tables and download "
                        "links after the moves here")
    parser.add_argument("--kernel-timer", action="store_true",
                        help="with --browser: time each move inside the page's kernel (aisize.app.move_timer)")
    parser.add_argument("--kernel-profile", nargs="?", const="cpu", choices=("cpu", "wall"),
                        help="with --kernel-timer: also profile each move in the page's kernel (cProfile of the "
                        "thread's CPU, or of wall time; slower moves) and print the --every sliders' functions by time")
    parser.add_argument("--no-kernel", action="store_true", help="skip the in-process kernel part")
    parser.add_argument("--every", type=int, default=0,
                        help="then move every other slider of every tab this many steps (0: skip)")
    parser.add_argument("--tab", action="append",
                        help="with --browser --every: only this tab's sliders (repeat for more tabs)")
    args = parser.parse_args()
    if args.moves < 1 or args.rate_moves < 0 or args.every < 0:
        parser.error("--moves must be >= 1, --rate-moves >= 0 and --every >= 0")
    if not args.no_kernel:
        kernel(args.moves, args.rate_moves)
        if args.every:
            kernel_every(args.every)
    if args.browser:
        browser(args.moves, args.rate_moves, args.trace, args.dump, args.count, args.kernel_timer, args.every,
                args.tab, args.kernel_profile)
    print("load average (1, 5, 15 min) " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
