"""Accuracy appendix: aisize against published figures, per family, and the runs behind MFU ranges."""

from __future__ import annotations

import math

import pandas as pd

from aisize import charts
from aisize.report.context import ReportContext
from aisize.format import points
from aisize.report.markup import DASH, Html, block, count, esc, figure, note, pct, sig, table
from aisize.report.training_sections import time_range_days
from aisize.validation import left_out, mfu_observations, summary, validate
from aisize.validation.report import OK_PCT
from aisize.validation.serving import (SETS, TOLERANCE_PCT, TTFT_READING_RATIO, family_summary, family_table, misses,
                                       latest_runs, repeat_read_misses, serving_summary, superseded_misses,
                                       ttft_read_misses)

# `aisize validate` counts three verdicts apart (aisize.validation.report.verdict); the report and the app's
# Accuracy tab head them with these words, so "ok" is never read as merely "within tolerance"
VERDICT_HEADERS = {"ok": f"ok (within {OK_PCT:g} % and the case's tolerance)",
                   "rough": "rough (within a wide tolerance only)", "outside": "outside its tolerance"}

FAMILY_TEXT = {"memory": "GPU memory (weights, optimizer states, activations)",
               "flops-time": "Training FLOPs, GPU-hours and time",
               "storage": "Storage demand and checkpoints",
               "throughput": "Throughput (needs a measured efficiency)",
               "training": "Training step time, peak memory and MFU (torchtitan runs, NVIDIA's Megatron-Core "
                           "runs, published large runs)",
               "serving": "Serving throughput (TensorRT-LLM max-throughput runs; the calibration's fit)",
               "serving-load": "Serving at a fixed concurrency (InferenceX, GPUStack closed-loop runs; the fit)",
               "serving-specdec": "Serving with MTP speculative decoding (InferenceX runs)",
               "serving-disagg": "Disaggregated serving as deployed (Dynamo, SGLang PD runs)"}


FAMILY_SHORT = {"serving": "max-throughput runs", "serving-load": "runs at a fixed concurrency",
                "serving-specdec": "runs with MTP", "serving-disagg": "disaggregated runs"}


def _err(value: float) -> str:
    return DASH if value is None or math.isnan(value) else f"{points(value)} %"


def _err_span(errors) -> str:
    """One case's error, or the range of a group's ("-48 to -23 %")."""
    lo, hi = float(errors.min()), float(errors.max())
    return _err(lo) if len(errors) == 1 or lo == hi else f"{points(lo)} to {points(hi)} %"


def _within(s: dict, key: str = "within", runs: str = "cases") -> str:
    return f"{count(s[key])} of {count(s[runs])}" if runs in s else DASH


def left_out_groups(df) -> pd.DataFrame:
    """The cases left out (:func:`aisize.validation.left_out`), one row per reason (columns cases, family, why):
    a lone case's own reason, or the reason its group shares. The report and the app's Accuracy tab show this
    table; the left-out rows' "reason" and "why" read the same for a lone case, so one column is shown."""
    rows = [{"cases": ", ".join(g["case"]), "family": fam, "why": g["reason"].iloc[0] if len(g) == 1 else why}
            for (fam, why), g in left_out(df).groupby(["family", "why"], sort=False)]
    return pd.DataFrame(rows, columns=["cases", "family", "why"])


def calibration_comparison(scenario) -> Html:
    """The serving families with the scenario's selected calibration beside aisize's default (empty
    when the scenario uses the default)."""
    chosen = scenario.policies.serving_calibration
    if chosen is None:
        return Html("")
    rows = []
    for family in SETS:
        d, c = family_summary(family), family_summary(family, chosen.calibration)
        rows.append([FAMILY_TEXT.get(family, family), _within(d), _within(c), _err(d["median_abs_error_pct"]),
                     _err(c["median_abs_error_pct"]), _within(d, "tpot_within", "tpot_cases"),
                     _within(c, "tpot_within", "tpot_cases")])
    t = table(["Family", "Within 15 %, default", "Within 15 %, selected", "Median |error|, default",
               "Median |error|, selected", "TPOT within 15 %, default", "TPOT within 15 %, selected"], rows,
              caption=f"Public serving runs with the scenario's calibration ({chosen.calibration.name}) and "
                      "with aisize's default", css="numeric")
    return block(t, note(f"The scenario selects the serving calibration {chosen.calibration.name} (from "
                         f"{chosen.file}); every serving figure of this plan uses it. The default was fitted on "
                         "these public runs; a calibration fitted on your own runs describes your deployments "
                         "and may score worse on these."))


def accuracy(ctx: ReportContext) -> Html:
    """Per family of published cases: how many, how many ok, rough and outside, median and max error;
    the error of every case; and the published runs that set this plan's time-to-train range."""
    df = validate()
    rows = [[FAMILY_TEXT.get(r["family"], r["family"]), count(r["compared"])] + [count(r[k]) for k in VERDICT_HEADERS]
            + [_err(r["median_abs_error_pct"]), _err(r["max_abs_error_pct"]), count(r["needs_input"])]
            for r in summary(df).to_dict("records")]
    fam = table(["Family", "Cases compared", *VERDICT_HEADERS.values(), "Median |error|", "Max |error|",
                 "Left out (below)"], rows, caption="aisize against published figures", css="numeric")
    serving = df["family"].str.startswith("serving")
    outside = df[(df["status"] == "outside") & ~serving]  # serving runs: the chart below, every run in `aisize validate`
    worst = [[", ".join(g["case"]), fam, _err_span(g["error_pct"]), f"{sig(g['tolerance_pct'].iloc[0])} %",
              Html(f'<span class="source">{esc(why)}</span>')]
             for (fam, why), g in outside.groupby(["family", "tolerance_basis"], sort=False)]
    worst_t = (table(["Case", "Family", "Error", "Tolerance", "Why it misses"], worst,
                     caption="Cases outside their tolerance (cases that miss for one reason share a row)",
                     css="numeric") if worst else Html(""))
    gone = [[r["cases"], r["family"], Html(f'<span class="source">{esc(r["why"])}</span>')]
            for r in left_out_groups(df).to_dict("records")]
    gone_t = (table(["Case", "Family", "Why it is not compared"], gone, caption="Cases left out, and why")
              if gone else Html(""))
    used = sorted({run for t in ctx.plan.training if (r := time_range_days(t)) and r.mfu for run in r.mfu.cases})
    obs = mfu_observations()
    obs = obs[obs["run"].isin(used)].sort_values("gpus")
    runs = [[r["run"], r["accelerator"], count(r["gpus"]), pct(r["mfu_pct"] / 100, 1),
             Html(f'<span class="source">{esc(r["source"])}</span>')] for r in obs.to_dict("records")]
    runs_t = (table(["Run", "Accelerator", "GPUs", "MFU", "Source"], runs,
                    caption="Published runs behind this plan's time-to-train ranges", css="numeric")
              if runs else Html(""))
    intro = note("Each case compares one published figure with aisize's estimate from the published inputs "
                 "(data/validation/cases.csv and the training and serving runs). A case whose source does not give "
                 "what a comparison needs is left out and listed with why.")
    return Html(block(fam, intro) + calibration_comparison(ctx.scenario) + block(worst_t) + block(gone_t)
                + block(figure(charts.validation_errors(df[~serving]),
                               "Signed error of each case against its published figure (symlog axis); the tick "
                               "is the case's tolerance.", keep=True))
                + block(figure(charts.serving_validation(df[serving]),
                               "Serving: predicted against published output tokens/s per GPU for every public run "
                               "(log axes), by family; the band is ±15 %. The same runs fitted the serving "
                               "calibration. Every run, with its TPOT: aisize validate --family serving-load (and "
                               "serving, serving-specdec, serving-disagg).", keep=True))
                + block(note(ttft_readings()))
                + block(runs_t))


def ttft_readings() -> str:
    """How many serving misses per family have a published mean TTFT many times aisize's, were published
    again further apart than the tolerance, or measured an earlier engine build of their recipe (with the
    latest builds' scores), and what each means."""
    parts, repeats, earlier = [], [], []
    for family in SETS:
        t = family_table(family)
        if superseded_misses(t):
            latest = serving_summary(latest_runs(t), family)
            earlier.append(f"{count(superseded_misses(t))} of the {count(misses(t))} {FAMILY_SHORT[family]} (on the "
                           f"latest build of each recipe, {count(latest['within'])} of {count(latest['cases'])} within "
                           f"{TOLERANCE_PCT:g} % on tokens/s per GPU"
                           + (f" and {count(latest['tpot_within'])} on TPOT" if "tpot_within" in latest else "") + ")")
        if misses(t) and t["published_ttft_ms"].notna().any():  # max-throughput runs publish no TTFT
            parts.append(f"{count(ttft_read_misses(t))} of the {count(misses(t))} {FAMILY_SHORT[family]}")
        if repeat_read_misses(t):
            repeats.append(f"{count(repeat_read_misses(t))} of the {count(misses(t))} {FAMILY_SHORT[family]}")
    text = ("Serving runs outside 15 % on tokens/s per GPU or TPOT whose published mean TTFT is at least "
            f"{TTFT_READING_RATIO:g}x aisize's: " + "; ".join(parts) + ". Such a run's requests waited seconds "
            "for their first token for a cause aisize does not model (warm-up or compilation inside the timed "
            "window, a queue at a worker or router), which lowers its tokens/s per GPU whatever the iteration "
            "model; aisize validate --family serving-load lists each run with its TTFT.")
    if repeats:
        text += (" Misses whose deployment was published again more than 15 % apart (the same inputs to aisize, "
                 "so one estimate answers them all): " + "; ".join(repeats) + ".")
    if earlier:
        text += (" Misses measured with an earlier engine build than a later run of the same model, GPU, engine "
                 "and weight format in the same set (aisize's inputs carry no engine build): "
                 + "; ".join(earlier) + ".")
    return text
