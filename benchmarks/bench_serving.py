"""Serving speed: configurations/s of the SLO search (one core), and the planner's answer to a rate move.

Usage: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_serving.py [--against REV] [--rounds N]

Prints, for a few models, the configurations the search evaluated (replica shapes x precisions x
batches x token budgets, aggregated and disaggregated: every configuration whose figures the search
returns, fitting or not), its time and configurations/s (the serving issue asks for >= 1,000,000/s on one
core), then the time of a replan after the request-rate slider moves on the default preset (the app must
answer well under 100 ms).

Three figures per search: ``SearchResult.seconds`` (wall time the search measures itself: since 2026-12-05
the whole search, its result frames included; before, its evaluation and per-part frames, not their
concatenation, sorting or frontier), and the whole call's wall time and CPU time, timed here the same way
for any revision (CPU time: this one-thread process's, which other jobs on a shared machine inflate far
less than wall time).

``--against REV`` loads ``aisize/serving/search.py`` as it was at git revision REV (on today's iteration
model, hardware and costs), checks that its result frames equal today's exactly, and times both in the same
run, in turns (today, REV; REV, today; ...), printing the ratio of the whole calls' configurations/s.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from aisize import plan, scenario, serving  # noqa: E402

CASES = [
    ("llama-3.1-70b", "h100-sxm", ("fp8", "bf16"), (1, 2, 4)),
    ("qwen3-30b-a3b", "b200", ("nvfp4", "fp8"), (1, 2)),
    ("deepseek-r1", "h200-sxm", ("fp8",), (1, 2, 4)),
    ("llama-3.1-8b", "gb200", ("nvfp4", "fp8", "bf16"), (1, 2)),
]
REPEATS = 3  # best of three per search: the machine is shared


def _run(search, model, gpu, precisions, pps):
    """The search's result, the call's wall seconds and its CPU seconds (this process, one thread)."""
    t, c = time.perf_counter(), time.process_time()
    r = search(model, gpu, input_tokens=2048, output_tokens=512, ttft_target_s=2.0, tpot_target_s=0.05,
               weight_precisions=precisions, kv_precisions=("fp8", "bf16"), pipeline_parallels=pps)
    return r, time.perf_counter() - t, time.process_time() - c


def search_speed(search=serving.search, label="search", quiet=False):
    """Configurations, the searches' own seconds, the whole calls' wall seconds and their CPU seconds, summed
    over the cases (best of :data:`REPEATS` each)."""
    total_configs, total_s, total_wall, total_cpu = 0, 0.0, 0.0, 0.0
    for model, gpu, precisions, pps in CASES:
        runs = [_run(search, model, gpu, precisions, pps) for _ in range(REPEATS)]
        best = min((r for r, _, _ in runs), key=lambda r: r.seconds)
        wall, cpu = min(w for _, w, _ in runs), min(c for _, _, c in runs)
        total_configs += best.configurations
        total_s += best.seconds
        total_wall += wall
        total_cpu += cpu
        if not quiet:
            print(f"{label} {model:15s} on {gpu:9s}: {best.configurations:>9,} configurations in {best.seconds:6.3f} s "
                  f"= {best.configurations_per_s:>12,.0f}/s (whole call {wall:6.3f} s, CPU {cpu:6.3f} s); frontier "
                  f"{len(best.frontier)}, feasible {len(best.feasible)}")
    print(f"{label} overall: {total_configs:,} configurations in {total_s:.3f} s = {total_configs / total_s:,.0f}/s; "
          f"whole calls {total_wall:.3f} s = {total_configs / total_wall:,.0f}/s, CPU {total_cpu:.3f} s = "
          f"{total_configs / total_cpu:,.0f}/s")
    return total_configs, total_s, total_wall, total_cpu


def search_at(rev: str):
    """``serving.search`` of ``aisize/serving/search.py`` at git revision ``rev``, on today's other modules."""
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(["git", "show", f"{rev}:aisize/serving/search.py"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    name = f"_search_at_{rev.replace('-', '_').replace('~', '_').replace('^', '_')}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:aisize/serving/search.py", "exec"), module.__dict__)
    return module.search


def same_results(search, other) -> None:
    """Raise AssertionError unless the two searches return the same frames, exactly, for every case."""
    import pandas as pd

    for model, gpu, precisions, pps in CASES:
        a, b = _run(search, model, gpu, precisions, pps)[0], _run(other, model, gpu, precisions, pps)[0]
        assert a.configurations == b.configurations, (model, a.configurations, b.configurations)
        pd.testing.assert_frame_equal(a.feasible, b.feasible, check_exact=True, obj=f"{model} feasible")
        pd.testing.assert_frame_equal(a.frontier, b.frontier, check_exact=True, obj=f"{model} frontier")


def against(rev: str, rounds: int) -> None:
    old = search_at(rev)
    same_results(serving.search, old)
    print(f"results: today's search and {rev}'s return the same frames (exact) for the {len(CASES)} cases")
    for k in range(rounds):
        order = [("today", serving.search), (rev, old)]
        got = dict((label, search_speed(f, label, quiet=True)) for label, f in (order if k % 2 == 0 else order[::-1]))
        n = got["today"][0]
        print(f"round {k + 1}: whole calls today {n / got['today'][2]:,.0f}/s, {rev} {n / got[rev][2]:,.0f}/s, "
              f"ratio {got[rev][2] / got['today'][2]:.2f}x; CPU today {n / got['today'][3]:,.0f}/s, {rev} "
              f"{n / got[rev][3]:,.0f}/s, ratio {got[rev][3] / got['today'][3]:.2f}x")


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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="REV", help="also time search.py at this git revision, in turns")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of turns with --against (default 2)")
    args = ap.parse_args()
    if args.against:
        against(args.against, args.rounds)
    else:
        search_speed()
        replan_speed()
