"""Fit the serving calibration jointly on the public runs and print every set's score.

Usage (from the project root):

    .venv/bin/python benchmarks/fit_serving.py            # the scores at today's constants
    .venv/bin/python benchmarks/fit_serving.py --fit      # refit, print the constants to paste into
                                                          # aisize/serving/calibration.py, and the scores
    .venv/bin/python benchmarks/fit_serving.py --fit --generation hopper
                                                          # refit only one generation's own constants, on
                                                          # that generation's runs (no other GPU's answer moves)
    .venv/bin/python benchmarks/fit_serving.py --fit --generation blackwell --latest-builds \
        --constants memory_efficiency moe_layer_seconds   # how today's Blackwell constants were fitted
    .venv/bin/python benchmarks/fit_serving.py --cross-validate model gpu
                                                          # leave one model out, leave one GPU out: each
                                                          # group refitted without its runs, then scored
    .venv/bin/python benchmarks/fit_serving.py --cross-validate model --fold deepseek-r1 --verbose
                                                          # one fold alone; per fold the constants its refit
                                                          # moved, its runs by GPU, each move put back alone
    .venv/bin/python benchmarks/fit_serving.py --moe-source kernels --fit --max-evaluations 20 \
        --cross-validate model gpu --out calibration.kernels.json
                                                          # the same from the measured MoE kernels
    .venv/bin/python benchmarks/fit_serving.py --attention-source kernels --fit --max-evaluations 20 \
        --cross-validate model gpu --out calibration.attention.json
                                                          # the same from the measured attention kernels

The runs are the four public sets under ``data/validation/`` (copies of ``reference/`` with catalog
ids): TensorRT-LLM max-throughput runs, closed-loop runs at a fixed concurrency, the same with MTP
speculative decoding, and disaggregated deployments. :func:`aisize.calibrate.fit` fits the constants
the first, second and fourth identify (every generation they cover), the same for every model and
engine; the MTP runs state no acceptance, so they are scored, not fitted on. This is what
``aisize calibrate`` does on a user's own runs. ``--latest-builds`` leaves out the runs of a recipe
that its set measured again on a later day with a newer engine build
(:func:`aisize.validation.serving.superseded_readings`); they are still scored.
"""

from __future__ import annotations

import argparse
import time

from aisize import catalog
from aisize.calibrate import cross_validate, fit, predict, read_table
from aisize.calibrate.crossval import fold_lines, group_of
from aisize.calibrate.fitting import PER_GENERATION, summary
from aisize.serving import CALIBRATION
from aisize.serving.calibration import ELEMENTWISE_SOURCES, GEMM_SOURCES, MOE_LAYER_SOURCES, MOE_SOURCES
from aisize.serving.hardware import generation
from aisize.validation.serving import superseded_readings

SETS = ("serving_throughput", "serving_load", "serving_specdec", "serving_disagg")
FITTED = ("serving_throughput", "serving_load", "serving_disagg")  # MTP runs state no acceptance: scored only


def _line(name, preds):
    s = summary(preds)
    line = f"{name:20s} {s['runs']:3d} runs, {s['within']:3d} within 15%, median |err| {100 * s['median_abs_error']:.1f}%"
    if s["tpot_runs"]:
        line += (f", TPOT within 15%: {s['tpot_within']}/{s['tpot_runs']}, median |err| "
                 f"{100 * s['tpot_median_abs_error']:.1f}%")
    return line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", action="store_true", help="refit the constants")
    ap.add_argument("--sets", nargs="*", default=list(FITTED), choices=SETS, help="which sets to fit on")
    ap.add_argument("--max-evaluations", type=int, default=300)
    ap.add_argument("--generation", choices=sorted(CALIBRATION.gemm_efficiency),
                    help="fit only the constants kept per GPU generation for this one, on its runs; "
                         "request_seconds stays as it is")
    ap.add_argument("--constants", nargs="+", choices=PER_GENERATION,
                    help="with --generation: which of its own constants to fit (default: all three)")
    ap.add_argument("--latest-builds", action="store_true",
                    help="fit on the latest build of each recipe only (earlier builds are scored, not fitted on)")
    ap.add_argument("--cross-validate", nargs="+", choices=("model", "gpu"), default=(),
                    help="also print held-out scores: refit without each model (or GPU), score its runs")
    ap.add_argument("--cv-evaluations", type=int, default=5, help="solver budget per cross-validation refit")
    ap.add_argument("--fold", nargs="+", default=None, metavar="GROUP",
                    help="with --cross-validate: hold out only these models or GPUs (one refit each)")
    ap.add_argument("--verbose", action="store_true",
                    help="with --cross-validate: per fold, the constants its refit moved furthest beside the start's, "
                         "its runs by GPU (or model), and its counts with each moved constant alone put back")
    ap.add_argument("--gemm-source", choices=GEMM_SOURCES, default=CALIBRATION.gemm_source,
                    help="where linear layers' time comes from (the start of the fit and the scores)")
    ap.add_argument("--moe-source", choices=MOE_SOURCES, default=CALIBRATION.moe_source,
                    help="where routed experts' time comes from (the start of the fit and the scores)")
    ap.add_argument("--attention-source", choices=GEMM_SOURCES, default=CALIBRATION.attention_source,
                    help="where attention's time comes from (the start of the fit and the scores)")
    ap.add_argument("--allreduce-source", choices=GEMM_SOURCES, default=CALIBRATION.allreduce_source,
                    help="where tensor-parallel all-reduces' time comes from (the start of the fit and the scores)")
    ap.add_argument("--moe-layer-source", choices=MOE_LAYER_SOURCES, default=CALIBRATION.moe_layer_source,
                    help="the MoE layer's fixed time: as fitted, or scaled to the expert format by the measured MoE "
                         "operators (aisize.serving.moe_format)")
    ap.add_argument("--elementwise-source", choices=ELEMENTWISE_SOURCES, default=CALIBRATION.elementwise_source,
                    help="the elementwise traffic: all on every GPU of a TP group, or a counted hidden-size part on "
                         "every GPU and the fitted rest divided over the group")
    ap.add_argument("--out", default="calibration.fitted.json", help="where --fit writes the calibration")
    a = ap.parse_args(argv)
    if a.constants and not a.generation:
        ap.error("--constants needs --generation (the constants are that generation's own)")
    runs = {s: read_table(catalog.data_dir() / "validation" / f"{s}.csv") for s in SETS}
    base = CALIBRATION.with_(gemm_source=a.gemm_source, moe_source=a.moe_source, attention_source=a.attention_source,
                             allreduce_source=a.allreduce_source, moe_layer_source=a.moe_layer_source,
                             elementwise_source=a.elementwise_source)
    cal = base
    if a.fit:
        start = time.perf_counter()
        chosen = []
        for s in a.sets:
            earlier = superseded_readings(runs[s]) if a.latest_builds else {}
            chosen += [r for r in runs[s] if r.id not in earlier]
        constants = None
        if a.generation:
            chosen = [r for r in chosen if generation(r.accelerator) == a.generation]
            constants = [(c, a.generation) for c in (a.constants or PER_GENERATION)]
        result = fit(chosen, base, constants=constants, max_evaluations=a.max_evaluations,
                     name=CALIBRATION.name, fitted_on=tuple(f"{s}.csv" for s in a.sets))
        cal = result.calibration
        if a.generation:  # the request's fixed time is every generation's: keep it
            cal = cal.with_(request_seconds=CALIBRATION.request_seconds, fitted=CALIBRATION.fitted,
                            fitted_on=CALIBRATION.fitted_on)
        print(f"fitted {len(result.constants)} constants in {time.perf_counter() - start:.0f} s "
              f"({result.evaluations} evaluations); skipped {len(result.skipped)} runs")
        for row in cal.as_table():
            print(f"  {row['constant']:36s} {row['value']:.6g}  ({row['origin']})")
        with open(a.out, "w") as f:
            f.write(cal.to_json())
        print(f"written: {a.out}")
    for s in SETS:
        preds = [predict(r, cal) for r in runs[s]]
        print(_line(s, preds))
        earlier = superseded_readings(runs[s])
        if earlier:  # runs of a recipe measured again later with a newer engine build: the latest alone
            print(_line("  latest builds", [p for p in preds if p.run.id not in earlier]))


    for by in a.cross_validate:
        chosen = [r for s in a.sets for r in runs[s]]
        start = time.perf_counter()
        # --fold names models or GPUs: each grouping holds out those of its own kind
        only = [g for g in a.fold if g in {group_of(r, by) for r in chosen}] if a.fold else None
        cv = cross_validate(chosen, cal, by=by, max_evaluations=a.cv_evaluations, only=only,
                            progress=lambda g, k, n: print(f"  holding out {by} {g} ({k + 1}/{n})", flush=True))
        print(f"leave one {by} out over {', '.join(a.sets)} ({len(cv.groups)} groups, "
              f"{time.perf_counter() - start:.0f} s; skipped {[g for g, _ in cv.skipped]}):")
        print(_line("  in sample", list(cv.in_sample)))
        print(_line("  held out", list(cv.held_out)))
        for g in cv.groups:  # which fold loses what: a group's runs in sample, then predicted without them
            pairs = [(i, h) for i, h in zip(cv.in_sample, cv.held_out) if group_of(i.run, by) == g]
            if pairs:
                print(_line(f"    {g[:18]}", [i for i, _ in pairs]).replace(" runs,", " in sample,", 1))
                print(_line("      held out", [h for _, h in pairs]))
        if a.verbose:  # per fold: runs lost, the constants moved, the runs by GPU (model), each move put back
            print("\n".join(fold_lines(cv, cal, most=6, detail=True)))


if __name__ == "__main__":
    main()
