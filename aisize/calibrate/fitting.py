"""Refit the serving calibration on measured runs: robust least squares on log errors.

The constants of :mod:`aisize.serving.calibration` that the runs can identify are chosen by
least squares (SciPy's trust-region reflective solver, soft-L1 loss [1]) on the log of
predicted / measured output tokens/s per GPU and, where measured, mean TPOT, through the
public entry points (:func:`aisize.calibrate.runs.predict`). A constant per GPU generation
is fitted only for generations the runs cover, the expert constants only when MoE models run,
the Grace host factor only on Grace-hosted GPUs; every fitted constant is also held near its
starting value by a weak prior (a residual of ``PRIOR_WEIGHT x log(value / start)``), so one
that the runs barely inform stays where it was instead of wandering. A speculative-decoding run
that does not state its acceptance length calibrates nothing (its acceptance depends on its
prompts, and a fit would load a shortfall onto engine constants). The request's fixed time
outside the GPU (``request_seconds``) is set apart, from TTFT alone: the median gap between
measured TTFT and the model's GPU-side TTFT on runs at low concurrency, where no queue hides it.

References
----------
.. [1] Branch, Coleman, Li 1999, "A Subspace, Interior, and Conjugate Gradient Method for
       Large-Scale Bound-Constrained Minimization Problems", SIAM J. Sci. Comput. 21(1)
       (``scipy.optimize.least_squares``, method "trf", loss "soft_l1").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from aisize import models
from aisize.calibrate.runs import Prediction, Run, figures, predict, score
from aisize.serving.hardware import GRACE_HOSTED, generation

PRIOR_WEIGHT = 0.05  # log-ratio residual per constant: a tenth of a typical row's weight at 10 % error
F_SCALE = 0.1  # soft-L1: errors beyond ~10 % count less than quadratically (published runs have outliers)
LOW_CONCURRENCY = 8  # request_seconds from runs at or below this concurrency per replica
# name -> (low, high, scale): bounds of a fitted value and its typical size (for the solver's steps)
BOUNDS = {
    "gemm_efficiency": (0.1, 1.0, 1.0), "memory_efficiency": (0.5, 0.95, 1.0),
    "expert_memory_efficiency": (0.5, 0.95, 1.0), "expert_gemm_efficiency": (0.1, 1.0, 1.0),
    "elementwise_bytes_per_token": (0.0, 300.0, 100.0), "expert_bytes_per_token": (0.0, 300.0, 100.0),
    "layer_seconds": (0.0, 5e-4, 1e-4), "moe_layer_seconds": (0.0, 1e-3, 1e-4),
    "host_seconds_per_sequence": (0.0, 2e-4, 1e-5), "grace_host_factor": (0.5, 5.0, 1.0),
    "draft_step_seconds": (0.0, 5e-3, 1e-4),
}
PER_GENERATION = ("gemm_efficiency", "memory_efficiency", "moe_layer_seconds")
MOE_ONLY = ("expert_memory_efficiency", "expert_gemm_efficiency", "expert_bytes_per_token", "moe_layer_seconds")
# Fitted only where an MoE run measured its TPOT (per generation for the per-generation one): a decode step's
# expert weight reads and fixed MoE-layer time are a large share of it, a flat-out step's a few percent, so
# flat-out runs alone would move them far to absorb other errors (docs/calibration.md, 2026-12-05: without
# DeepSeek-R1 a refit took moe_layer_seconds[hopper] from 63 to 431 us for Llama 4 Scout's H100 runs).
DECODE_IDENTIFIED = ("expert_memory_efficiency", "moe_layer_seconds")


@dataclass(frozen=True)
class FitResult:
    """A fitted calibration and every run's error before and after."""

    calibration: object
    constants: tuple  # (name, generation or None) of the fitted constants
    before: tuple  # Prediction per expressible run, at the starting calibration
    after: tuple  # the same runs at the fitted calibration
    skipped: tuple  # (Run, reason) of runs that cannot be expressed
    evaluations: int


def fitted_constants(runs, base) -> list[tuple[str, str | None]]:
    """The constants ``runs`` can identify: per-generation ones for the generations they cover (a GEMM
    efficiency only where a run is flat out or its prompts outweigh its outputs, so that GEMMs bound it),
    MoE ones when an MoE model runs (those of :data:`DECODE_IDENTIFIED` only where an MoE run measured its
    TPOT, on that generation for the MoE-layer time), the Grace factor on Grace-hosted GPUs, the draft
    pass's fixed time when a run drafts."""
    gens = sorted({generation(r.accelerator) or base.fallback_generation for r in runs})
    gemm_gens = sorted({generation(r.accelerator) or base.fallback_generation for r in runs
                        if (r.concurrency is None and r.requests_per_s is None) or r.input_tokens > r.output_tokens})
    moe = any(models.resolve(r.model).experts > 1 for r in runs)
    moe_tpot_gens = sorted({generation(r.accelerator) or base.fallback_generation for r in runs
                            if r.measured_tpot_s and models.resolve(r.model).experts > 1})
    grace = any(r.accelerator.startswith(GRACE_HOSTED) for r in runs)
    drafts = any(r.speculative_method in ("mtp", "eagle3", "draft") and r.acceptance_length for r in runs)
    out = []
    for name in BOUNDS:
        if (name in MOE_ONLY and not moe or name == "grace_host_factor" and not grace
                or name == "draft_step_seconds" and not drafts or name in DECODE_IDENTIFIED and not moe_tpot_gens):
            continue
        if name in PER_GENERATION:
            own = {"gemm_efficiency": gemm_gens, "moe_layer_seconds": moe_tpot_gens}.get(name, gens)
            out += [(name, g) for g in own]
        else:
            out.append((name, None))
    return out


def _value(cal, name, gen):
    return cal.value(name, gen) if gen else _scalar(getattr(cal, name), cal)


def _scalar(v, cal):
    return v[cal.fallback_generation] if isinstance(v, MappingProxyType) else v


def _with(base, constants, x):
    changes = {}
    for (name, gen), v in zip(constants, x):
        if gen is None:
            changes[name] = float(v)
            continue
        cur = changes.get(name, getattr(base, name))
        d = dict(cur) if isinstance(cur, (dict, MappingProxyType)) else {base.fallback_generation: cur}
        d[gen] = float(v)
        changes[name] = d
    return base.with_(**changes)


def _predict_all(runs, cal):
    return _Model(runs).predictions(cal)


def _deployment(run: Run) -> str:
    """What a run's figures depend on: the run less what was measured and what names it."""
    return repr(replace(run, label="", source="", id="", run_date="", expected_status="", notes=(),
                        measured_tokens_per_s_per_gpu=1.0, measured_tpot_s=None, measured_ttft_s=None))


class _Model:
    """The model's figures for runs, each deployment once per calibration: runs that differ only in what was
    measured share them, and a finite-difference step in one GPU generation's constant re-models only the runs
    that read it (a run reads its own generation's value, else the fallback's). The figures are the same as
    predicting every run; the fit's cost drops with repeated deployments and with generations."""

    def __init__(self, runs, constants=(), base=None):
        self.runs, self.keys = runs, [_deployment(r) for r in runs]
        fallback = base.fallback_generation if base is not None else None
        self.uses = [tuple(j for j, (_, g) in enumerate(constants)
                           if g in (None, generation(r.accelerator) or fallback, fallback)) for r in runs]
        self.cache: dict = {}  # (deployment, the fitted values it reads) -> figures or why not expressible
        self.capacity = (len(constants) + 2) * len(set(self.keys))  # a point and its Jacobian's steps

    def predictions(self, cal, x=None) -> tuple[list, list]:
        """(Prediction, ...) of the expressible runs and ((run, reason), ...) of the others at ``cal``, which
        holds the fitted values ``x`` (None: a calibration outside the fit, cached for this call only)."""
        store, values = (self.cache, x.tolist()) if x is not None else ({}, None)
        out, skipped = [], []
        for r, key, uses in zip(self.runs, self.keys, self.uses):
            full = (key, tuple(values[j] for j in uses)) if values is not None else key
            got = store.pop(full, None)
            if got is None:
                try:
                    got = figures(r, cal)
                except ValueError as e:
                    got = str(e)[:200]
            store[full] = got  # last used last: the oldest go first below
            if isinstance(got, str):
                skipped.append((r, got))
            else:
                out.append(score(r, got))
        while len(self.cache) > self.capacity:
            del self.cache[next(iter(self.cache))]
        return out, skipped


def _residuals(preds: list[Prediction]) -> list[float]:
    res = []
    for p in preds:
        res.append(math.log(max(p.tokens_per_s_per_gpu, 1e-12) / p.run.measured_tokens_per_s_per_gpu))
        if p.tpot_error is not None:
            res.append(math.log(max(1.0 + p.tpot_error, 1e-12)))
    return res


def request_seconds(runs, cal) -> float | None:
    """The median gap between measured and modelled TTFT at low concurrency (None without TTFTs) [s]."""
    probe = cal.with_(request_seconds=0.0)
    gaps = []
    for r in runs:
        replicas = max(r.gpus // r.tensor_parallel, 1) if r.kind == "aggregated" else 1
        if r.measured_ttft_s and r.concurrency is not None and r.concurrency / replicas <= LOW_CONCURRENCY:
            try:
                p = predict(r, probe)
            except ValueError:
                continue
            if p.ttft_s is not None and math.isfinite(p.ttft_s):
                gaps.append(r.measured_ttft_s - p.ttft_s)
    return max(float(np.median(gaps)), 0.0) if gaps else None


def fit(runs: list[Run], base=None, *, constants=None, max_evaluations: int = 400, name: str | None = None,
        fitted_on: tuple = (), progress=None) -> FitResult:
    """Fit the calibration constants on ``runs``, starting from ``base`` (the default calibration).

    Parameters
    ----------
    runs : measured runs (:func:`aisize.calibrate.read_runs`); at least one must be expressible
    base : the starting :class:`~aisize.serving.Calibration` (None: the default)
    constants : (name, generation or None) pairs to fit; None: :func:`fitted_constants`
    max_evaluations : the solver's budget of residual evaluations
    name : the fitted calibration's name; fitted_on : names of the sets it was fitted on
    progress : called with the count of model evaluations after each (every run modelled once)
    """
    from scipy.optimize import least_squares

    from aisize.serving.calibration import CALIBRATION

    base = CALIBRATION if base is None else base
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: give at least one measured run")
    unknown_acceptance = [r for r in runs if r.speculative_method and not r.acceptance_length]
    runs = [r for r in runs if not (r.speculative_method and not r.acceptance_length)]
    before, skipped = _predict_all(runs, base) if runs else ([], [])
    skipped += [(r, "speculative run without its measured acceptance length: acceptance depends on the prompts, "
                    "not on the hardware, so the run calibrates nothing") for r in unknown_acceptance]
    if not before:
        raise ValueError(f"none of the runs can calibrate: {skipped[0][1] if skipped else 'no runs'}")
    usable = [p.run for p in before]
    constants = list(constants) if constants is not None else fitted_constants(usable, base)
    unknown = [c for c, _ in constants if c not in BOUNDS]
    if unknown:
        raise ValueError(f"constants {unknown!r} cannot be fitted; allowed: {', '.join(BOUNDS)}")
    scale = np.array([BOUNDS[c][2] for c, _ in constants])
    lo = np.array([BOUNDS[c][0] for c, _ in constants]) / scale
    hi = np.array([BOUNDS[c][1] for c, _ in constants]) / scale
    x0 = np.clip(np.array([_value(base, c, g) for c, g in constants]) / scale, lo + 1e-9, hi - 1e-9)
    start = np.maximum(x0, 1e-6)
    count = [0]
    model = _Model(usable, constants, base)

    def residuals(x):
        count[0] += 1
        preds, _ = model.predictions(_with(base, constants, x * scale), x)
        if progress is not None:
            progress(count[0])
        prior = PRIOR_WEIGHT * np.log(np.maximum(x, 1e-6) / start)
        return np.concatenate([np.array(_residuals(preds)), prior])

    res = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=F_SCALE, diff_step=1e-3,
                        x_scale="jac", max_nfev=max_evaluations)
    cal = _with(base, constants, res.x * scale)
    req = request_seconds(usable, cal)
    labels = tuple(f"{c}[{g}]" if g else c for c, g in constants) + (("request_seconds",) if req is not None else ())
    cal = cal.with_(request_seconds=req if req is not None else cal.request_seconds,
                    fitted=tuple(dict.fromkeys(base.fitted + labels)) if name is None else labels,
                    assumed=tuple(a for a in base.assumed if a not in labels),
                    **({"name": name} if name else {}), **({"fitted_on": tuple(fitted_on)} if fitted_on else {}))
    after, _ = _predict_all(usable, cal)
    return FitResult(cal, tuple(constants), tuple(before), tuple(after), tuple(skipped), count[0])


def summary(preds, tolerance: float = 0.15) -> dict:
    """Runs, runs within the tolerance on tokens/s per GPU and on TPOT, and the median |errors|."""
    e = np.abs([p.error for p in preds]) if preds else np.array([])
    t = np.abs([p.tpot_error for p in preds if p.tpot_error is not None])
    return {"runs": len(preds), "within": int(np.sum(e <= tolerance)),
            "median_abs_error": float(np.median(e)) if len(e) else float("nan"),
            "tpot_runs": len(t), "tpot_within": int(np.sum(t <= tolerance)),
            "tpot_median_abs_error": float(np.median(t)) if len(t) else float("nan")}

