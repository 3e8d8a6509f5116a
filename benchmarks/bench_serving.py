"""Serving speed: configurations/s of the SLO search (one core), and the planner's answer to a rate move.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_serving.py

Prints, for a few models, the configurations the search evaluated (replica shapes x precisions x
batches x token budgets, aggregated and disaggregated), its time and configurations/s (the
serving issue asks for >= 1,000,000/s on one core), then the time of a replan after the request-rate
slider moves on the default preset (the app must answer well under 100 ms).
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from aisize import plan, scenario, serving  # noqa: E402

CASES = [
    ("llama-3.1-70b", "h100-sxm", ("fp8", "bf16"), (1, 2, 4)),
    ("qwen3-30b-a3b", "b200", ("nvfp4", "fp8"), (1, 2)),
    ("deepseek-r1", "h200-sxm", ("fp8",), (1, 2, 4)),
    ("llama-3.1-8b", "gb200", ("nvfp4", "fp8", "bf16"), (1, 2)),
]


def search_speed():
    total_configs, total_s = 0, 0.0
    for model, gpu, precisions, pps in CASES:
        best = None
        for _ in range(3):  # best of three: the machine is shared
            r = serving.search(model, gpu, input_tokens=2048, output_tokens=512, ttft_target_s=2.0,
                               tpot_target_s=0.05, weight_precisions=precisions, kv_precisions=("fp8", "bf16"),
                               pipeline_parallels=pps)
            best = r if best is None or r.seconds < best.seconds else best
        total_configs += best.configurations
        total_s += best.seconds
        print(f"search {model:15s} on {gpu:9s}: {best.configurations:>9,} configurations in {best.seconds:6.3f} s "
              f"= {best.configurations_per_s:>12,.0f}/s; frontier {len(best.frontier)}, feasible {len(best.feasible)}")
    print(f"search overall: {total_configs:,} configurations in {total_s:.3f} s = {total_configs / total_s:,.0f}/s")


def replan_speed():
    base = scenario.preset(scenario.DEFAULT_PRESET)
    plan.plan(base)
    d = base.model_dump()
    times = []
    for k in range(20):
        d["workloads"][2]["requests_per_s"] = 20.0 * 1.05 ** (k + 1)
        s = scenario.Scenario.model_validate(d)
        t = time.perf_counter()
        plan.plan(s)
        times.append((time.perf_counter() - t) * 1e3)
    print(f"replan after a request-rate move ({scenario.DEFAULT_PRESET}): median {statistics.median(times):.0f} ms, "
          f"max {max(times):.0f} ms over {len(times)} moves")


if __name__ == "__main__":
    search_speed()
    replan_speed()
