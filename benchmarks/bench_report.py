"""Time ``aisize report`` of the default preset against its floor, in the same run. Prints figures;
asserts nothing.

Each run is a fresh process, as a user's ``aisize report`` is, and app and floor runs alternate
(floor, app; app, floor; ...):

- the app: ``aisize report --preset <default> --format F --customer Benchmark`` (``aisize.cli.console``,
  the command's own entry point);
- the floor: the same entry point of the report, ``aisize.report.render`` (called as ``aisize report``
  calls it), on ``benchmarks/floor/trivial_report.ipynb``: one cell producing one HTML output, and the
  tagged parameters cell ``render`` fills in (papermill needs it; the HTML drops it, as it drops the real
  report's). So the floor takes the same path step by step: a report kernel started with the report's
  kernel arguments (which import ``aisize.report.sections`` and start the chart helper as it boots), the
  same parameter checks (the default preset is still loaded), papermill with the same options, nbconvert
  with the aisize template and its remote-reference check, and Chromium printing the PDF with the same
  options. What differs is the notebook alone.

Each process reports its steps (validate, execute, HTML, PDF) to stderr at millisecond resolution; the
parent times the whole process (interpreter start and imports included) and its CPU (the process, its
kernel and Chromium). It prints both medians, the ratio app / floor and the difference for each.
Targets on the 2-core dev machine (issue 25): HTML < 5 s, PDF (whole run) < 20 s.

Run: .venv/bin/python benchmarks/bench_report.py [--rounds 3] [--format both|html]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aisize.scenario import DEFAULT_PRESET

FLOOR_NOTEBOOK = Path(__file__).resolve().parent / "floor" / "trivial_report.ipynb"
STEP = re.compile(r"^bench step (\S+) ([0-9.]+)$", re.MULTILINE)

# Both kinds of run: the report's progress, finer than the command's 0.1 s, then the run itself.
PRELUDE = """import gc, sys
import aisize.report.cli as report_cli
report_cli._progress = lambda step, seconds: print(f"bench step {step} {seconds:.4f}", file=sys.stderr, flush=True)
"""
APP = PRELUDE + """from aisize.cli import console
sys.argv = ["aisize", "report", "--preset", sys.argv[1], "--format", sys.argv[2], "--out", sys.argv[3],
            "--customer", "Benchmark"]
sys.exit(console())
"""
# what cmd_report does, with the floor notebook; then gc.freeze(), as the command's console() does
FLOOR = PRELUDE + """from aisize.report import render
try:
    result = render(preset=None, fmt=sys.argv[2], out_dir=sys.argv[3], customer="Benchmark",
                    notebook=sys.argv[4], progress=report_cli._progress)
    report_cli._progress("total", result.seconds)
finally:
    gc.freeze()
"""


def children_cpu() -> float:
    """User + system CPU of this process's finished children and theirs [s]."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(kind: str, fmt: str) -> dict[str, float]:
    """One report in a fresh process: its steps [s], ``wall`` (the whole process) and ``CPU`` [s]."""
    with tempfile.TemporaryDirectory() as out:
        code = APP if kind == "app" else FLOOR
        cpu, t0 = children_cpu(), time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code, DEFAULT_PRESET, fmt, out, str(FLOOR_NOTEBOOK)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"the {kind} report failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        made = sorted(p.suffix for p in Path(out).iterdir())
    steps = {step: float(seconds) for step, seconds in STEP.findall(done.stderr)}
    expected = [".html", ".pdf"] if fmt == "both" else [".html"]
    if made != expected:
        raise RuntimeError(f"the {kind} report wrote {made}, not {expected}")
    steps["to HTML"] = sum(steps[s] for s in ("validate", "execute", "HTML"))
    steps["wall"], steps["CPU"] = wall, children_cpu() - cpu
    return steps


def against(label: str, app: list[float], floor: list[float]) -> str:
    a, f = statistics.median(app), statistics.median(floor)
    return (f"{label}: app {a:.2f} s, floor {f:.2f} s, ratio {a / f:.2f}x ({(a - f) * 1e3:+.0f} ms; "
            f"medians of {len(app)} and {len(floor)})")


def main() -> int:
    from aisize.report.pdf import chromium_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="reports of each kind (app and floor), alternating")
    parser.add_argument("--format", choices=("both", "html"), default=None,
                        help="what each report writes (default: both where Chromium is installed, else html)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    fmt = args.format or ("both" if chromium_path() is not None else "html")
    print(f"aisize report against its floor: preset {DEFAULT_PRESET} against {FLOOR_NOTEBOOK.name}, format "
          f"{fmt}, {args.rounds} of each, alternating, each a fresh process; {os.cpu_count()} CPUs", flush=True)
    load_before = os.getloadavg()
    results: dict[str, list[dict[str, float]]] = {"app": [], "floor": []}
    for k in range(args.rounds):
        for kind in ("floor", "app") if k % 2 == 0 else ("app", "floor"):
            steps = run(kind, fmt)
            results[kind].append(steps)
            print(f"  {kind:<5} " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in steps.items()
                                               if name != "total"), flush=True)
    app, floor = results["app"], results["floor"]
    rows = [("whole process (wall)", "wall"), ("to the HTML written (validate + execute + HTML)", "to HTML"),
            ("execute (papermill)", "execute"), ("HTML (nbconvert)", "HTML")]
    if fmt == "both":
        rows.append(("PDF (Chromium print)", "PDF"))
    rows.append(("CPU of the whole run (process, kernel, Chromium)", "CPU"))
    print("against the floor (the same render path on a one-cell notebook, alternating in this run):")
    for label, key in rows:
        print("  " + against(f"report {label}", [r[key] for r in app], [r[key] for r in floor]))
    print("load average (1, 5, 15 min) before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
