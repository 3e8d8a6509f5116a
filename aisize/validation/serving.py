"""The serving family: :func:`aisize.serving.estimate` against published max-throughput runs.

``data/validation/serving_throughput.csv`` holds the 118 TensorRT-LLM runs of
``reference/serving_throughput.csv`` (perf-overview.md at commit 00f37686: Llama 3.1
8B, Llama 3.3 70B, Llama 4 Scout and Qwen3-30B-A3B on H100, H200, B200 and GB200,
FP8 and NVFP4, output tokens/s of one TP group at an unbounded request rate), with
the catalog ids aisize uses for each. :func:`serving_table` predicts every row
and gives the error; :func:`serving_summary` the share within the tolerance and
the median error. The same rows fitted the calibration (:mod:`aisize.serving.calibration`):
this is a fit's residual, shown as such.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from aisize import catalog

TOLERANCE_PCT = 15.0  # the serving issue's bar: 80 % of rows within 15 %, median <= 10 %
REFERENCE = "serving_throughput.csv"


@dataclass(frozen=True)
class ServingRow:
    """One published max-throughput run."""

    id: str
    label: str
    model: str  # catalog id
    accelerator: str  # catalog id
    tensor_parallel: int
    weight_precision: str
    kv_precision: str
    input_tokens: int
    output_tokens: int
    published_output_tokens_per_s: float
    source: str


def _path(path=None) -> Path:
    return Path(path) if path else catalog.data_dir() / "validation" / REFERENCE


@lru_cache(maxsize=4)
def reference_rows(path: str | None = None) -> tuple[ServingRow, ...]:
    """The published runs as :class:`ServingRow` records."""
    out = []
    with _path(path).open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            label = (f"{r['model']} {r['gpu']} TP{r['tensor_parallel']} {r['precision']} "
                     f"{r['input_tokens']}/{r['output_tokens']}")
            out.append(ServingRow(r["id"], label, r["model_id"], r["accelerator_id"], int(r["tensor_parallel"]),
                                  r["weight_precision"], r["kv_precision"], int(r["input_tokens"]),
                                  int(r["output_tokens"]), float(r["output_tokens_per_s"]), r["source"]))
    return tuple(out)


def serving_table(path: str | None = None) -> pd.DataFrame:
    """Published vs predicted output tokens/s for every row, with the error [%] and what bounded it."""
    from aisize.serving import estimate

    rows = []
    for r in reference_rows(path):
        e = estimate(r.model, r.accelerator, tensor_parallel=r.tensor_parallel, weight_precision=r.weight_precision,
                     kv_precision=r.kv_precision, input_tokens=r.input_tokens, output_tokens=r.output_tokens)
        err = (e.output_tokens_per_s / r.published_output_tokens_per_s - 1.0) * 100.0
        rows.append({"case": r.id, "run": r.label, "published": r.published_output_tokens_per_s,
                     "predicted": e.output_tokens_per_s, "unit": "output tokens/s", "error_pct": err,
                     "within_tolerance": abs(err) <= TOLERANCE_PCT, "batch": e.batch_size,
                     "limited_by": e.limited_by, "attention_dp": e.attention_dp, "source": r.source})
    return pd.DataFrame(rows)


def serving_summary(table: pd.DataFrame | None = None) -> dict:
    """Rows, rows within tolerance (count and share) and the median / max |error| [%]."""
    t = serving_table() if table is None else table
    a = t["error_pct"].abs().to_numpy()
    return {"family": "serving", "cases": len(t), "within": int(np.sum(a <= TOLERANCE_PCT)),
            "share_within": float(np.mean(a <= TOLERANCE_PCT)), "median_abs_error_pct": float(np.median(a)),
            "max_abs_error_pct": float(a.max())}
