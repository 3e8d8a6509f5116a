"""Fit the training efficiency constants jointly on both public training sets, and print them.

The rows: ``data/validation/training_torchtitan.csv`` (torchtitan's runs, copy of
``reference/training_torchtitan.csv``) and ``data/validation/training_megatron.csv`` (NVIDIA's
Megatron-Core runs, copy of ``reference/training_megatron.csv``), each turned into
:func:`aisize.training.estimate` keywords exactly as the scoring tools do
(:func:`aisize.validation.training.torchtitan_kwargs`,
:func:`aisize.validation.training_megatron.megatron_kwargs`).

1. The step-time CV first, on the torchtitan pairs with the same per-GPU work on 8 and on 128
   GPUs (the only rows that isolate it).
2. Then every speed constant at once (:data:`SPEED`): GEMM and attention efficiencies per
   generation and kernel, HBM efficiency, and the MoE constants (grouped-GEMM half-efficiency
   tokens, host synchronisation, its share under CUDA graphs). Each constant only changes the
   rows of its own regime (a Blackwell efficiency only Blackwell rows, an MoE constant only MoE
   rows), so a regime without rows cannot move another's answer. Levenberg-Marquardt on the
   log error of tokens/s per GPU with a soft-L1 loss (scale :data:`LOSS_SCALE`), so a few rows
   whose recipe does not match the published run cannot pull every constant; same weight per row.
3. Then the allocator fragmentation shares on the torchtitan peak-memory rows.

``--gemm-source kernels`` fits with the layers' GEMMs read from the measured kernel tables
(:mod:`aisize.training.kernel_gemms`; the GEMM efficiencies then only time what no table covers).
``--moe-source kernels`` reads the routed experts' grouped GEMMs from the measured MoE tables
(:mod:`aisize.training.kernel_moe`; ``grouped_gemm_half_tokens`` then only times what no table covers).
``--cross-validate`` adds a leave-one-model-out score: for each model, the speed constants are refitted
(warm-started from the in-sample fit, :data:`CV_ITERS` iterations) without that model's rows and
scored on them; the table gives in-sample and held-out rows within 15 % per model and in all.
``--cross-validate-gpu`` does the same leaving one accelerator out. Only the Blackwell folds (B200, GB200,
GB300 share their constants) test a constant on a GPU it was not fitted on: A100 is the one Ampere GPU and
H100 the one Hopper GPU in the rows, so no remaining row moves their own efficiencies, which keep the
in-sample values (the fold then tests only the shared constants, and the measured tables).

``--freeze NAME[KEY][=VALUE]`` holds a constant out of every fit (at VALUE, else the start's value) and
``--tie NAME[KEY]=NAME[KEY]`` makes one follow another: to test whether fewer fitted constants generalise
better (docs/training-cv.md). ``--untie-blackwell-16bit`` fits Blackwell's 16-bit GEMM efficiency apart from Hopper's.

The fit itself is :mod:`aisize.calibrate.training` (each row through ``estimate(..., calibration=)``);
this script feeds it the public rows. ``--save FILE`` writes an :mod:`aisize.calibration` file whose
``training`` section is the refit (the serving section aisize's own); prints the values to paste into
:data:`aisize.training.calibration.CALIBRATION` and the fit's residuals; asserts nothing.
Run: .venv/bin/python benchmarks/fit_training.py [--gemm-source kernels] [--moe-source kernels] [--cross-validate]
     [--cross-validate-gpu] [--untie-blackwell-16bit]
     [--freeze ...] [--tie ...] [--start f.json] [--save f.json]
"""

from __future__ import annotations

import numpy as np

from aisize.calibrate import training as T
from aisize.training.calibration import CALIBRATION, CONSTANTS
from aisize.validation.training import torchtitan_kwargs, torchtitan_rows
from aisize.validation.training_megatron import megatron_kwargs, megatron_rows

# Pairs with the same per-GPU work on 8 and on 128 GPUs (torchtitan Tables 1 and 3): the only rows
# that isolate the step-time jitter, so step_time_cv is fitted on them alone, first.
SCALE_PAIRS = (("C1", "C8"), ("C2", "C9"), ("C3", "C10"))
CV_ITERS = 10  # LM iterations of each leave-one-model-out refit, from the in-sample optimum
TOLERANCE = 0.15


def cases():
    """(label, model, accelerator, keywords, published tokens/s per GPU, published peak GiB or None)."""
    out = []
    for r in torchtitan_rows():
        m, g, kw = torchtitan_kwargs(r)
        out.append((r["id"], m, g, kw, float(r["tokens_per_s_per_gpu"]),
                    float(r["peak_memory_gib"]) if r["peak_memory_gib"] else None))
    for r in megatron_rows():
        m, g, kw = megatron_kwargs(r)
        out.append((r["id"], m, g, kw, float(r["tokens_per_s_per_gpu"]), None))
    return out


def freeze(cal, specs):
    """``cal`` with the constants ``specs`` names ("name[key]" or "name[key]=value") held out of the fit
    (or, for a constant the fit never moves, "name=value" set).

    A frozen constant keeps the value given (or ``cal``'s) in the in-sample fit and in every
    leave-one-model-out refit: a sourced or physical value in place of one the rows choose. It leaves
    :data:`aisize.calibrate.training.SPEED` (which both fits read) without it.
    """
    keep = list(T.SPEED)
    for spec in specs:
        label, _, given = spec.partition("=")
        name, _, key = label.rstrip("]").partition("[")
        key = key or None
        hit = [s for s in keep if s[0] == name and s[1] == key]
        if not hit and given and name in CONSTANTS and name not in (s[0] for s in T.SPEED):
            hit = [None]  # a constant the fit never moves: only set it
        if not hit:
            raise SystemExit(f"--freeze {spec!r}: not a fitted speed constant; one of "
                             + ", ".join(f"{n}[{k}]" if k else n for n, k, *_ in T.SPEED))
        if hit[0] is not None:
            keep.remove(hit[0])
        if given:
            cal = cal.with_(**({name: float(given)} if key is None else {name: {key: float(given)}}))
    T.SPEED = tuple(keep)
    return cal


def tie(specs):
    """Make each "follower[key]=leader[key]" of ``specs`` a key that follows another in every fit (one constant
    fewer): removed from :data:`aisize.calibrate.training.SPEED`, added to its ``TIED``."""
    pairs = []
    for spec in specs:
        follower, _, leader = spec.partition("=")
        (fn, _, fk), (ln, _, lk) = (x.rstrip("]").partition("[") for x in (follower, leader))
        if not any(s[0] == fn and s[1] == fk for s in T.SPEED) or not any(s[0] == ln and s[1] == lk for s in T.SPEED):
            raise SystemExit(f"--tie {spec!r}: both sides must be fitted speed constants with their keys")
        T.SPEED = tuple(s for s in T.SPEED if not (s[0] == fn and s[1] == fk))
        pairs.append(((fn, fk), (ln, lk)))
    T.TIED = T.TIED + tuple(pairs)


def untie_blackwell_16bit():
    """Fit ``gemm_efficiency[blackwell:16]`` as a constant of its own, in place of the rule of
    :func:`aisize.calibrate.training.with_values` (Blackwell's 16-bit efficiency follows its 8-bit one at Hopper's
    16/8-bit ratio), which lets Blackwell's bf16 rows move Hopper's constants (docs/training-cv.md)."""
    T.SPEED = T.SPEED + (("gemm_efficiency", "blackwell:16", 0.2, 1.0),)
    ratio_rule = T.with_values

    def with_values(cal, x):
        *_, lo, hi = T.SPEED[-1]
        return ratio_rule(cal, x).with_(gemm_efficiency={"blackwell:16": float(min(max(x[-1], lo), hi))})

    T.with_values = with_values


def model_of(row) -> str:
    return getattr(row[1], "id", row[1])


def gpu_of(row) -> str:
    return getattr(row[2], "id", row[2])


def cross_validate(rows, best, group=model_of):
    """Leave-one-group-out (``group``: :func:`model_of` or :func:`gpu_of`):
    {group: (rows, in-sample within 15 %, held-out within 15 %, held-out log errors)}."""
    inside = T.log_errors(rows, best)
    out = {}
    for name in dict.fromkeys(group(r) for r in rows):
        train = [r for r in rows if group(r) != name]
        test = [r for r in rows if group(r) == name]
        held_cal, _ = T.fit_speed(train, best, iters=CV_ITERS)
        held = T.log_errors(test, held_cal)
        mine = np.array([e for r, e in zip(rows, inside) if group(r) == name])
        out[name] = (len(test), int(np.sum(np.abs(np.expm1(mine)) <= TOLERANCE)),
                     int(np.sum(np.abs(np.expm1(held)) <= TOLERANCE)), held)
    return out


if __name__ == "__main__":
    import argparse

    from aisize import calibration
    from aisize.training import kernel_gemms, kernel_moe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm-source", choices=kernel_gemms.GEMM_SOURCES, default=kernel_gemms.DEFAULT_GEMM_SOURCE)
    ap.add_argument("--moe-source", choices=kernel_moe.MOE_SOURCES, default=kernel_moe.DEFAULT_MOE_SOURCE)
    ap.add_argument("--cross-validate", action="store_true", help="leave one model out")
    ap.add_argument("--cross-validate-gpu", action="store_true",
                    help="leave one accelerator out (a generation with one GPU keeps its own constants' in-sample values)")
    ap.add_argument("--save", metavar="FILE")
    ap.add_argument("--freeze", metavar="NAME[KEY][=VALUE]", action="append", default=[],
                    help="hold a speed constant out of the fit (at VALUE, else the shipped value); repeatable")
    ap.add_argument("--tie", metavar="NAME[KEY]=NAME[KEY]", action="append", default=[],
                    help="the first constant follows the second in every fit; repeatable")
    ap.add_argument("--untie-blackwell-16bit", action="store_true",
                    help="fit gemm_efficiency[blackwell:16] on its own, not at Hopper's 16/8-bit ratio")
    ap.add_argument("--start", metavar="FILE", help="start from this calibration file's training section")
    args = ap.parse_args()
    kernel_gemms.DEFAULT_GEMM_SOURCE = args.gemm_source
    kernel_moe.DEFAULT_MOE_SOURCE = args.moe_source
    print(f"GEMMs: {args.gemm_source}; routed experts: {args.moe_source}")
    rows = cases()
    start = calibration.load(args.start).training if args.start else CALIBRATION
    start = freeze(start, args.freeze)
    tie(args.tie)
    if args.untie_blackwell_16bit:
        untie_blackwell_16bit()
    if args.freeze or args.tie:
        print("frozen: " + ", ".join(args.freeze) + "; tied: " + ", ".join(args.tie))
    cal = T.fit_jitter(rows, start, SCALE_PAIRS)
    print(f"step_time_cv = {cal.step_time_cv:.3f} (8 vs 128 GPU pairs {SCALE_PAIRS})")
    cal, loss = T.fit_speed(rows, cal)
    print(f"speed: soft-L1 loss {loss:.4f} over {len(rows)} rows")
    for name, key, *_ in T.SPEED:
        print(f"  {name}{'' if key is None else f'[{key}]'} = {T.value(cal, name, key):.4g}")
    err = T.log_errors(rows, cal)
    for (label, *_), e in zip(rows, err):
        print(f"  {label:4s} {100 * (np.exp(e) - 1):+6.1f}%")
    within = np.mean(np.abs(np.exp(err) - 1) <= 0.15)
    print(f"within 15 %: {within:.0%}; median |err| {100 * np.median(np.abs(np.exp(err) - 1)):.1f}%")
    for flag, group, what in ((args.cross_validate, model_of, "model"), (args.cross_validate_gpu, gpu_of, "GPU")):
        if not flag:
            continue
        cv = cross_validate(rows, cal, group)
        print(f"leave-one-{what}-out ({CV_ITERS} LM iterations per refit), rows within 15 %:")
        print(f"  {what:18s} rows in-sample held-out  held-out median |err|  held-out errors")
        for name, (n, ins, held, e) in cv.items():
            each = " ".join(f"{100 * x:+.0f}" for x in np.expm1(e))
            print(f"  {name:18s} {n:4d} {ins:9d} {held:8d}  {100 * np.median(np.abs(np.expm1(e))):6.1f}%  {each}")
        n_all = sum(v[0] for v in cv.values())
        all_held = np.concatenate([v[3] for v in cv.values()])
        print(f"  {'all':18s} {n_all:4d} {sum(v[1] for v in cv.values()):9d} {sum(v[2] for v in cv.values()):8d}  "
              f"{100 * np.median(np.abs(np.expm1(all_held))):6.1f}%")
    cal, lm = T.fit_memory(rows, cal)
    print(f"memory: sum of squared log errors {lm:.4f}")
    for key, v in cal.allocator_fragmentation_share.items():
        print(f"  allocator_fragmentation_share[{key}] = {v:.3f}")
    if args.save:
        cal = cal.with_(name=f"refitted by benchmarks/fit_training.py ({args.gemm_source} GEMMs, "
                             f"{args.moe_source} experts)",
                        fitted_on=("training_torchtitan.csv", "training_megatron.csv"))
        print(f"written: {calibration.Calibration(training=cal).save(args.save)}")
