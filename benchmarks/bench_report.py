"""Time the report pipeline for the default preset: HTML only, and HTML + PDF. Prints figures;
asserts nothing. Targets on the 2-core dev machine: HTML < 5 s, PDF (whole run) < 20 s. Also prints
the CPU seconds the run used (this process and the kernel and browser it started), which other work
on the machine does not inflate as it does the wall time (the kernel's chart helper,
``aisize.report.svg``, outlives the kernel by a moment and is not counted).

Run: .venv/bin/python benchmarks/bench_report.py
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time

from aisize.report import render
from aisize.scenario import DEFAULT_PRESET

REPEAT = 2  # each run starts a kernel and a browser; the best run is the least disturbed by load


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the kernel, Chromium) [s]."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))


def timed(fmt: str, out_dir: str) -> tuple[float, dict[str, float]]:
    steps: dict[str, float] = {}
    start, cpu = time.perf_counter(), cpu_seconds()
    render(preset=DEFAULT_PRESET, fmt=fmt, out_dir=out_dir, customer="Benchmark",
           progress=lambda step, seconds: steps.__setitem__(step, seconds))
    steps["CPU"] = cpu_seconds() - cpu
    return time.perf_counter() - start, steps


def main() -> int:
    print(f"aisize report benchmark: preset {DEFAULT_PRESET}, {os.cpu_count()} CPUs, "
          f"best of {REPEAT}")
    with tempfile.TemporaryDirectory() as out:
        for fmt, target in (("html", 5.0), ("both", 20.0)):
            runs = [timed(fmt, out) for _ in range(REPEAT)]
            wall, steps = min(runs, key=lambda r: r[0])
            detail = ", ".join(f"{k} {v:.2f} s" for k, v in steps.items())
            label = "HTML" if fmt == "html" else "HTML + PDF"
            print(f"  {label:<11} wall {wall:6.2f} s (target < {target:.0f} s; "
                  f"all runs {', '.join(f'{r[0]:.2f}' for r in runs)} s)  [{detail}]")
    print("load average (1, 5, 15 min) " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
