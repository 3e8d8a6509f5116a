"""Published vs predicted for every validation case, and the error per family.

:func:`validate` runs each case of ``data/validation/cases.csv`` through the
engine and returns one row per case: the published value and aisize's
prediction in the published unit, the signed error in %, the case's tolerance
and status. Cases that need an input the source does not give (an MFU) have no
prediction and no error: their status is ``needs input`` and ``implied`` says
what the published figure implies. :func:`summary` gives, per family, the number
of cases and the median and maximum absolute error of those with a prediction.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from aisize import checks
from aisize.validation.cases import FAMILIES, load_cases, unit_factor
from aisize.validation.predict import predict
from aisize.validation.ranges import mfu_range

RESULT_COLUMNS = ("case", "family", "kind", "published", "predicted", "unit", "error_pct", "tolerance_pct",
                  "within_tolerance", "status", "expected_status", "implied", "implied_mfu", "assumptions",
                  "tolerance_basis", "description", "source")
SUMMARY_COLUMNS = ("family", "cases", "compared", "ok", "rough", "outside", "needs_input", "median_abs_error_pct",
                   "max_abs_error_pct")
# The widest error a verdict calls "ok": a case whose stated tolerance is wider (a time-to-train check at 60 %,
# accepting any goodput from 0.4 to 1) and whose error is beyond this is "within the 60 % band of a rough check".
OK_PCT = 15.0


def verdict(error_pct: float, tolerance_pct: float, status: str) -> str:
    """What a reader is told of one case: "ok" (|error| within its tolerance and within :data:`OK_PCT`),
    "within the 60 % band of a rough check" (within a tolerance wider than :data:`OK_PCT` but beyond it),
    "outside" (beyond its tolerance) or "needs input" (no prediction)."""
    if status == "needs input" or error_pct is None or math.isnan(error_pct):
        return status
    error = abs(float(error_pct))
    if error > tolerance_pct:
        return "outside"
    if error <= OK_PCT:
        return "ok"
    return f"within the {tolerance_pct:g} % band of a rough check"


def _row(case: dict, highest_mfu: float) -> dict:
    factor = unit_factor(case["unit"])
    published = case["published"]
    p = predict(case["kind"], case["inputs"], published * factor)
    implied = p.implied
    if p.implied_mfu > highest_mfu:  # no published run got there: suspect the FLOP count or the figure
        implied += f", above every published MFU ({highest_mfu:.1%})"
    predicted = p.value / factor
    if math.isnan(predicted):
        error, within, status = math.nan, pd.NA, "needs input"
    else:
        error = (predicted - published) / published * 100.0
        within = abs(error) <= case["tolerance_pct"]
        status = "ok" if within else "outside"
    return {"case": case["id"], "family": case["family"], "kind": case["kind"], "published": published,
            "predicted": predicted, "unit": case["unit"], "error_pct": error,
            "tolerance_pct": case["tolerance_pct"], "within_tolerance": within, "status": status,
            "expected_status": case["expected_status"], "implied": implied, "implied_mfu": p.implied_mfu,
            "assumptions": p.assumptions, "tolerance_basis": case["tolerance_basis"],
            "description": case["description"], "source": case["source"]}


def validate(family: str | None = None, *, path: str | Path | None = None) -> pd.DataFrame:
    """Every validation case: published, predicted, error and status.

    Parameters
    ----------
    family : memory | flops-time | storage | throughput | training | serving | serving-load |
        serving-specdec | serving-disagg; None or "" for all
    path : a cases CSV (default ``data/validation/cases.csv``, with the training and serving
        families' tables beside it: :mod:`aisize.validation.training`, :mod:`aisize.validation.serving`);
        a given path holds its cases only

    Returns
    -------
    DataFrame with columns case, family, kind, published, predicted, unit (as
    published), error_pct ((predicted - published) / published x 100),
    tolerance_pct, within_tolerance, status (ok | outside | needs input: against the case's own
    tolerance), expected_status, implied, implied_mfu [ratio], assumptions, tolerance_basis,
    description, source, verdict (:func:`verdict`: "ok" only within :data:`OK_PCT` as well).

    References
    ----------
    .. [1] each case's ``source``; the engine functions it calls.
    """
    if family:
        checks.choice("family", family, FAMILIES)
    cases = load_cases(path)
    if family:
        cases = cases[cases["family"] == family]
    highest = mfu_range().high
    rows = [_row(c, highest) for c in cases.to_dict("records")]
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    if path is None and family in (None, "", "training"):
        from aisize.validation.training import training_results

        frame = pd.concat([frame, training_results()[list(RESULT_COLUMNS)]], ignore_index=True)
    if path is None:
        from aisize.validation.serving import SETS, serving_results

        for fam in SETS:
            if family in (None, "", fam):
                frame = pd.concat([frame, serving_results(fam)[list(RESULT_COLUMNS)]], ignore_index=True)
    frame["within_tolerance"] = frame["within_tolerance"].astype("boolean")
    frame["verdict"] = [verdict(e, t, st) for e, t, st in zip(frame["error_pct"], frame["tolerance_pct"],
                                                             frame["status"])]
    return frame


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per family: cases, compared (with a prediction), ok, rough (within a tolerance wider than
    :data:`OK_PCT` but beyond it), outside, needs input, median and max |error| [%].

    Parameters
    ----------
    df : the result of :func:`validate`
    """
    missing = [c for c in ("family", "error_pct", "status") if c not in df.columns]
    if missing:
        raise ValueError(f"df is not allowed: missing column(s) {', '.join(missing)} (pass validate()'s result)")
    rows = []
    for fam in [f for f in FAMILIES if f in set(df["family"])]:
        part = df[df["family"] == fam]
        err = part["error_pct"].abs().dropna().to_numpy()
        said = (part["verdict"] if "verdict" in part else
                pd.Series([verdict(e, t, st) for e, t, st in zip(part["error_pct"], part.get(
                    "tolerance_pct", pd.Series(math.inf, index=part.index)), part["status"])], index=part.index))
        rows.append({"family": fam, "cases": len(part), "compared": len(err),
                     "ok": int((said == "ok").sum()), "rough": int(said.str.startswith("within the").sum()),
                     "outside": int((part["status"] == "outside").sum()),
                     "needs_input": int((part["status"] == "needs input").sum()),
                     "median_abs_error_pct": float(np.median(err)) if len(err) else math.nan,
                     "max_abs_error_pct": float(err.max()) if len(err) else math.nan})
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


MEASURED = ("a CNN the planner sizes from measured throughputs (data/throughput.csv), this figure among them; "
            "aisize has no kernel model of CNN training, so a prediction here would compare the table with itself")
ENCODER = ("an encoder's masked-LM pre-training (LAMB, gradient accumulation, NVIDIA's 2021 fused kernels): "
           "aisize's step-time model is fitted on decoder-LLM runs and has no measured encoder run to stand on, "
           "so it is not compared")


def left_out(df: pd.DataFrame) -> pd.DataFrame:
    """The cases without a prediction and why each is not compared (columns case, family, reason, why:
    ``reason`` with this case's figures, ``why`` the reason a group of such cases shares).

    A published run's GPU-hours are compared in the training family, on the layout its source states
    (the flops-time case keeps the MFU they imply, which feeds the time-to-train ranges); a CNN's or
    BERT's throughput is a measurement the planner uses as it is; a training-family run says why it
    cannot be expressed.
    """
    training = {c.lower(): c for c in df.loc[df["family"] == "training", "case"]}
    rows = []
    for r in df[df["status"] == "needs input"].to_dict("records"):
        reason = str(r.get("implied") or "")
        why = None
        if r["family"] == "flops-time" and r["case"].endswith("-gpu-hours"):
            run = f"training {r['case'][:-len('-gpu-hours')]} gpu-hours"
            if run in training:
                reason = (f"compared as '{training[run]}' in the training family, on the layout its source "
                          f"states; this case keeps the {reason.replace('implied ', 'implied ', 1)}, "
                          "which sets the time-to-train ranges")
                why = ("compared in the training family, on the layouts their sources state; these cases keep "
                       "the MFU their GPU-hours imply, which sets the time-to-train ranges")
        elif r["family"] == "throughput" and r["case"].startswith("bert"):
            reason, why = f"{r['description'].split(',')[0]}: {ENCODER}; {reason}", ENCODER
        elif r["family"] == "throughput":
            reason, why = f"{r['description'].split(',')[0]}: {MEASURED}; {reason}", MEASURED
        elif "not expressible: " in reason:
            reason = reason.split("not expressible: ", 1)[1]
        rows.append({"case": r["case"], "family": r["family"], "reason": reason, "why": why or reason})
    return pd.DataFrame(rows, columns=["case", "family", "reason", "why"])


def error_chart(df: pd.DataFrame):
    """Altair bar chart of the signed error per case [%]: :func:`aisize.charts.validation_errors` (one chart for
    the app, the reports and this API)."""
    from aisize.charts.validation import validation_errors

    return validation_errors(df)
