"""CPU time of the serving simulations the tests run, and every figure they give, saved or compared.

Runs the three grids of ``aisize.validation.simulation`` (tiers alone, reuse inside the scheduler, length
distributions: what ``tests/test_serving_reuse_simulation.py`` asserts on) and five other scheduler runs
(capacity, Poisson with a spread of lengths, a closed loop on an MoE replica, MTP and EAGLE speculation), and
prints the CPU seconds of each part. ``--save F`` writes every figure (every row of the grids, every field of
the other runs' results) to F; ``--compare F`` says whether this code gives the same figures as the saved ones,
to the last digit or the largest relative difference and where: the check that a speed-up of the simulation
changed no result (docs/speed.md, 2026-12-05 "The serving simulation's decode-only look-ahead").

    .venv/bin/python benchmarks/bench_simulation.py --save /tmp/before.json     # on the code before
    .venv/bin/python benchmarks/bench_simulation.py --compare /tmp/before.json  # on the code after
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from aisize import serving
from aisize.serving.simulate import simulate_estimate
from aisize.validation import simulation as grid


def _other_runs() -> dict:
    def est(model, gpu, tp, wp, i, o, engine, **kw):
        return serving.estimate(model, gpu, tensor_parallel=tp, weight_precision=wp, kv_precision="fp8",
                                input_tokens=i, output_tokens=o, engine=engine, **kw)

    out = {}
    cap = est("llama-3.1-8b", "h100-sxm", 1, "fp8", 1024, 256, "trtllm")
    out["capacity 8B"] = simulate_estimate(cap, requests=int(2 * cap.max_concurrency))
    rate = 0.6 * est("llama-3.1-8b", "h100-sxm", 1, "fp8", 1024, 256, "vllm").max_requests_per_s
    loaded = est("llama-3.1-8b", "h100-sxm", 1, "fp8", 1024, 256, "vllm", requests_per_s=rate)
    out["Poisson 8B vLLM, CV 0.5"] = simulate_estimate(loaded, requests_per_s=rate, requests=600, seed=7,
                                                       length_cv=0.5)
    moe = dict(expert_parallel=8)
    out["closed loop R1 EP 8, 64"] = simulate_estimate(est("deepseek-r1", "b200", 8, "fp8", 900, 200, "sglang", **moe),
                                                       concurrency=64, requests=300, length_cv=0.1)
    mtp = est("deepseek-r1", "b200", 8, "fp8", 900, 200, "sglang", **moe, speculative_method="mtp",
              speculative_tokens=2)
    out["closed loop R1 MTP, 32"] = simulate_estimate(mtp, concurrency=32, requests=200, length_cv=0.1)
    eagle = est("llama-3.1-8b", "h100-sxm", 1, "fp8", 1024, 256, "trtllm", speculative_method="eagle3",
                speculative_tokens=3)
    out["Poisson 8B EAGLE-3"] = simulate_estimate(eagle, requests_per_s=5.0, requests=400, seed=3)
    return {k: dataclasses.asdict(v) for k, v in out.items()}


PARTS = {
    "tiers alone": lambda: {f"{c} {gb}": grid.tier_rows(c, gb) for c in sorted(grid.TIER_CASES)
                            for gb in grid.TIER_CAPACITIES_GB},
    "reuse in the scheduler": lambda: {c: grid.scheduler_rows(c) for c in sorted(grid.SCHEDULER_CASES)},
    "length distributions": lambda: {c: grid.length_rows(c) for c in sorted(grid.LENGTH_CASES)},
    "other scheduler runs": _other_runs,
}


def _plain(x):
    return json.loads(json.dumps(x, default=lambda o: o.item()))  # numpy scalars as numbers


def _difference(a, b, path=()):
    """(largest relative difference, where) between two saved figure trees; raises where their shapes differ."""
    if isinstance(a, dict):
        if a.keys() != b.keys():
            raise ValueError(f"{'/'.join(map(str, path))}: keys differ")
        return max((_difference(a[k], b[k], path + (k,)) for k in a), default=(0.0, path), key=lambda t: t[0])
    if isinstance(a, list):
        if len(a) != len(b):
            raise ValueError(f"{'/'.join(map(str, path))}: lengths differ")
        return max((_difference(x, y, path + (i,)) for i, (x, y) in enumerate(zip(a, b))), default=(0.0, path),
                   key=lambda t: t[0])
    if isinstance(a, float) and isinstance(b, float):
        return (0.0 if a == b else abs(a - b) / max(abs(a), 1e-300)), path
    if a != b:
        raise ValueError(f"{'/'.join(map(str, path))}: {a!r} != {b!r}")
    return 0.0, path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write every figure to this JSON file")
    parser.add_argument("--compare", help="compare every figure with this JSON file (from --save)")
    parser.add_argument("--part", action="append", choices=list(PARTS), help="only this part (repeatable)")
    args = parser.parse_args()
    figures = {}
    for name in args.part or PARTS:
        start = time.process_time()
        figures[name] = _plain(PARTS[name]())
        print(f"{name:<24} {time.process_time() - start:6.1f} s CPU")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(figures, f, indent=1)
    if args.compare:
        with open(args.compare) as f:
            saved = json.load(f)
        worst, where = _difference({k: saved[k] for k in figures}, figures)
        print("every figure identical to the saved ones" if worst == 0.0 else
              f"largest relative difference {worst:.3g} at {'/'.join(map(str, where))}")


if __name__ == "__main__":
    main()
