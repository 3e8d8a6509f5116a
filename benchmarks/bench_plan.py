"""Planner speed: milliseconds per ``plan(scenario)`` for every preset. Prints figures; asserts nothing.

* cold: every planner cache cleared first (a new scenario);
* warm: the same scenario again (cached workload plans);
* slider: one input changed per call, as a Voila slider does (policies.mfu for scenarios with
  training, else the first inference service's requests_per_s).

Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_plan.py
"""

from __future__ import annotations

import time

from aisize.plan import clear_caches, plan
from aisize.scenario import from_dict, preset, preset_names, to_dict

REPEATS = 20


def clear() -> None:
    clear_caches()


def ms(fn, repeats=REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def variants(name: str, n: int = REPEATS):
    base = to_dict(preset(name))
    has_training = any(w["kind"] == "training" for w in base["workloads"])
    out = []
    for k in range(n):
        d = to_dict(preset(name))
        if has_training:
            d["policies"]["mfu"] = 0.30 + 0.01 * k
        else:
            w = next(w for w in d["workloads"] if w["kind"] == "inference")
            w["requests_per_s"] *= 1 + 0.05 * k
        out.append(from_dict(d))
    return out


def main() -> None:
    plan(preset("xe9680-genai"))  # imports, catalog and numpy warm-up
    print(f"{'preset':24s} {'cold ms':>8s} {'warm ms':>8s} {'slider ms':>10s}")
    for name in preset_names():
        s = preset(name)
        cold = ms(lambda: (clear(), plan(s)))
        warm = ms(lambda: plan(s))
        vs = iter(variants(name))
        slider = ms(lambda: plan(next(vs)))
        print(f"{name:24s} {cold:8.1f} {warm:8.1f} {slider:10.1f}")


if __name__ == "__main__":
    main()
