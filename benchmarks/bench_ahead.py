"""Kernel CPU of a slider's key steps with the next step planned ahead and without (in process, no browser).

Builds the app on a preset (``--preset``), opens a tab (``--tab``) and, inside a running asyncio event loop as the
live kernel has one, moves each shown slider ``--moves`` key steps right (the value the browser would send:
:func:`aisize.app.ahead.next_value`), pausing ``--pause`` seconds after each move as a user does between key presses.
Each slider is moved twice from the same start, once with planning ahead off (``AISIZE_PLAN_AHEAD=0``) and once on,
in turns (which goes first alternates), and each prints: the CPU of the first step (planned cold either way), the
median CPU of the further steps off and on, how many of them showed a plan made ahead, and the CPU spent planning
ahead per move (the work moved into the pauses).

    .venv/bin/python benchmarks/bench_ahead.py [--preset agentic-coding] [--tab Inference] [--moves 5] [--pause 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from bench_sliders import sliders

from aisize.app import ahead, build_app
from aisize.plan import clear_caches
from aisize.scenario import DEFAULT_PRESET, preset, to_dict


async def _steps(app, slider, moves: int, pause: float) -> tuple[list[float], int, float]:
    """CPU ms of each of ``moves`` key steps right, the plans ahead shown, and the CPU ms spent planning ahead."""
    state, spent = app.state, []
    used0 = state.ahead.used
    ahead_cpu = 0.0
    for _ in range(moves):
        value = ahead.next_value(slider, 1)
        if value is None:
            break
        t = time.process_time()
        slider.value = value
        spent.append((time.process_time() - t) * 1e3)
        t = time.process_time()
        await asyncio.sleep(pause)  # the plan ahead runs here, on the loop
        ahead_cpu += (time.process_time() - t) * 1e3
    return spent, state.ahead.used - used0, ahead_cpu / max(len(spent), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default=DEFAULT_PRESET)
    parser.add_argument("--tab", default="Inference")
    parser.add_argument("--moves", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.3)
    args = parser.parse_args()
    def opened():
        clear_caches()  # each pass from cold: the planner's memories and a new app's plan cache
        app = build_app(display=False, data=to_dict(preset(args.preset)))
        return app, list(sliders(app.open_tab(args.tab).view))

    print(f"{args.preset}, {args.tab} tab: kernel CPU a key step, ms ({args.moves} steps a slider, "
          f"{args.pause} s pauses; off and on in turns, each from a new app with the planner's caches cleared)")

    async def run():
        for k in range(len(opened()[1])):
            got = {}
            for on in ((False, True) if k % 2 == 0 else (True, False)):
                app, shown = opened()
                os.environ[ahead.ENV] = "1" if on else "0"
                got[on] = await _steps(app, shown[k], args.moves, args.pause)
            (off, _, _), (on, used, cost) = got[False], got[True]
            if len(off) < 2:
                continue
            print(f"  {shown[k].description:<28} first step {off[0]:6.1f} / {on[0]:6.1f}; the next, median: off "
                  f"{statistics.median(off[1:]):6.1f}, on {statistics.median(on[1:]):6.1f} (plan ahead shown "
                  f"{used} of {len(on) - 1}); planning ahead {cost:5.1f} a move, in the pause")
    asyncio.run(run())
    os.environ.pop(ahead.ENV, None)
    print(f"load average (1, 5, 15 min) {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
