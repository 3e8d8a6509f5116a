"""Closed forms of prefix reuse, KV-cache tiers and length distributions against their simulations.

Prints every row of the three stated grids of ``aisize.validation.simulation`` (closed form,
simulation, error); the tests hold them to 10 %. Takes a few minutes on one core.

    .venv/bin/python benchmarks/sim_reuse.py [tiers|scheduler|lengths ...]
"""

from __future__ import annotations

import sys
import time

from aisize.validation import simulation as grid


def _print(rows):
    for r in rows:
        err = f"{r['error'] * 100:+6.1f} pts" if r["absolute"] else f"{r['error'] * 100:+6.1f} %"
        print(f"  {r['case']:<34} {r['figure']:<32} closed form {r['closed_form']:>10.4g}   "
              f"simulation {r['simulation']:>10.4g}   {err}")


def main(parts):
    t = time.perf_counter()
    if "tiers" in parts:
        print("Grid 1: tiers alone (Che's approximation vs per-tier LRU caches)")
        for case in grid.TIER_CASES:
            for gb in grid.TIER_CAPACITIES_GB:
                _print(grid.tier_rows(case, gb))
    if "scheduler" in parts:
        print("Grid 2: tiers inside the scheduler (estimate(prefix=, kv_tiers=) vs simulate_reuse_estimate)")
        for case in grid.SCHEDULER_CASES:
            _print(grid.scheduler_rows(case))
    if "lengths" in parts:
        print("Grid 3: length distributions (estimate(length_distribution=) vs simulate_estimate(lengths=))")
        for case in grid.LENGTH_CASES:
            _print(grid.length_rows(case))
    print(f"({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["tiers", "scheduler", "lengths"])
