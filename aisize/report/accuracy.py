"""Accuracy appendix: aisize against published figures, per family, and the runs behind MFU ranges."""

from __future__ import annotations

import math

from aisize import charts
from aisize.report.context import ReportContext
from aisize.format import points
from aisize.report.markup import DASH, Html, block, count, esc, figure, note, pct, sig, table
from aisize.report.training_sections import time_range_days
from aisize.validation import left_out, mfu_observations, summary, validate

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


def _err(value: float) -> str:
    return DASH if value is None or math.isnan(value) else f"{points(value)} %"


def _err_span(errors) -> str:
    """One case's error, or the range of a group's ("-48 to -23 %")."""
    lo, hi = float(errors.min()), float(errors.max())
    return _err(lo) if len(errors) == 1 or lo == hi else f"{points(lo)} to {points(hi)} %"


def accuracy(ctx: ReportContext) -> Html:
    """Per family of published cases: how many, how many within tolerance, median and max error;
    the error of every case; and the published runs that set this plan's time-to-train range."""
    df = validate()
    rows = [[FAMILY_TEXT.get(r["family"], r["family"]), count(r["compared"]), count(r["ok"]), count(r["outside"]),
             _err(r["median_abs_error_pct"]), _err(r["max_abs_error_pct"]), count(r["needs_input"])]
            for r in summary(df).to_dict("records")]
    fam = table(["Family", "Cases compared", "Within tolerance", "Outside", "Median |error|", "Max |error|",
                 "Left out (below)"], rows, caption="aisize against published figures", css="numeric")
    serving = df["family"].str.startswith("serving")
    outside = df[(df["status"] == "outside") & ~serving]  # serving runs: the chart below, every run in `aisize validate`
    worst = [[", ".join(g["case"]), fam, _err_span(g["error_pct"]), f"{sig(g['tolerance_pct'].iloc[0])} %",
              Html(f'<span class="source">{esc(why)}</span>')]
             for (fam, why), g in outside.groupby(["family", "tolerance_basis"], sort=False)]
    worst_t = (table(["Case", "Family", "Error", "Tolerance", "Why it misses"], worst,
                     caption="Cases outside their tolerance (cases that miss for one reason share a row)",
                     css="numeric") if worst else Html(""))
    gone = [[", ".join(g["case"]), fam,
             Html(f'<span class="source">{esc(g["reason"].iloc[0] if len(g) == 1 else why)}</span>')]
            for (fam, why), g in left_out(df).groupby(["family", "why"], sort=False)]
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
    return Html(block(fam, intro) + block(worst_t) + block(gone_t)
                + block(figure(charts.validation_errors(df[~serving]),
                               "Signed error of each case against its published figure (symlog axis); the tick "
                               "is the case's tolerance."))
                + block(figure(charts.serving_validation(df[serving]),
                               "Serving: predicted against published output tokens/s per GPU for every public run "
                               "(log axes), by family; the band is ±15 %. The same runs fitted the serving "
                               "calibration. Every run, with its TPOT: aisize validate --family serving-load (and "
                               "serving, serving-specdec, serving-disagg)."))
                + block(runs_t))
