"""Refit the training calibration on published training runs: what ``benchmarks/fit_training.py`` runs.

Rows are ``(label, model, accelerator, estimate keywords, published tokens/s per GPU, published peak GiB or
None)``, each estimated through the public :func:`aisize.training.estimate` under the calibration being
tried (``calibration=``), so the fit and every user of the result read the same step model.

1. ``step_time_cv`` first, on pairs of rows with the same per-GPU work on few and many GPUs
   (``scale_pairs``; torchtitan's 8 vs 128 GPU runs are the only public rows that isolate it).
2. Then every speed constant of :data:`SPEED` at once: Levenberg-Marquardt on the log error of tokens/s per
   GPU with a soft-L1 loss (scale :data:`LOSS_SCALE`), so a few rows whose recipe does not match the
   published run cannot pull every constant. A constant only moves the rows of its regime (a Blackwell
   efficiency only Blackwell rows, an MoE constant only MoE rows). :data:`TIED` keys follow others.
3. Then the allocator fragmentation shares on the rows that state a peak memory (Nelder-Mead).

References
----------
.. [1] Marquardt 1963, "An Algorithm for Least-Squares Estimation of Nonlinear Parameters", SIAM J. 11(2).
.. [2] Nelder & Mead 1965, "A Simplex Method for Function Minimization", Computer Journal 7(4).
"""

from __future__ import annotations

import numpy as np

from aisize.training import estimate
from aisize.training.calibration import CALIBRATION, TrainingCalibration

# (constant, key, lower bound, upper bound): the speed constants the public rows identify
SPEED = (("gemm_efficiency", "ampere:16", 0.2, 1.0), ("gemm_efficiency", "hopper:16", 0.2, 1.0),
         ("gemm_efficiency", "hopper:8", 0.2, 1.0), ("gemm_efficiency", "blackwell:8", 0.2, 1.0),
         ("attention_efficiency", "ampere:fa2", 0.05, 1.0), ("attention_efficiency", "hopper:fa2", 0.05, 1.0),
         ("attention_efficiency", "hopper:fa3", 0.05, 1.0), ("attention_efficiency", "blackwell:fa3", 0.05, 1.0),
         ("hbm_efficiency", None, 0.55, 0.95), ("grouped_gemm_half_tokens", None, 1.0, 1e5),
         ("moe_sync_host_seconds", "alltoall", 1e-5, 0.1), ("moe_sync_host_seconds", "flex", 1e-5, 0.1),
         ("cuda_graph_host_share", None, 0.0, 1.0))
# keys no row identifies apart, (follower, leader): Volta as Ampere, Blackwell fp4 as fp8
TIED = ((("gemm_efficiency", "volta:16"), ("gemm_efficiency", "ampere:16")),
        (("attention_efficiency", "volta:fa2"), ("attention_efficiency", "ampere:fa2")),
        (("gemm_efficiency", "blackwell:4"), ("gemm_efficiency", "blackwell:8")))
LOSS_SCALE = 0.10  # soft-L1 scale of the log error: rows beyond ~10 % count linearly, not squared
CV_GRID = np.linspace(0.0, 0.05, 51)


def value(cal: TrainingCalibration, name: str, key):
    return getattr(cal, name) if key is None else getattr(cal, name)[key]


def with_values(cal: TrainingCalibration, x) -> TrainingCalibration:
    """``cal`` with the :data:`SPEED` constants set to ``x`` (clipped to their bounds) and the tied keys
    following; Blackwell's 16-bit GEMMs (only MoE rows run them) follow its fp8 at Hopper's 16/8-bit ratio."""
    changes: dict = {}
    for (name, key, lo, hi), v in zip(SPEED, x):
        v = float(min(max(v, lo), hi))
        if key is None:
            changes[name] = v
        else:
            changes.setdefault(name, {})[key] = v
    cal = cal.with_(**changes)
    for (name, key), (lead, lead_key) in TIED:
        cal = cal.with_(**{name: {key: value(cal, lead, lead_key)}})
    g = cal.gemm_efficiency
    return cal.with_(gemm_efficiency={"blackwell:16": g["blackwell:8"] * g["hopper:16"] / g["hopper:8"]})


def log_errors(rows, cal: TrainingCalibration) -> np.ndarray:
    """log(estimated / published tokens/s per GPU) of each row under ``cal``."""
    return np.array([np.log(estimate(m, g, calibration=cal, **kw).tokens_per_s_per_gpu / pub)
                     for _, m, g, kw, pub, _ in rows])


def _robust(e):
    """Soft-L1 residuals: r² = 2 c² (sqrt(1 + (e/c)²) - 1)."""
    c = LOSS_SCALE
    return np.sign(e) * c * np.sqrt(2.0 * (np.sqrt(1.0 + (e / c) ** 2) - 1.0))


def fit_speed(rows, cal: TrainingCalibration, iters: int = 30) -> tuple[TrainingCalibration, float]:
    """Levenberg-Marquardt [1] on :data:`SPEED` (log-scaled where a bound spans decades): (fitted, loss)."""
    logs = np.array([lo > 0 and hi / lo > 100 for *_, lo, hi in SPEED])
    to_x = lambda v: np.where(logs, np.log(np.maximum(v, 1e-12)), v)  # noqa: E731
    from_x = lambda x: np.where(logs, np.exp(x), x)  # noqa: E731
    x = to_x(np.array([value(cal, name, key) for name, key, *_ in SPEED], dtype=float))

    def residuals(xx):
        return _robust(log_errors(rows, with_values(cal, from_x(xx))))

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
    return with_values(cal, from_x(x)), float(r @ r)


def fit_jitter(rows, cal: TrainingCalibration, scale_pairs) -> TrainingCalibration:
    """``step_time_cv`` on the grid :data:`CV_GRID` that best fits the published speed ratio of each pair of
    row labels (same per-GPU work on few and on many GPUs)."""
    by = {label: (m, g, kw, pub) for label, m, g, kw, pub, _ in rows}

    def loss(cv):
        c = cal.with_(step_time_cv=float(cv))
        err = []
        for small, big in scale_pairs:
            (m, g, kw, p_small), (_, _, kw_big, p_big) = by[small], by[big]
            pred = (estimate(m, g, calibration=c, **kw_big).tokens_per_s_per_gpu
                    / estimate(m, g, calibration=c, **kw).tokens_per_s_per_gpu)
            err.append(np.log(pred / (p_big / p_small)))
        return float(np.sum(np.square(err)))

    return cal.with_(step_time_cv=float(CV_GRID[int(np.argmin([loss(c) for c in CV_GRID]))]))


def nelder_mead(f, x0, step=0.05, iters=300):
    """Minimise f from x0 (Nelder & Mead 1965 [2], standard coefficients): (best point, its value)."""
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


def fit_memory(rows, cal: TrainingCalibration, iters: int = 100) -> tuple[TrainingCalibration, float]:
    """``allocator_fragmentation_share`` (eager, compiled) on the rows with a published peak [GiB]."""
    keys = ("eager", "compiled")

    def loss(x):
        if not all(0.0 <= v < 1.0 for v in x):
            return 1e9
        c = cal.with_(allocator_fragmentation_share=dict(zip(keys, map(float, x))))
        return float(np.sum(np.square([np.log(estimate(m, g, calibration=c, **kw).peak_memory_bytes / 2**30 / peak)
                                       for _, m, g, kw, _, peak in rows if peak])))

    x, v = nelder_mead(loss, [cal.allocator_fragmentation_share[k] for k in keys], step=0.03, iters=iters)
    return cal.with_(allocator_fragmentation_share=dict(zip(keys, map(float, x)))), v


def refit(rows, base: TrainingCalibration = CALIBRATION, *, scale_pairs=(), iters: int = 30, name=None,
          fitted_on=()) -> TrainingCalibration:
    """The training calibration refitted on ``rows`` from ``base`` (jitter, speed, then memory; see the module
    docstring); ``scale_pairs`` empty keeps the base's jitter."""
    cal = fit_jitter(rows, base, scale_pairs) if scale_pairs else base
    cal, _ = fit_speed(rows, cal, iters)
    if any(r[5] for r in rows):
        cal, _ = fit_memory(rows, cal)
    return cal.with_(name=name or f"{base.name} refitted on {len(rows)} runs",
                     fitted_on=tuple(fitted_on) or base.fitted_on)
