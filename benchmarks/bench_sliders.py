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
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import ipywidgets as widgets

from aisize.app import build_app
from aisize.app.layout import TITLES
from aisize.plan import plan
from aisize.scenario import DEFAULT_PRESET, preset, to_dict

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
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    app = build_app(display=False, data=to_dict(preset(args.preset)))
    if args.fresh:
        app.state.cache = None
        plan(app.state.scenario)  # the memoised functions hold this plan's results, as they did before the cache
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
        for slider in list(sliders(section.view)):
            start, times = slider.value, []
            for _ in range(args.moves):
                t = clock()
                slider.value = step(slider)
                times.append((clock() - t) * 1e3)
            slider.value = start
            worst.append(max(times))
            print(f"  {title:<10} {slider.description:<32} median {statistics.median(times):6.1f}  "
                  f"max {max(times):6.1f}")
    print(f"every slider: worst move {max(worst):.1f} ms; load average (1, 5, 15 min) "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
