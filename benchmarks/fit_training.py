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
``--cross-validate`` adds a leave-one-model-out score: for each model, the speed constants are refitted
(warm-started from the in-sample fit, :data:`CV_ITERS` iterations) without that model's rows and
scored on them; the table gives in-sample and held-out rows within 15 % per model and in all.
``--save FILE`` writes the fitted speed constants as JSON (to evaluate other sets under them).

numpy only. Prints the values to paste into the modules and the fit's residuals; asserts nothing.
Run: .venv/bin/python benchmarks/fit_training.py [--gemm-source kernels] [--cross-validate] [--save f.json]
"""

from __future__ import annotations

import numpy as np

from aisize.training import efficiency as E
from aisize.training import estimate
from aisize.training import memory as M
from aisize.training import moe as X
from aisize.validation.training import torchtitan_kwargs, torchtitan_rows
from aisize.validation.training_megatron import megatron_kwargs, megatron_rows

# (module, name, key, lower bound, upper bound)
SPEED = ((E, "GEMM_EFFICIENCY", ("ampere", "16"), 0.2, 1.0), (E, "GEMM_EFFICIENCY", ("hopper", "16"), 0.2, 1.0),
         (E, "GEMM_EFFICIENCY", ("hopper", "8"), 0.2, 1.0), (E, "GEMM_EFFICIENCY", ("blackwell", "8"), 0.2, 1.0),
         (E, "ATTENTION_EFFICIENCY", ("ampere", "fa2"), 0.05, 1.0),
         (E, "ATTENTION_EFFICIENCY", ("hopper", "fa2"), 0.05, 1.0),
         (E, "ATTENTION_EFFICIENCY", ("hopper", "fa3"), 0.05, 1.0),
         (E, "ATTENTION_EFFICIENCY", ("blackwell", "fa3"), 0.05, 1.0),
         (E, "HBM_EFFICIENCY", None, 0.55, 0.95),
         (X, "GROUPED_GEMM_HALF_TOKENS", None, 1.0, 1e5), (X, "MOE_SYNC_HOST_SECONDS", "alltoall", 1e-5, 0.1),
         (X, "MOE_SYNC_HOST_SECONDS", "flex", 1e-5, 0.1),
         (X, "CUDA_GRAPH_HOST_SHARE", None, 0.0, 1.0))
# Constants that follow others (no row identifies them apart): Volta as Ampere, Blackwell fp4 as fp8.
TIED = (((E, "GEMM_EFFICIENCY", ("volta", "16")), (E, "GEMM_EFFICIENCY", ("ampere", "16"))),
        ((E, "ATTENTION_EFFICIENCY", ("volta", "fa2")), (E, "ATTENTION_EFFICIENCY", ("ampere", "fa2"))),
        ((E, "GEMM_EFFICIENCY", ("blackwell", "4")), (E, "GEMM_EFFICIENCY", ("blackwell", "8"))))
# Pairs with the same per-GPU work on 8 and on 128 GPUs (torchtitan Tables 1 and 3): the only rows
# that isolate the step-time jitter, so STEP_TIME_CV is fitted on them alone, first.
SCALE_PAIRS = (("C1", "C8"), ("C2", "C9"), ("C3", "C10"))
MEMORY = (("ALLOCATOR_FRAGMENTATION_SHARE", "eager"), ("ALLOCATOR_FRAGMENTATION_SHARE", "compiled"))
LOSS_SCALE = 0.10  # soft-L1 scale of the log error: rows beyond ~10 % count linearly, not squared


def _get(module, name, key):
    return getattr(module, name) if key is None else getattr(module, name)[key]


def _set(module, name, key, value):
    if key is None:
        setattr(module, name, float(value))
    else:
        getattr(module, name)[key] = float(value)


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


def log_errors(rows):
    return np.array([np.log(estimate(m, g, **kw).tokens_per_s_per_gpu / pub) for _, m, g, kw, pub, _ in rows])


def _apply(x):
    for (mod, name, key, lo, hi), v in zip(SPEED, x):
        _set(mod, name, key, min(max(v, lo), hi))
    for (mod, name, key), (smod, sname, skey) in TIED:
        _set(mod, name, key, _get(smod, sname, skey))
    # Blackwell's 16-bit GEMMs: only MoE rows run them, so they follow its fp8 GEMMs at Hopper's ratio
    g = E.GEMM_EFFICIENCY
    g[("blackwell", "16")] = g[("blackwell", "8")] * g[("hopper", "16")] / g[("hopper", "8")]


def _robust(e):
    """Soft-L1 residuals: r² = 2 c² (sqrt(1 + (e/c)²) - 1)."""
    c = LOSS_SCALE
    return np.sign(e) * c * np.sqrt(2.0 * (np.sqrt(1.0 + (e / c) ** 2) - 1.0))


def fit_speed(rows, iters=30):
    """Levenberg-Marquardt on the constants of :data:`SPEED` (log-scaled where they span decades)."""
    logs = np.array([lo > 0 and hi / lo > 100 for *_, lo, hi in SPEED])
    to_x = lambda v: np.where(logs, np.log(np.maximum(v, 1e-12)), v)  # noqa: E731
    from_x = lambda x: np.where(logs, np.exp(x), x)  # noqa: E731
    x = to_x(np.array([_get(mod, name, key) for mod, name, key, *_ in SPEED], dtype=float))

    def residuals(xx):
        _apply(from_x(xx))
        return _robust(log_errors(rows))

    r = residuals(x)
    lam = 1e-2
    for _ in range(iters):
        jac = np.empty((r.size, x.size))
        for i in range(x.size):
            step = 1e-3 * max(abs(x[i]), 1e-2)
            xi = x.copy()
            xi[i] += step
            jac[:, i] = (residuals(xi) - r) / step
        g, a = jac.T @ r, jac.T @ jac
        improved = False
        while lam < 1e6:
            dx = -np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-9), g)
            trial = residuals(x + dx)
            if trial @ trial < r @ r:
                x, r, lam, improved = x + dx, trial, lam / 3.0, True
                break
            lam *= 4.0
        if not improved or np.max(np.abs(dx)) < 1e-5:
            break
    best = np.array([min(max(v, lo), hi) for v, (*_, lo, hi) in zip(from_x(x), SPEED)])
    _apply(best)
    return best, float(r @ r)


def jitter_loss(cv, rows):
    E.STEP_TIME_CV = float(cv)
    by = {label: (m, g, kw, pub) for label, m, g, kw, pub, _ in rows}
    err = []
    for small, big in SCALE_PAIRS:
        (m, g, kw, p8), (_, _, kw128, p128) = by[small], by[big]
        pred = estimate(m, g, **kw128).tokens_per_s_per_gpu / estimate(m, g, **kw).tokens_per_s_per_gpu
        err.append(np.log(pred / (p128 / p8)))
    return float(np.sum(np.square(err)))


def memory_loss(x, rows):
    for (name, key), v in zip(MEMORY, x):
        if not 0.0 <= v < 1.0:
            return 1e9
        _set(M, name, key, v)
    err = [np.log(estimate(m, g, **kw).peak_memory_bytes / 2**30 / peak) for _, m, g, kw, _, peak in rows if peak]
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


CV_ITERS = 10  # LM iterations of each leave-one-model-out refit, from the in-sample optimum
TOLERANCE = 0.15


def model_of(row) -> str:
    return getattr(row[1], "id", row[1])


def cross_validate(rows, best):
    """Leave-one-model-out: {model: (rows, in-sample within 15 %, held-out within 15 %, held-out log errors)}."""
    inside = log_errors(rows)
    out = {}
    for name in dict.fromkeys(model_of(r) for r in rows):
        _apply(best)
        train = [r for r in rows if model_of(r) != name]
        test = [r for r in rows if model_of(r) == name]
        fit_speed(train, iters=CV_ITERS)
        held = log_errors(test)
        mine = np.array([e for r, e in zip(rows, inside) if model_of(r) == name])
        out[name] = (len(test), int(np.sum(np.abs(np.expm1(mine)) <= TOLERANCE)),
                     int(np.sum(np.abs(np.expm1(held)) <= TOLERANCE)), held)
    _apply(best)
    return out


def _save(path):
    import json

    values = [{"module": mod.__name__, "name": name, "key": key, "value": _get(mod, name, key)}
              for mod, name, key, *_ in SPEED]
    values += [{"module": E.__name__, "name": "GEMM_EFFICIENCY", "key": k, "value": v}
               for k, v in E.GEMM_EFFICIENCY.items()]
    values.append({"module": E.__name__, "name": "STEP_TIME_CV", "key": None, "value": E.STEP_TIME_CV})
    with open(path, "w") as f:
        json.dump(values, f, indent=1)


if __name__ == "__main__":
    import argparse

    from aisize.training import kernel_gemms

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemm-source", choices=kernel_gemms.GEMM_SOURCES, default=kernel_gemms.DEFAULT_GEMM_SOURCE)
    ap.add_argument("--cross-validate", action="store_true")
    ap.add_argument("--save", metavar="FILE")
    args = ap.parse_args()
    kernel_gemms.DEFAULT_GEMM_SOURCE = args.gemm_source
    print(f"GEMMs: {args.gemm_source}")
    rows = cases()
    grid = np.linspace(0.0, 0.05, 51)
    cv = grid[int(np.argmin([jitter_loss(c, rows) for c in grid]))]
    jitter_loss(cv, rows)
    print(f"STEP_TIME_CV = {cv:.3f} (8 vs 128 GPU pairs {SCALE_PAIRS})")
    x, loss = fit_speed(rows)
    print(f"speed: soft-L1 loss {loss:.4f} over {len(rows)} rows")
    for (mod, name, key, *_), v in zip(SPEED, x):
        print(f"  {mod.__name__.split('.')[-1]}.{name}{'' if key is None else f'[{key!r}]'} = {v:.4g}")
    err = log_errors(rows)
    for (label, *_), e in zip(rows, err):
        print(f"  {label:4s} {100 * (np.exp(e) - 1):+6.1f}%")
    within = np.mean(np.abs(np.exp(err) - 1) <= 0.15)
    print(f"within 15 %: {within:.0%}; median |err| {100 * np.median(np.abs(np.exp(err) - 1)):.1f}%")
    if args.save:
        _save(args.save)
    if args.cross_validate:
        cv = cross_validate(rows, x)
        print(f"leave-one-model-out ({CV_ITERS} LM iterations per refit), rows within 15 %:")
        print(f"  {'model':18s} rows in-sample held-out  held-out median |err|")
        for name, (n, ins, held, e) in cv.items():
            print(f"  {name:18s} {n:4d} {ins:9d} {held:8d}  {100 * np.median(np.abs(np.expm1(e))):6.1f}%")
        n_all = sum(v[0] for v in cv.values())
        all_held = np.concatenate([v[3] for v in cv.values()])
        print(f"  {'all':18s} {n_all:4d} {sum(v[1] for v in cv.values()):9d} {sum(v[2] for v in cv.values()):8d}  "
              f"{100 * np.median(np.abs(np.expm1(all_held))):6.1f}%")
    m0 = [M.ALLOCATOR_FRAGMENTATION_SHARE[k] for _, k in MEMORY]
    xm, lm = nelder_mead(lambda v: memory_loss(v, rows), m0, step=0.03, iters=100)
    print(f"memory: sum of squared log errors {lm:.4f}")
    for (name, key), v in zip(MEMORY, xm):
        print(f"  {name}[{key}] = {v:.3f}")
