"""The "training" family: published step throughput, peak memory and MFU vs :func:`aisize.training.estimate`.

Three tables in ``data/validation/``:

* ``training_torchtitan.csv``: torchtitan's published runs (a copy of
  ``reference/training_torchtitan.csv``): layout, batch, sequence length,
  recompute, eager / torch.compile / Float8, tokens/s per GPU and peak memory.
  Each row becomes one :func:`aisize.training.estimate` call exactly as
  ``tools/check_training.py`` builds it (FSDP = the data-parallel degree, the local
  batch as ``micro_batch``, torchtitan's defaults for the rest).
* ``training_megatron.csv``: NVIDIA's Megatron-Core runs (NeMo 24.07, Megatron-Bridge
  25.11; a copy of ``reference/training_megatron.csv``), each turned into an estimate as
  ``tools/check_training_megatron.py`` does (:mod:`aisize.validation.training_megatron`).
* ``training_runs.csv``: large published runs that report an MFU (or a per-GPU
  rate, or GPU-hours), with the layout the paper gives (or, where it gives none,
  the assumption stated in the row).

:func:`training_table` returns published vs predicted vs error vs source for every row.
"""

from __future__ import annotations

import dataclasses
import math
import re
from functools import lru_cache

import pandas as pd

from aisize import catalog
from aisize.validation.cases import validation_dir

TORCHTITAN_MODELS = {"Llama 3.1 8B": "llama-3-8b", "Llama 3 8B": "llama-3-8b", "Llama 3.1 70B": "llama-3-70b",
                     "Llama 3 70B": "llama-3-70b", "Llama 3.1 405B": "llama-3.1-405b",
                     "Llama 2 13B": "llama-2-13b", "Llama 2 70B": "llama-2-70b"}
# The torchtitan H100s are 96 GB HBM2e parts at 500 W; the catalog has no such row, so they run as
# the H100 SXM (same compute peaks) with the fitted Hopper efficiencies absorbing the power cap.
TORCHTITAN_GPUS = {"H100": "h100-sxm", "A100": "a100-sxm-80gb"}
TOKENS_TOLERANCE_PCT = 15.0  # issue 17: tokens/s per GPU within 15 % on 80 % of the rows
MEMORY_TOLERANCE_PCT = 10.0  # issue 17: peak memory within 10 % where given
MFU_TOLERANCE_PCT = 15.0  # issue 17: MFU of large published runs within 15 % (relative)
# Share of wall time a large run makes progress: Llama 3 reports over 90 % effective training
# time on 16k H100 (Llama Team 2024, arXiv:2407.21783, sec. 3.3.4); published GPU-hours include the rest.
RUN_GOODPUT = 0.90
COLUMNS = ("case", "metric", "published", "predicted", "unit", "error_pct", "tolerance_pct", "within_tolerance",
           "layout", "source")


def torchtitan_kwargs(row: dict) -> tuple[str, str, dict]:
    """(model id, accelerator id, :func:`aisize.training.estimate` keywords) of a torchtitan row."""
    deg = {k: int(v) for k, v in re.findall(r"(FSDP|TP|PP|CP) (\d+)", row["parallelism"])}
    gpus, local = int(row["gpus"]), int(row["local_batch"])
    dp = deg.get("FSDP", 1)
    extras = row["extras"]
    kw = dict(gpus=gpus, tensor_parallel=deg.get("TP", 1), pipeline_parallel=deg.get("PP", 1),
              context_parallel=deg.get("CP", 1), micro_batch=local,
              global_batch=int(row["global_batch"]) if row["global_batch"] else local * dp,
              seq_len=int(row["seq_len"]), recompute=row["activation_checkpointing"].split()[0],
              precision="fp8" if "Float8" in extras else "bf16", compiled="compile" in extras,
              schedule="interleaved-1f1b" if "interleaved" in extras else "1f1b")
    return TORCHTITAN_MODELS[row["model"]], TORCHTITAN_GPUS[row["gpu"].split()[0]], kw


@lru_cache(maxsize=2)
def torchtitan_rows(path: str | None = None) -> tuple[dict, ...]:
    """The rows of ``training_torchtitan.csv`` as dicts of text ("same" source and note spelled out)."""
    frame = pd.read_csv(path or validation_dir() / "training_torchtitan.csv", dtype=str, keep_default_na=False)
    rows, last = [], {}
    for r in frame.to_dict("records"):
        for key in ("source", "note"):
            if r[key] == "same":
                r[key] = last.get(key, "")
            last[key] = r[key]
        rows.append(r)
    return tuple(rows)


def _layout_text(kw: dict) -> str:
    parts = [f"{kw['gpus']} GPUs", f"TP {kw.get('tensor_parallel', 1)}", f"PP {kw.get('pipeline_parallel', 1)}",
             f"CP {kw.get('context_parallel', 1)}", f"mb {kw['micro_batch']}", f"gb {kw['global_batch']}",
             f"s {kw['seq_len']}", kw.get("recompute", "selective"), kw.get("precision", "bf16")]
    if kw.get("compiled"):
        parts.append("compiled")
    if kw.get("schedule", "1f1b") != "1f1b":
        parts.append(kw["schedule"])
    return ", ".join(parts)


def _row(case, metric, published, predicted, unit, tolerance, layout, source) -> dict:
    error = (predicted - published) / published * 100.0 if math.isfinite(predicted) else math.nan
    within = abs(error) <= tolerance if math.isfinite(error) else False
    return {"case": case, "metric": metric, "published": published, "predicted": predicted, "unit": unit,
            "error_pct": error, "tolerance_pct": tolerance, "within_tolerance": within, "layout": layout,
            "source": source}


def torchtitan_table(path: str | None = None) -> pd.DataFrame:
    """Tokens/s per GPU and peak memory [GiB] of every torchtitan row: published vs predicted."""
    from aisize.training import estimate

    rows = []
    for r in torchtitan_rows(path):
        model, gpu, kw = torchtitan_kwargs(r)
        est = estimate(model, gpu, **kw)
        case = f"{r['id']} {r['model']} {r['parallelism']} {r['extras'] or 'eager'}".strip()
        rows.append(_row(case, "tokens/s per GPU", float(r["tokens_per_s_per_gpu"]), est.tokens_per_s_per_gpu,
                         "tokens/s", TOKENS_TOLERANCE_PCT, _layout_text(kw), r["source"]))
        if r["peak_memory_gib"]:
            rows.append(_row(case, "peak memory", float(r["peak_memory_gib"]), est.peak_memory_bytes / 2**30,
                             "GiB", MEMORY_TOLERANCE_PCT, _layout_text(kw), r["source"]))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _record(model: str, overrides: str):
    """A catalog transformer, with ``field=value`` overrides (a published architecture not in the catalog)."""
    base = catalog.transformers[model]
    changes = {}
    for part in filter(None, (p.strip() for p in overrides.split(";"))):
        key, _, value = part.partition("=")
        kind = type(getattr(base, key.strip()))
        value = value.strip()
        changes[key.strip()] = value.lower() == "true" if kind is bool else kind(value)
    return dataclasses.replace(base, **changes) if changes else base


@lru_cache(maxsize=2)
def run_rows(path: str | None = None) -> tuple[dict, ...]:
    """The rows of ``training_runs.csv`` as dicts of text."""
    frame = pd.read_csv(path or validation_dir() / "training_runs.csv", dtype=str, keep_default_na=False)
    return tuple(frame.to_dict("records"))


def runs_table(path: str | None = None) -> pd.DataFrame:
    """MFU, HFU or GPU-hours of the published large runs: published vs predicted.

    GPU-hours: the run's tokens at the predicted tokens/s per GPU, over
    :data:`RUN_GOODPUT` (published GPU-hours include restarts and lost work).
    """
    from aisize.training import estimate

    rows = []
    for r in run_rows(path):
        if not r["accelerator"]:
            rows.append(_row(r["case"], r["metric"], float(r["published"]), math.nan, r["unit"], MFU_TOLERANCE_PCT,
                             "", r["source"]) | {"note": r["note"]})
            continue
        kw = dict(gpus=int(r["gpus"]), tensor_parallel=int(r["tp"]), pipeline_parallel=int(r["pp"]),
                  micro_batch=int(r["micro_batch"]), global_batch=int(r["global_batch"]), seq_len=int(r["seq_len"]),
                  recompute=r["recompute"], precision=r["precision"], framework=r["framework"],
                  compiled=r["compiled"] == "true",
                  pipeline_microbatches=int(r["pipeline_microbatches"]) if r["pipeline_microbatches"] else None)
        est = estimate(_record(r["model"], r["overrides"]), r["accelerator"], **kw)
        if r["metric"] == "MFU":
            value = 100.0 * est.mfu
        elif r["metric"] == "HFU":
            value = 100.0 * est.hfu
        else:
            value = float(r["tokens"]) / est.tokens_per_s_per_gpu / 3600.0 / RUN_GOODPUT
        rows.append(_row(r["case"], r["metric"], float(r["published"]), value, r["unit"], MFU_TOLERANCE_PCT,
                         _layout_text(kw) + f", {r['framework']}", r["source"]) | {"note": r["note"]})
    return pd.DataFrame(rows, columns=[*COLUMNS, "note"])


@lru_cache(maxsize=1)
def training_table() -> pd.DataFrame:
    """Every training-family row: torchtitan tokens/s and memory, NVIDIA's Megatron-Core runs, then the
    large runs (cached here and in :mod:`aisize.validation.store`)."""
    from aisize.validation.store import remembered
    from aisize.validation.training_megatron import megatron_table

    return remembered("training", lambda: pd.concat([torchtitan_table().assign(note=""), megatron_table(),
                                                     runs_table()], ignore_index=True))


PYTHIA_OUTSIDE = ("Pythia's 2022 GPT-NeoX runs (fp16, full recompute, the layouts of their configs) reached 18-35 % "
                  "MFU over their published GPU-hours; aisize, whose kernel efficiencies are fitted on 2024 "
                  "torchtitan and Megatron-LM runs, predicts 47-56 %, so 23-48 % fewer GPU-hours: older kernels "
                  "and small models' per-layer overheads it does not book")
# Rows known to miss their tolerance, reported rather than hidden by a wider one (why, in words).
KNOWN_OUTSIDE = {
    ("C5", "tokens/s per GPU"): "torchtitan's CP 2 row runs faster than its CP 1 and CP 4 neighbours imply; "
                                "aisize's smooth attention cost lands 17 % low",
    ("C13", "peak memory"): "PP 8 with FSDP2: about 9 GiB more than aisize books for unsharded parameters "
                            "and accumulated gradients",
    ("C14", "peak memory"): "interleaved PP: aisize books one chunk's unsharded gradients at the peak",
    ("Llama-2-13B", "GPU-hours"): "the published GPU-hours imply 43 % MFU (at 90 % goodput); torchtitan "
                                  "measures 61 % for this model on 64 A100 (row C20)",
    ("M29", "tokens/s per GPU"): "Qwen3-30B-A3B on 8 GB200: aisize 23 % fast; the same run on GB300 (M20) is "
                                 "within 8 %, so the GB200/GB300 gap of this small-expert model is not explained",
    ("M36", "tokens/s per GPU"): "GPT-OSS 120B on 64 B200: the table says EP 8, the recipe file EP 64; aisize "
                                 "estimates the table's layout, 46 % fast",
    ("M43", "tokens/s per GPU"): "Qwen3-30B-A3B on 16 H100: the table says VP 24, MBS 2, the recipe VP 12, MBS 1, "
                                 "with MoE all-to-all overlap (not an estimate() input); aisize 52 % fast",
    **{(f"Pythia-{size}", "GPU-hours"): PYTHIA_OUTSIDE for size in ("70M", "160M", "410M", "1B", "1.4B", "2.8B",
                                                                     "6.9B", "12B")},
}
_ROW_ID = re.compile(r"^[CM]\d+$")


def expected_status(row: dict) -> str:
    """The status a training-family row is expected to have (see :data:`KNOWN_OUTSIDE`)."""
    if not math.isfinite(row["predicted"]):
        return "needs input"
    first = row["case"].split()[0]
    key = (first if _ROW_ID.match(first) else row["case"], row["metric"])
    return "outside" if key in KNOWN_OUTSIDE else "ok"


def training_results() -> pd.DataFrame:
    """The training family in :func:`aisize.validation.validate`'s columns."""
    rows = []
    for r in training_table().to_dict("records"):
        missing = not math.isfinite(r["predicted"])
        status = "needs input" if missing else ("ok" if r["within_tolerance"] else "outside")
        implied, implied_mfu = "", math.nan
        if missing:
            implied_mfu = r["published"] / 100.0 if r["unit"] == "%" else math.nan
            implied = f"implied MFU {r['published']:.1f} % (published); {r['note']}"
        first = r["case"].split()[0]
        key = first if _ROW_ID.match(first) else r["case"]
        kind = {"C": "torchtitan", "M": "megatron"}[first[0]] if _ROW_ID.match(first) else "published-run"
        rows.append({
            "case": f"training {r['case']} {r['metric']}", "family": "training", "kind": kind,
            "published": r["published"], "predicted": r["predicted"], "unit": r["unit"], "error_pct": r["error_pct"],
            "tolerance_pct": r["tolerance_pct"], "within_tolerance": pd.NA if missing else bool(r["within_tolerance"]),
            "status": status, "expected_status": expected_status(r), "implied": implied, "implied_mfu": implied_mfu,
            "assumptions": r["layout"], "tolerance_basis": KNOWN_OUTSIDE.get((key, r["metric"]),
                                                                              "issue 17 acceptance threshold"),
            "description": f"{r['case']}: {r['metric']}" + (f" ({r['note']})" if r["note"] else ""),
            "source": r["source"]})
    return pd.DataFrame(rows)
