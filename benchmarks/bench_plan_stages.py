"""CPU time of each planner stage in a slider move of the app (in-process, as ``bench_sliders.py`` moves it).

Builds the app on the default preset, moves the Inference tab's request rate ``--rate-moves`` steps right (as
``bench_sliders.py --rate-moves`` does), then moves each named slider ``--moves`` steps right (after two untimed
ones) and prints, per slider, the move's CPU time and that of each stage of :func:`aisize.plan.plan`: the
workloads' candidates (the serving solve: ``choose_fleet`` and ``_sized_by_estimate``, then ``_assemble``), the
placement, the pools' fabrics, the storage, the network, the cost, the findings. A stage reused from the last plan
(:meth:`aisize.plan.incremental.PlanCache.reuse`) is not called, so it shows no time. The rest of a move is the
app's (the scenario's edit, the outputs).

    .venv/bin/python benchmarks/bench_plan_stages.py [--moves 8] [--rate-moves 20] [--slider Prompt --slider "TTFT"]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import time

from aisize.app import build_app
from aisize.scenario import DEFAULT_PRESET, preset, to_dict
from bench_sliders import sliders, step

STAGES = (("aisize.plan.cluster", "_candidates"), ("aisize.plan.inference", "choose_fleet"),
          ("aisize.plan.inference", "_sized_by_estimate"), ("aisize.plan.inference", "_assemble"),
          ("aisize.plan.cluster", "pack"), ("aisize.plan.cluster", "_pool_plan"),
          ("aisize.plan.cluster", "plan_storage"), ("aisize.plan.cluster", "on_bought_storage"),
          ("aisize.plan.cluster", "network_plan"), ("aisize.plan.cluster", "build_timeline"),
          ("aisize.plan.costing", "plan_cost"), ("aisize.plan.cluster", "_service_day"),
          ("aisize.plan.findings", "findings"), ("aisize.plan.findings", "assumptions_used"),
          ("aisize.app.state", "plan"))
SLIDERS = ("Request rate", "Prompt [", "Output [", "Prompt length CV", "Output length CV", "TTFT target", "TPOT target")


def _timed(spent: dict) -> None:
    """Wrap each stage where its caller looks it up, adding its CPU time to ``spent``."""
    import sys

    for module, name in STAGES:
        owner = sys.modules.get(module) or importlib.import_module(module)
        real = getattr(owner, name)

        def timed(*args, _real=real, _label=name if module != "aisize.app.state" else "plan (whole)", **kwargs):
            t = time.process_time()
            try:
                return _real(*args, **kwargs)
            finally:
                spent[_label] += time.process_time() - t
        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=8)
    parser.add_argument("--rate-moves", type=int, default=20)
    parser.add_argument("--slider", action="append", help="a slider's description starts so (repeatable)")
    args = parser.parse_args()
    app = build_app(display=False, data=to_dict(preset(DEFAULT_PRESET)))
    view = app.open_tab("Inference").view
    rate = next(s for s in sliders(view) if s.description.startswith("Request rate"))
    for _ in range(args.rate_moves):
        rate.value = step(rate)
    spent: dict = collections.defaultdict(float)
    _timed(spent)
    for prefix in args.slider or SLIDERS:
        slider = next(s for s in sliders(view) if s.description.startswith(prefix))
        start = slider.value
        for _ in range(2):
            slider.value = step(slider)
        spent.clear()
        t = time.process_time()
        for _ in range(args.moves):
            slider.value = step(slider)
        move = (time.process_time() - t) * 1e3 / args.moves
        slider.value = start
        parts = ", ".join(f"{k} {v * 1e3 / args.moves:.2f}" for k, v in sorted(spent.items(), key=lambda kv: -kv[1])
                          if v * 1e3 / args.moves >= 0.01)
        print(f"{slider.description:<28} move {move:5.1f} ms CPU; stages (ms a move): {parts}")


if __name__ == "__main__":
    main()
