"""Measured serving runs in one form, and what aisize predicts for each.

A :class:`Run` is one benchmark measurement of one deployment: the model, GPU, engine and
parallel layout, the precisions, the request lengths, the load (a closed-loop concurrency, a
Poisson rate, or flat out), and what was measured (output tokens/s per GPU over every GPU of
the deployment, mean TPOT and TTFT). :func:`predict` asks the public entry points,
:func:`aisize.serving.estimate` (one replica; the deployment's concurrency split evenly over
its replicas, as a router does) or :func:`aisize.serving.estimate_disaggregated`, for the
same figures. The validation page, ``aisize calibrate`` and the calibration fit all go
through here, so they score runs the same way.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from aisize.calibrate.names import accelerator_id, engine_key, model_id, precision

KINDS = ("aggregated", "disaggregated")


@dataclass(frozen=True)
class Run:
    """One measured serving run [count, tokens, 1/s, s]."""

    label: str
    model: str  # catalog id
    accelerator: str  # catalog id
    engine: str | None  # engines.csv key (None: the default)
    weight_precision: str
    kv_precision: str
    input_tokens: int
    output_tokens: int
    gpus: int  # every GPU of the deployment
    measured_tokens_per_s_per_gpu: float  # output tokens/s over all GPUs
    concurrency: float | None = None  # closed loop: requests in flight over the deployment
    requests_per_s: float | None = None  # open loop: Poisson rate at the deployment (both None: flat out)
    tensor_parallel: int = 1  # aggregated: GPUs per replica
    expert_parallel: int | None = None
    attention_dp: int | None = None
    prefill: dict | None = None  # disaggregated: replicas, tensor_parallel, expert_parallel, attention_dp
    decode: dict | None = None
    # engine flags as the run's scripts write them: TensorRT-LLM's per attention-DP rank, SGLang's the
    # server's (None: the engine's own)
    max_batch_size: int | None = None  # disaggregated: the decode pool's
    max_num_tokens: int | None = None  # aggregated only
    attention_dp_balance_iters: int | None = None  # TensorRT-LLM's enable_balance with this timeout_iters
    speculative_method: str | None = None
    speculative_tokens: int | None = None
    acceptance_length: float | None = None
    measured_tpot_s: float | None = None
    measured_ttft_s: float | None = None
    source: str = ""
    run_date: str = ""  # the day the run was measured, ISO (empty when its source does not say)
    id: str = ""
    expected_status: str = ""
    notes: tuple = field(default=())

    @property
    def kind(self) -> str:
        return "disaggregated" if self.prefill is not None else "aggregated"

    @property
    def load(self) -> str:
        if self.concurrency is not None:
            return f"C={self.concurrency:g}"
        if self.requests_per_s is not None:
            return f"{self.requests_per_s:g} req/s"
        return "flat out"


@dataclass(frozen=True)
class Prediction:
    """What aisize predicts for a run, beside what was measured."""

    run: Run
    tokens_per_s_per_gpu: float
    tpot_s: float | None
    ttft_s: float | None
    error: float  # predicted / measured - 1 (tokens/s per GPU)
    tpot_error: float | None
    uncalibrated: bool


def _speculative(run: Run) -> dict:
    if not run.speculative_method:
        return {}
    return dict(speculative_method=run.speculative_method, speculative_tokens=run.speculative_tokens,
                acceptance_length=run.acceptance_length)


def predict(run: Run, calibration=None) -> Prediction:
    """aisize's figures for ``run`` (raises ValueError when the run cannot be expressed)."""
    from aisize import serving
    from aisize.serving.engine import resolve_engine

    engine = run.engine
    if run.attention_dp_balance_iters:
        engine = resolve_engine(engine, flat_out=False).with_(
            attention_dp_balance_iters=run.attention_dp_balance_iters)
    if run.kind == "disaggregated":
        est = serving.estimate_disaggregated(
            run.model, run.accelerator, prefill=run.prefill, decode=run.decode, weight_precision=run.weight_precision,
            kv_precision=run.kv_precision, input_tokens=run.input_tokens, output_tokens=run.output_tokens,
            concurrency=run.concurrency, requests_per_s=run.requests_per_s, engine=engine,
            max_batch_size=run.max_batch_size, calibration=calibration, **_speculative(run))
        if not est.feasible:
            raise ValueError(est.reason)
        per_gpu = est.output_tokens_per_s / est.gpus
        tpot, ttft, uncal = est.tpot_s, est.ttft_s, est.uncalibrated
    else:
        replicas = max(run.gpus // run.tensor_parallel, 1)
        load = {}
        if run.concurrency is not None:
            load["concurrency"] = run.concurrency / replicas
        elif run.requests_per_s is not None:
            load["requests_per_s"] = run.requests_per_s / replicas
        est = serving.estimate(run.model, run.accelerator, tensor_parallel=run.tensor_parallel,
                               weight_precision=run.weight_precision, kv_precision=run.kv_precision,
                               input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                               expert_parallel=run.expert_parallel, attention_dp=run.attention_dp, engine=engine,
                               max_batch_size=run.max_batch_size, max_num_tokens=run.max_num_tokens,
                               calibration=calibration, **load, **_speculative(run))
        if not est.feasible:
            raise ValueError(est.reason)
        per_gpu = est.output_tokens_per_s / est.gpus
        tpot, ttft, uncal = est.tpot_s, est.ttft_s, est.uncalibrated
    tpot_err = None
    if run.measured_tpot_s and tpot is not None and math.isfinite(tpot):
        tpot_err = tpot / run.measured_tpot_s - 1.0
    return Prediction(run, per_gpu, tpot, ttft, per_gpu / run.measured_tokens_per_s_per_gpu - 1.0, tpot_err, uncal)


def _num(row, key, default=None):
    v = (row.get(key) or "").strip()
    if not v:
        return default
    try:
        x = float(v)
    except ValueError:
        raise ValueError(f"column {key!r} holds {v[:40]!r}: not a number") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"column {key!r} holds {v[:40]!r}: a finite number >= 0 is needed")
    return x


def _int(row, key, default=None):
    x = _num(row, key, None)
    return default if x is None else int(x)


_RUN_DATE = re.compile(r"\brun date (\d{4}-\d{2}-\d{2})\b")


def _run_date(row) -> str:
    """The day a run was measured: a ``run_date`` column, else "run date YYYY-MM-DD" in its source note."""
    given = (row.get("run_date") or "").strip()
    if given:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", given):
            raise ValueError(f"column 'run_date' holds {given[:40]!r}: a date YYYY-MM-DD is needed")
        return given
    found = _RUN_DATE.search(row.get("source_note") or "")
    return found.group(1) if found else ""


def _pool(row, side):
    keys = {"replicas": (f"{side}_replicas", f"{side}_workers"),
            "tensor_parallel": (f"{side}_tensor_parallel", f"{side}_tp", f"{side}_gpus_per_worker"),
            "expert_parallel": (f"{side}_expert_parallel", f"{side}_ep"),
            "attention_dp": (f"{side}_attention_dp",)}
    out = {}
    for name, cols in keys.items():
        for c in cols:
            if (row.get(c) or "").strip():
                out[name] = _int(row, c)
                break
    if "attention_dp" not in out and (row.get(f"{side}_dp_attention") or "").strip().lower() in ("true", "1", "yes"):
        out["attention_dp"] = out.get("tensor_parallel", 1)
    return out


def run_from_row(row: dict, where: str) -> Run:
    """A :class:`Run` from a CSV row in the columns of aisize's reference files (``data/validation``):
    catalog ids (``model_id``, ``accelerator_id``) or the published names (``model_hf_id``, ``hardware``)."""
    try:
        model = row.get("model_id") or model_id(row.get("model_hf_id") or row.get("model") or "")
        acc = row.get("accelerator_id") or accelerator_id(row.get("hardware") or row.get("gpu") or "")
        wp = precision(row.get("weight_precision") or row.get("precision") or "", "weight")
        kv = precision(row.get("kv_precision") or "fp8", "kv")
        i, o = _int(row, "input_tokens"), _int(row, "output_tokens")
        if not i or not o:
            raise ValueError("input_tokens and output_tokens are needed")
        spec = (row.get("spec_method") or "").strip().lower()
        spec = "" if spec in ("", "none") else spec
        common = dict(model=model, accelerator=acc, engine=engine_key(row.get("engine") or ""), weight_precision=wp,
                      kv_precision=kv, input_tokens=i, output_tokens=o, speculative_method=spec or None,
                      speculative_tokens=_int(row, "spec_tokens") if spec else None,
                      acceptance_length=_num(row, "acceptance_length") if spec else None,
                      measured_tpot_s=(_num(row, "tpot_ms") or 0) / 1e3 or None,
                      measured_ttft_s=(_num(row, "ttft_ms") or 0) / 1e3 or None,
                      source=(row.get("source_url") or row.get("source") or "")[:300], id=row.get("id", ""),
                      run_date=_run_date(row),
                      expected_status=row.get("expected_status", ""))
        if row.get("prefill_replicas") or row.get("prefill_workers"):
            p, d = _pool(row, "prefill"), _pool(row, "decode")
            gpus = _int(row, "total_gpus") or _int(row, "gpus")
            batch = _int(row, "decode_max_batch_size")
            layout = "disagg" + (f" (decode batch limit {batch})" if batch else "")
            return Run(label=_label(row, common, layout), gpus=gpus,
                       measured_tokens_per_s_per_gpu=_num(row, "output_tokens_per_s_per_gpu"),
                       concurrency=_num(row, "concurrency"), requests_per_s=_num(row, "request_rate"), prefill=p,
                       decode=d, max_batch_size=batch, **common)
        tp = _int(row, "tensor_parallel", 1)
        gpus = _int(row, "gpus", tp)
        per_gpu = _num(row, "output_tokens_per_s_per_gpu")
        if per_gpu is None and _num(row, "output_tokens_per_s") is not None:
            per_gpu = _num(row, "output_tokens_per_s") / gpus
        if per_gpu is None:
            raise ValueError("no measured output_tokens_per_s_per_gpu (or output_tokens_per_s)")
        ep, dp = _int(row, "expert_parallel"), _int(row, "attention_dp")
        batch, budget, balance = _int(row, "max_batch_size"), _int(row, "max_num_tokens"), _int(
            row, "attention_dp_balance_iters")
        layout = f"TP{tp}" + (f" EP{ep}" if ep and ep > 1 else "") + (f" attention DP{dp}" if dp and dp > 1 else "")
        layout += f" (balanced, timeout {balance} iterations)" if balance else ""
        return Run(label=_label(row, common, layout), gpus=gpus, measured_tokens_per_s_per_gpu=per_gpu,
                   concurrency=_num(row, "concurrency"), requests_per_s=_num(row, "request_rate"), tensor_parallel=tp,
                   expert_parallel=ep, attention_dp=dp, max_batch_size=batch, max_num_tokens=budget,
                   attention_dp_balance_iters=balance, **common)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _label(row, common, layout) -> str:
    name = row.get("model") or row.get("model_hf_id") or common["model"]
    load = f"C={row['concurrency']}" if (row.get("concurrency") or "").strip() else "flat out"
    spec = f" {common['speculative_method']}{common['speculative_tokens']}" if common["speculative_method"] else ""
    return (f"{name.split('/')[-1]} {row.get('hardware') or row.get('gpu') or common['accelerator']} "
            f"{common['engine'] or 'default'} {layout} {common['weight_precision']} "
            f"{common['input_tokens']}/{common['output_tokens']} {load}{spec}")


def read_table(path) -> list[Run]:
    """Every row of a CSV in the reference columns as a :class:`Run` (errors name the line)."""
    p = Path(path)
    with p.open(newline="", encoding="utf-8") as f:
        return [run_from_row(r, f"{p.name} line {n}") for n, r in enumerate(csv.DictReader(f), 2)]
