"""Time the report pipeline for the default preset: HTML only, and HTML + PDF. Prints figures;
asserts nothing. Targets on the 2-core dev machine: HTML < 10 s, PDF (whole run) < 20 s.

Run: .venv/bin/python benchmarks/bench_report.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from aisize.report import render
from aisize.scenario import DEFAULT_PRESET

REPEAT = 2  # each run starts a kernel and a browser; the best run is the least disturbed by load


def timed(fmt: str, out_dir: str) -> tuple[float, dict[str, float]]:
    steps: dict[str, float] = {}
    start = time.perf_counter()
    render(preset=DEFAULT_PRESET, fmt=fmt, out_dir=out_dir, customer="Benchmark",
           progress=lambda step, seconds: steps.__setitem__(step, seconds))
    return time.perf_counter() - start, steps


def main() -> int:
    print(f"aisize report benchmark: preset {DEFAULT_PRESET}, {os.cpu_count()} CPUs, "
          f"best of {REPEAT}")
    with tempfile.TemporaryDirectory() as out:
        for fmt, target in (("html", 10.0), ("both", 20.0)):
            runs = [timed(fmt, out) for _ in range(REPEAT)]
            wall, steps = min(runs, key=lambda r: r[0])
            detail = ", ".join(f"{k} {v:.2f} s" for k, v in steps.items())
            label = "HTML" if fmt == "html" else "HTML + PDF"
            print(f"  {label:<11} wall {wall:6.2f} s (target < {target:.0f} s; "
                  f"all runs {', '.join(f'{r[0]:.2f}' for r in runs)} s)  [{detail}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
