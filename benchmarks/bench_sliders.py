"""Kernel work per slider move, for every slider of every tab of the app (in-process, no browser).

Builds the app on the default preset (as the notebook does; ``--preset`` another), opens each tab in turn
and moves each of its shown, enabled sliders ``--moves`` steps right (one slider step each, as an ArrowRight does), timing
what the kernel does for one move: the plan and every shown output brought up to date. Prints, per
slider, the median and the largest CPU time of a move: CPU time of this process, which other work on
the machine does not inflate the way it does wall time (``--wall`` prints wall time instead). The
browser adds its own share on top (``benchmarks/bench_app.py`` times the whole round trip). ``--fresh`` re-plans
the whole scenario on every move, as the app did before incremental re-planning (its cache off): the figure
to compare against, in the same run of the same code.

``--rate-moves N`` first moves the Inference tab's request-rate slider N steps right and leaves it there (20 steps:
the default preset's service at 200 requests/s), to time the other sliders at that load.

    .venv/bin/python benchmarks/bench_sliders.py [--moves 8] [--wall] [--fresh] [--preset agentic-coding] [--tab Inference]
    .venv/bin/python benchmarks/bench_sliders.py --moves 6 --rate-moves 20 --tab Inference

``--rate-path N`` instead times N request-rate steps right from the preset's rate, one after another, as
``benchmarks/bench_app.py`` moves its slider (each move at a new rate; the p95 is set by those that meet a shape
first), and prints their median, p95 and largest.

``--split`` also prints, per slider, the thread CPU of a move's pieces (medians): the state's edit (validation,
the names followed: ``AppState.replace`` less the rest), the plan, the scenario bar, the other built sections' sync,
and the shown section's sync and ``update``.

``--repeats`` also counts, per move, the serving estimates, loaded states (a queue solved at some rates), steady
states and iteration times the move computes, and how many of them had arguments (by value) that an earlier move
of the run had computed already: work a cache keyed on those arguments would save. Counting slows the moves.
"""

from __future__ import annotations

import argparse
import collections
import functools
import math
import os
import statistics
import time

import ipywidgets as widgets

from aisize.app import build_app
from aisize.app.layout import TITLES
from aisize.plan import plan
from aisize.scenario import DEFAULT_PRESET, preset, to_dict

COUNTED = (("aisize.serving.estimate", "estimate"), ("aisize.serving.latency", "loaded_state"),
           ("aisize.serving.steady", "steady_state"), ("aisize.serving.iteration", "iteration_time"))


def _argument_key(args, kwargs) -> str:
    """The arguments by value: arrays by their bytes, every other object by its repr."""
    import numpy as np

    def one(v):
        return f"array{v.shape}{v.dtype}:{v.tobytes().hex()}" if isinstance(v, np.ndarray) else repr(v)
    return "|".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in sorted(kwargs.items())])


def count_repeats():
    """Wrap the :data:`COUNTED` functions wherever an aisize module holds them: returns {name: Counter of argument
    keys}, filled while they run."""
    import importlib
    import sys

    seen: dict = collections.defaultdict(collections.Counter)
    for module, name in COUNTED:
        real = getattr(importlib.import_module(module), name)

        @functools.wraps(real)  # aisize.serving.estimate.probe binds estimate's signature: keep it visible
        def counted(*args, _real=real, _name=name, **kwargs):
            seen[_name][_argument_key(args, kwargs)] += 1
            return _real(*args, **kwargs)
        for mod in [m for n, m in sys.modules.items() if n.startswith("aisize") and m is not None]:
            if getattr(mod, name, None) is real:
                setattr(mod, name, counted)
    return seen


SLIDERS = (widgets.FloatSlider, widgets.FloatLogSlider, widgets.IntSlider)


def step(slider):
    """The slider's value one step right (its own step: a ratio on a log slider), clamped to its end."""
    if isinstance(slider, widgets.FloatLogSlider):
        return 10 ** min(slider.max, math.log10(slider.value) + slider.step)
    return min(slider.max, slider.value + slider.step)


def sliders(widget):
    """The shown, enabled sliders under ``widget``, in page order (a hidden box hides its children)."""
    if widget.layout.display == "none":
        return
    if isinstance(widget, SLIDERS):
        if not widget.disabled:
            yield widget
        return
    for child in getattr(widget, "children", ()) or ():
        yield from sliders(child)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=8, help="moves per slider")
    parser.add_argument("--wall", action="store_true", help="time wall-clock instead of CPU")
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="the scenario the app opens on")
    parser.add_argument("--fresh", action="store_true", help="re-plan every workload on each move (no cache)")
    parser.add_argument("--tab", action="append", choices=TITLES, help="only this tab (repeatable)")
    parser.add_argument("--rate-moves", type=int, default=0, help="request-rate slider steps taken first (kept)")
    parser.add_argument("--repeats", action="store_true",
                        help="count the serving work each move does, and how much of it an earlier move did")
    parser.add_argument("--rate-path", type=int, default=0, help="time this many request-rate steps in a row")
    parser.add_argument("--split", action="store_true", help="also time a move's pieces (thread CPU, medians)")
    args = parser.parse_args()
    seen = count_repeats() if args.repeats else None
    clock = time.perf_counter if args.wall else time.process_time
    pieces = _split() if args.split else None
    app = build_app(display=False, data=to_dict(preset(args.preset)))
    if args.fresh:
        app.state.cache = None
        plan(app.state.scenario)  # the memoised functions hold this plan's results, as they did before the cache
    if args.rate_path:
        _rate_path(app, args.rate_path, clock)
        return
    if args.rate_moves:
        rate = next(s for s in sliders(app.open_tab("Inference").view) if s.description.startswith("Request rate"))
        for _ in range(args.rate_moves):
            rate.value = step(rate)
    worst = []
    print(f"{args.preset}: ms per move ({'wall' if args.wall else 'CPU'} time of the kernel's work), "
          f"{args.moves} moves a slider{', whole plan each move (--fresh)' if args.fresh else ''}"
          + (f", request rate {rate.value:g}/s ({args.rate_moves} steps first)" if args.rate_moves else ""))
    for title in args.tab or TITLES:
        section = app.open_tab(title)
        if pieces is not None:
            _split_listeners(app, section, pieces)
        for slider in list(sliders(section.view)):
            start, times, split = slider.value, [], collections.defaultdict(list)
            before = {k: collections.Counter(v) for k, v in seen.items()} if seen is not None else None
            for _ in range(args.moves):
                if pieces is not None:
                    pieces.clear()
                t = clock()
                slider.value = step(slider)
                times.append((clock() - t) * 1e3)
                if pieces is not None and "whole edit" in pieces:  # (a slider at its end moves nothing)
                    pieces["edit (validate, follow names)"] = pieces.pop("whole edit") - sum(
                        ms for name, ms in pieces.items() if not name.startswith("  "))
                    for name, ms in pieces.items():
                        split[name].append(ms)
            slider.value = start
            worst.append(max(times))
            print(f"  {title:<10} {slider.description:<32} median {statistics.median(times):6.1f}  "
                  f"max {max(times):6.1f}" + (_repeats(seen, before, args.moves) if seen is not None else "")
                  + ("; thread CPU: " + ", ".join(f"{name.strip()} {statistics.median(split[name]):.2f}"
                                                   for name in SPLIT if split.get(name)) if split else ""))
    print(f"every slider: worst move {max(worst):.1f} ms; load average (1, 5, 15 min) "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


SPLIT = ("edit (validate, follow names)", "plan", "scenario bar", "other sections: sync",
         "shown section: sync + update", "  of which update")


def _timed(pieces: dict, name: str, function):
    """``function`` adding its thread CPU ms to ``pieces[name]``."""
    @functools.wraps(function)
    def timed(*args, **kwargs):
        t = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            pieces[name] += (time.thread_time() - t) * 1e3
    return timed


def _split() -> dict:
    """Time the plan and the state's whole edit (before the app is built): {piece: ms of this move}."""
    import aisize.app.state as state_module

    pieces: dict = collections.defaultdict(float)
    state_module.plan = _timed(pieces, "plan", state_module.plan)
    state_module.AppState.replace = _timed(pieces, "whole edit", state_module.AppState.replace)
    return pieces


def _split_listeners(app, section, pieces: dict) -> None:
    """Time the state's listeners by who they are (the shown ``section``, the others, the scenario bar) and the shown
    section's ``update``, once for each section shown."""
    from aisize.app.sections import Section

    def name(listener):
        owner = getattr(listener, "__self__", None)
        return ("shown section: sync + update" if owner is section else "other sections: sync"
                if isinstance(owner, Section) else "scenario bar")
    app.state.listeners = [_timed(pieces, name(f), getattr(f, "__wrapped__", f)) for f in app.state.listeners]
    if not hasattr(section.update, "__wrapped__"):
        section.update = _timed(pieces, "  of which update", section.update)


def _rate_path(app, moves: int, clock) -> None:
    """Times ``moves`` request-rate steps in a row from the preset's rate (the path of bench_app.py's slider)."""
    rate = next(s for s in sliders(app.open_tab("Inference").view) if s.description.startswith("Request rate"))
    start, times = rate.value, []
    for _ in range(moves):
        t = clock()
        rate.value = step(rate)
        times.append((clock() - t) * 1e3)
    q = statistics.quantiles(times, n=20) if len(times) > 1 else times * 19
    print(f"{moves} request-rate moves {start:g} -> {rate.value:.0f}/s: median {statistics.median(times):.1f}, "
          f"p95 {q[18]:.1f}, max {max(times):.1f} ms")


def _repeats(seen, before, moves) -> str:
    """Per move: calls of each counted function, and (in brackets) those whose arguments an earlier call of the run
    had (by value)."""
    parts = []
    for name, counter in seen.items():
        old = before.get(name, collections.Counter())
        calls = sum(counter.values()) - sum(old.values())
        again = sum(counter[k] - old[k] - (0 if old[k] else 1) for k in counter if counter[k] > old[k])
        if calls:
            parts.append(f"{name} {calls / moves:.1f} ({again / moves:.1f})")
    return "; per move: " + ", ".join(parts)


if __name__ == "__main__":
    main()
