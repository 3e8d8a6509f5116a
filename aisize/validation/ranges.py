"""Ranges instead of false precision: low / expected / high from published efficiencies.

Time-to-train depends on an MFU nobody knows before the run. Rather than one
number at an assumed MFU, aisize reports the spread of MFUs real runs of a
similar scale achieved (``data/validation/mfu_observations.csv``).

Rule (:func:`mfu_range`): take the observed runs whose GPU count lies within a
factor of :data:`SCALE_FACTOR` (10) of the planned count; if fewer than
:data:`MIN_CASES` (3) qualify, or no count is given, take all runs. Low, expected
and high are the minimum, median and maximum of their MFUs. Time scales as 1/MFU,
so the high MFU gives the short time (:func:`time_range`).

Storage efficiency: no range. ``reference/storage_points.csv`` holds MLPerf
Storage *configuration* parameters (batch, record size, emulated compute time)
and rules, not measured results of storage systems, so there is no observed
spread of delivered-vs-rated bandwidth to draw one from. Storage demand itself
is formula-exact (see the storage cases).

References
----------
.. [1] the ``source`` column of each observation (PaLM Table 3, Korthikanti et al.
   2022, Llama 3 Table 4, OPT, BLOOM, Megatron-LM, Pythia).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from aisize import checks

SCALE_FACTOR = 10.0  # "similar scale": GPU count within 10x either way
MIN_CASES = 3  # fewer similar runs than this: use all runs
OBS_COLUMNS = ("run", "accelerator", "gpus", "mfu_pct", "basis", "source")


@dataclass(frozen=True)
class MfuRange:
    """MFU low / expected / high [ratio] and the runs they come from."""

    low: float
    expected: float
    high: float
    cases: tuple[str, ...]
    rule: str


def observations_path() -> Path:
    from aisize.validation.cases import validation_dir

    return validation_dir() / "mfu_observations.csv"


@lru_cache(maxsize=4)
def _load(path: str) -> pd.DataFrame:
    frame = pd.read_csv(path)
    missing = [c for c in OBS_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    for col in ("gpus", "mfu_pct"):
        values = pd.to_numeric(frame[col], errors="coerce")
        if values.isna().any():
            bad = frame.loc[values.isna(), col].iloc[0]
            raise ValueError(f"{path}: column {col!r}: {bad!r} is not a number")
        frame[col] = values
    checks.positive("gpus", frame["gpus"].to_numpy())
    checks.number("mfu_pct", frame["mfu_pct"].to_numpy(), low=0, high=100, low_inclusive=False)
    return frame


def mfu_observations(path: str | Path | None = None) -> pd.DataFrame:
    """Published MFUs of real runs: run, accelerator, gpus, mfu_pct, basis, source, ..."""
    return _load(str(path or observations_path())).copy()


def mfu_range(gpus=None, *, path: str | Path | None = None) -> MfuRange:
    """Low / expected / high MFU from published runs of a similar scale.

    Parameters
    ----------
    gpus : planned GPU count [count]; None: all runs
    path : an observations CSV (default ``data/validation/mfu_observations.csv``)

    Returns
    -------
    :class:`MfuRange`: min, median and max MFU [ratio] of the runs within
    :data:`SCALE_FACTOR` x of ``gpus`` (all runs when fewer than :data:`MIN_CASES`).

    References
    ----------
    .. [1] see the module docstring; each observation carries its source.
    """
    obs = mfu_observations(path)
    rule = "all published runs"
    if gpus is not None:
        g = float(checks.integer("gpus", gpus, high=10**8))
        near = obs[(obs["gpus"] >= g / SCALE_FACTOR) & (obs["gpus"] <= g * SCALE_FACTOR)]
        if len(near) >= MIN_CASES:
            obs = near
            # GPU counts are whole: the bounds as the runs kept can have them (8 GPUs: 1-80, not 0.8-80)
            low, high = int(np.ceil(g / SCALE_FACTOR)), int(np.floor(g * SCALE_FACTOR))
            rule = f"runs on {low:,}-{high:,} GPUs (within {SCALE_FACTOR:g}x of {g:,.0f})"
        else:
            rule = (f"all published runs (only {len(near)} within {SCALE_FACTOR:g}x of {g:g} GPUs; "
                    f"{MIN_CASES} needed)")
    mfu = obs["mfu_pct"].to_numpy() / 100.0
    return MfuRange(float(mfu.min()), float(np.median(mfu)), float(mfu.max()), tuple(obs["run"]), rule)


def time_range(seconds_at_expected_mfu, mfu_range: MfuRange):
    """Wall time (low, expected, high) [s] from the time at the expected MFU.

    Time is inversely proportional to MFU (``aisize.compute.training_seconds``):
    the high MFU gives the low time.

    Parameters
    ----------
    seconds_at_expected_mfu : time computed at ``mfu_range.expected`` [s]
    mfu_range : from :func:`mfu_range`

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, appendix B (time = FLOPs / (chips x peak x MFU)).
    """
    t = checks.non_negative("seconds_at_expected_mfu", seconds_at_expected_mfu)
    r = mfu_range
    for name in ("low", "expected", "high"):
        checks.fraction(f"mfu_range.{name}", getattr(r, name))
    return t * r.expected / r.high, t, t * r.expected / r.low


def mfu_range_table(gpus_list) -> pd.DataFrame:
    """:func:`mfu_range` for several planned GPU counts: gpus, low, expected, high [ratio], runs, rule."""
    rows = []
    for g in gpus_list:
        r = mfu_range(g)
        rows.append({"gpus": g, "low": r.low, "expected": r.expected, "high": r.high, "runs": len(r.cases),
                     "rule": r.rule})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class StepTimeSpread:
    """How far the step-time model's time has landed from published runs: measured time / predicted time."""

    low: float  # 10th percentile: the run took this share of the predicted time (the model was slow)
    high: float  # 90th percentile
    rows: int  # published runs behind the percentiles
    basis: str


# 10th and 90th percentiles of measured / predicted time over every published run the training estimate is
# checked on: torchtitan (19) and NeMo / Megatron-Bridge (44) tokens/s per GPU, whose constants were fitted on
# them, and MLPerf Training v5.0/v5.1 closed (147) time to train, which nothing was fitted on.
# tests/test_training_range.py recomputes them from the three sets and fails when they move.
STEP_TIME_SPREAD = StepTimeSpread(
    low=0.86, high=1.13, rows=210,
    basis="the step-time model's own error on 210 published runs (torchtitan, NeMo/Megatron-Bridge, MLPerf "
          "Training v5.0/v5.1): 80 % of them took 0.86x to 1.13x the time it predicted")


def step_time_range(seconds) -> tuple[float, float]:
    """(low, high) wall time [s] around the step-time model's ``seconds``: the 80 % band of its error on published
    runs (:data:`STEP_TIME_SPREAD`)."""
    t = checks.non_negative("seconds", seconds)
    return t * STEP_TIME_SPREAD.low, t * STEP_TIME_SPREAD.high
