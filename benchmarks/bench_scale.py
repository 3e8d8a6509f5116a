"""A plan and a slider move at the scale customers size: the llama3-70b-pretrain job at 1,024 GPUs (the preset) and at
16 and 32 times that, in process (CPU time, medians).

For each size it prints the plan's CPU time and its placement's (``aisize.plan.placement.pack``), the placement again
item by item (each run of equal items searched one item at a time, as before 2026-12-06: ``_run_copies`` made to copy
nothing, the same placement) as the baseline of the same run, and the Training tab's Tokens slider (a move re-plans
the job and redraws its days curve, whose counts a batch may split over are searched a chunk at a time). Ratios are
to the preset's own size, and the packer's to its item-by-item baseline.

    .venv/bin/python benchmarks/bench_scale.py [--repeats 5] [--factors 1 16 32]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aisize.app import build_app  # noqa: E402
from aisize.plan import placement as P  # noqa: E402
from aisize.plan import plan  # noqa: E402
from aisize.plan import cluster  # noqa: E402
from aisize.scenario import from_dict, preset, to_dict  # noqa: E402
from bench_sliders import sliders, step  # noqa: E402

PRESET = "llama3-70b-pretrain"


def _cpu_ms(f) -> float:
    gc.collect()  # the last call's garbage is not this one's time
    t = time.process_time()
    f()
    return (time.process_time() - t) * 1e3


def _scenario(factor: int) -> dict:
    d = to_dict(preset(PRESET))
    d["workloads"][0]["gpus"] *= factor
    return d


def _packs(scenario, repeats: int) -> tuple[float, float, float]:
    """(plan, its pack, the same pack item by item) [ms CPU, medians]."""
    seen = {}
    real = cluster.pack

    def spy(*args):
        seen["args"] = args
        return real(*args)
    cluster.pack = spy
    try:
        plans = [_cpu_ms(lambda: plan(scenario)) for _ in range(repeats)]
    finally:
        cluster.pack = real
    packs = [_cpu_ms(lambda: P.pack(*seen["args"])) for _ in range(repeats)]
    copies = P._run_copies
    P._run_copies = lambda *args: 0
    try:
        alone = [_cpu_ms(lambda: P.pack(*seen["args"])) for _ in range(repeats)]
    finally:
        P._run_copies = copies
    return statistics.median(plans), statistics.median(packs), statistics.median(alone)


def _tokens_moves(data: dict, moves: int) -> float:
    """The Training tab's Tokens slider, ``moves`` steps right [ms CPU a move, median]."""
    app = build_app(display=False, data=data)
    slider = next(s for s in sliders(app.open_tab("Training").view) if s.description.startswith("Tokens"))
    times = []
    for _ in range(moves):
        value = step(slider)
        times.append(_cpu_ms(lambda: setattr(slider, "value", value)))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--factors", type=int, nargs="+", default=[1, 16, 32])
    args = parser.parse_args()
    base = None
    for factor in args.factors:
        d = _scenario(factor)
        plan_ms, pack_ms, alone_ms = _packs(from_dict(d), args.repeats)
        move_ms = _tokens_moves(d, args.repeats)
        base = base or (plan_ms, move_ms)
        print(f"{d['workloads'][0]['gpus']:>7,} GPUs: plan {plan_ms:6.1f} ms ({plan_ms / base[0]:.2f}x the preset's), "
              f"pack {pack_ms:5.1f} ms (item by item {alone_ms:6.1f} ms: {alone_ms / pack_ms:.1f}x), "
              f"Tokens move {move_ms:6.1f} ms ({move_ms / base[1]:.2f}x the preset's)")


if __name__ == "__main__":
    main()
