"""Fit the training efficiency constants on the torchtitan reference rows, and print them.

The step-time CV is fitted first, on the torchtitan pairs with the same per-GPU work on
8 and on 128 GPUs (the rows that isolate it); the other fitted constants of
:mod:`aisize.training.efficiency` (GEMM and attention efficiency per generation, HBM
efficiency) then minimise the squared log error of tokens/s per GPU over every row of
``data/validation/training_torchtitan.csv``
(a copy of ``reference/training_torchtitan.csv``); the allocator fragmentation shares
of :mod:`aisize.training.memory` then minimise the squared log error of peak memory
over the rows that give it. Nelder-Mead, numpy only. Prints the values to paste into
the modules; asserts nothing.
Run: .venv/bin/python benchmarks/fit_training.py
"""

from __future__ import annotations

import numpy as np

from aisize.training import efficiency as E
from aisize.training import estimate
from aisize.training import memory as M
from aisize.validation.training import torchtitan_kwargs, torchtitan_rows

SPEED = (("GEMM_EFFICIENCY", ("ampere", "16")), ("GEMM_EFFICIENCY", ("hopper", "16")),
         ("GEMM_EFFICIENCY", ("hopper", "8")), ("ATTENTION_EFFICIENCY", "ampere"),
         ("ATTENTION_EFFICIENCY", "hopper"), ("HBM_EFFICIENCY", None))
# Pairs with the same per-GPU work on 8 and on 128 GPUs (torchtitan Tables 1 and 3): the only rows
# that isolate the step-time jitter, so STEP_TIME_CV is fitted on them alone, first.
SCALE_PAIRS = (("C1", "C8"), ("C2", "C9"), ("C3", "C10"))
MEMORY = (("ALLOCATOR_FRAGMENTATION_SHARE", "eager"), ("ALLOCATOR_FRAGMENTATION_SHARE", "compiled"))


def _set(module, name, key, value):
    if key is None:
        setattr(module, name, float(value))
    else:
        getattr(module, name)[key] = float(value)


def _cases():
    return [(torchtitan_kwargs(r), r) for r in torchtitan_rows()]


def speed_loss(x, cases):
    for (name, key), v in zip(SPEED, x):
        if not 0.0 < v < 1.0:
            return 1e9
        _set(E, name, key, v)
    err = [np.log(estimate(m, g, **kw).tokens_per_s_per_gpu / float(r["tokens_per_s_per_gpu"]))
           for (m, g, kw), r in cases]
    return float(np.sum(np.square(err)))


def jitter_loss(cv, cases):
    E.STEP_TIME_CV = float(cv)
    by = {r["id"]: (m, g, kw, r) for (m, g, kw), r in cases}
    err = []
    for small, big in SCALE_PAIRS:
        (m, g, kw, r8), (_, _, kw128, r128) = by[small], by[big]
        pub = float(r128["tokens_per_s_per_gpu"]) / float(r8["tokens_per_s_per_gpu"])
        pred = estimate(m, g, **kw128).tokens_per_s_per_gpu / estimate(m, g, **kw).tokens_per_s_per_gpu
        err.append(np.log(pred / pub))
    return float(np.sum(np.square(err)))


def memory_loss(x, cases):
    for (name, key), v in zip(MEMORY, x):
        if not 0.0 <= v < 1.0:
            return 1e9
        _set(M, name, key, v)
    err = [np.log(estimate(m, g, **kw).peak_memory_bytes / 2**30 / float(r["peak_memory_gib"]))
           for (m, g, kw), r in cases if r["peak_memory_gib"]]
    return float(np.sum(np.square(err)))


def nelder_mead(f, x0, step=0.05, iters=300):
    """Minimise f from x0 (Nelder & Mead 1965, standard coefficients)."""
    n = len(x0)
    pts = [np.asarray(x0, float)] + [np.asarray(x0, float) + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        centre = np.mean(pts[:-1], axis=0)
        refl = centre + (centre - pts[-1])
        fr = f(refl)
        if fr < vals[0]:
            exp = centre + 2.0 * (centre - pts[-1])
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            con = centre + 0.5 * (pts[-1] - centre)
            fc = f(con)
            if fc < vals[-1]:
                pts[-1], vals[-1] = con, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    best = int(np.argmin(vals))
    return pts[best], vals[best]


if __name__ == "__main__":
    cases = _cases()
    grid = np.linspace(0.0, 0.05, 51)
    cv = grid[int(np.argmin([jitter_loss(c, cases) for c in grid]))]
    jitter_loss(cv, cases)
    print(f"STEP_TIME_CV = {cv:.3f} (8 vs 128 GPU pairs {SCALE_PAIRS})")
    x0 = [getattr(E, n)[k] if k is not None else getattr(E, n) for n, k in SPEED]
    x, loss = nelder_mead(lambda v: speed_loss(v, cases), x0)
    speed_loss(x, cases)
    print(f"speed: sum of squared log errors {loss:.4f} over {len(cases)} rows")
    for (name, key), v in zip(SPEED, x):
        print(f"  {name}[{key}] = {v:.3f}" if key is not None else f"  {name} = {v:.4f}")
    m0 = [M.ALLOCATOR_FRAGMENTATION_SHARE[k] for _, k in MEMORY]
    xm, lm = nelder_mead(lambda v: memory_loss(v, cases), m0, step=0.03, iters=100)
    print(f"memory: sum of squared log errors {lm:.4f}")
    for (name, key), v in zip(MEMORY, xm):
        print(f"  {name}[{key}] = {v:.3f}")
