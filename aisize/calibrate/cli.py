"""``aisize calibrate RUNS...``: refit the serving calibration on your own benchmark runs.

Reads the runs (:func:`aisize.calibrate.read_runs`), fits the constants they identify
(:func:`aisize.calibrate.fit`), prints every run's error before and after, and writes the
calibration to a JSON file a scenario (``policies.serving_calibration``), ``aisize.serving.estimate(...,
calibration=FILE)`` and the app's Accuracy tab can use; says how to select it.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path

PROGRESS_SECONDS = 10.0  # a fit of many runs takes minutes: say how far it is this often (on stderr)
TRAINING_SECTIONS = ("shipped", "none")
# every reader takes a file of sections (aisize.calibration; serving.estimate reads its serving one)
DEFAULT_TRAINING_SECTION = "shipped"


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("runs", nargs="+", metavar="RUNS",
                   help="benchmark results: a CSV in aisize's reference columns, vllm bench serve JSON, SGLang "
                        "bench_serving JSONL, AIPerf / genai-perf export JSON, or InferenceX results")
    p.add_argument("--out", default="calibration.json", help="where to write the calibration (JSON)")
    p.add_argument("--name", default=None, help="the calibration's name (default: from the output file)")
    p.add_argument("--base", default=None, help="start from this calibration file (default: aisize's own)")
    for flag, kind, text in (("--model", str, "the model, when the files do not say (catalog id or HF id)"),
                             ("--accelerator", str, "the GPU (catalog id or name)"),
                             ("--tensor-parallel", int, "GPUs per replica"),
                             ("--gpus", int, "GPUs of the deployment (default: one replica)"),
                             ("--expert-parallel", int, "GPUs the experts spread over (MoE)"),
                             ("--weight-precision", str, "weight format (bf16, fp8, nvfp4, mxfp4, ...)"),
                             ("--kv-precision", str, "KV-cache format (bf16, fp8)"),
                             ("--engine", str, "trtllm, vllm, sglang, trtllm-bench")):
        p.add_argument(flag, type=kind, default=None, help=text)
    p.add_argument("--max-evaluations", type=int, default=200, help="the solver's budget (default 200)")
    p.add_argument("--training", choices=TRAINING_SECTIONS, default=DEFAULT_TRAINING_SECTION,
                   help="the file's training section: 'shipped' writes aisize's training calibration beside the "
                        "fitted serving one (an aisize.calibration file with both sections); 'none' writes the "
                        f"serving constants alone (default {DEFAULT_TRAINING_SECTION!r}). A refit of the training "
                        "constants runs benchmarks/fit_training.py (hours on two cores)")
    p.set_defaults(func=run)
    return p


def _pct(x) -> str:
    from aisize import format as F  # imported on use: the command-line parser loads no pandas

    return str(F.pct(x, signed=True))


def _check_out(out: Path, inputs) -> None:
    """Refuse an ``--out`` that is not a regular file (a FIFO would block the write, a device swallow it) or
    that is one of the inputs (the fit would overwrite its own runs); stat only, so nothing blocks."""
    try:
        st = os.stat(out)
    except FileNotFoundError:
        return  # a new file cannot be an input
    except OSError as e:
        raise ValueError(f"--out={str(out)[:200]!r} cannot be used: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"--out={str(out)[:200]!r} is not a regular file (a folder, device, FIFO or socket)")
    for path in inputs:
        try:
            same = os.path.samefile(out, path)
        except OSError:
            continue  # an input that cannot be found is refused when it is read
        if same:
            raise ValueError(f"--out={str(out)[:200]!r} is the input {str(path)[:200]!r}: the calibration would "
                             f"overwrite it; give another --out")


def _write(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` whole or not at all: a temporary file beside it, then renamed over it (a
    symbolic link's target is replaced, the link kept)."""
    target = Path(os.path.realpath(out))
    tmp = target.parent / f".{target.name[:200]}.{os.urandom(4).hex()}.tmp"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            with open(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
    except OSError as e:
        raise ValueError(f"cannot write {str(out)[:200]}: {e.strerror}") from None


def _progress(runs: int):
    """A callback for :func:`~aisize.calibrate.fitting.fit` that prints a line every :data:`PROGRESS_SECONDS`."""
    start = last = time.monotonic()

    def report(evaluations: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_SECONDS:
            last = now
            print(f"aisize calibrate: fitting {runs} runs: {evaluations} model evaluations in {now - start:.0f} s",
                  file=sys.stderr, flush=True)

    return report


def run(args: argparse.Namespace) -> int:
    from aisize import format as F
    from aisize.calibrate.fitting import fit, summary
    from aisize.calibrate.formats import read_runs
    from aisize import calibration as both

    if not 1 <= args.max_evaluations <= 10_000:
        raise ValueError(f"--max-evaluations={args.max_evaluations} is not allowed: 1 to 10000")
    defaults = {k: getattr(args, k) for k in ("model", "accelerator", "tensor_parallel", "gpus", "expert_parallel",
                                              "weight_precision", "kv_precision", "engine") if getattr(args, k)}
    out = Path(args.out)
    _check_out(out, [*args.runs, *([args.base] if args.base else [])])
    runs = read_runs(args.runs, defaults)
    base_both = both.load(args.base) if args.base else both.CALIBRATION  # a file of either format
    base = base_both.serving
    name = args.name or f"{out.stem} (fitted by aisize calibrate on {len(runs)} runs)"
    result = fit(runs, base, max_evaluations=args.max_evaluations, name=name,
                 fitted_on=tuple(Path(p).name for p in args.runs), progress=_progress(len(runs)))
    print(f"{'run':72s} {'measured':>10s} {'before':>8s} {'after':>8s} {'TPOT before':>11s} {'TPOT after':>10s}")
    for b, a in zip(result.before, result.after):
        print(f"{b.run.label[:72]:72s} {F.sig(b.run.measured_tokens_per_s_per_gpu):>10s} {_pct(b.error):>8s} "
              f"{_pct(a.error):>8s} {_pct(b.tpot_error):>11s} {_pct(a.tpot_error):>10s}")
    for r, why in result.skipped:
        print(f"{r.label[:72]:72s} not expressible: {why}")
    for label, preds in (("before", result.before), ("after", result.after)):
        s = summary(preds)
        print(f"{label}: {s['runs']} runs, {s['within']} within 15 %, median |err| "
              f"{100 * s['median_abs_error']:.1f} %" + (f"; TPOT {s['tpot_within']}/{s['tpot_runs']} within 15 %, "
                                                         f"median |err| {100 * s['tpot_median_abs_error']:.1f} %"
                                                         if s["tpot_runs"] else ""))
    print("fitted: " + ", ".join(f"{row['constant']} = {row['value']:.4g}" for row in result.calibration.as_table()
                                 if row["constant"] in {f"{c}[{g}]" if g else c for c, g in result.constants}))
    if args.training == "shipped":  # the base's training section (aisize's own unless --base has one)
        _write(out, both.Calibration(serving=result.calibration, training=base_both.training).to_json() + "\n")
    else:
        _write(out, result.calibration.to_json() + "\n")
    print(f"written: {out}" + (f" (sections serving and training: {base_both.training.name})"
                               if args.training == "shipped" else ""))
    print(f"select it in a scenario file (aisize plan / report / sweep embed its content, so a saved scenario "
          f"stands alone):\n  policies:\n    serving_calibration: {out}\n"
          "or in the app: Accuracy tab, Load calibration, then Use in this scenario")
    return 0
