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
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from aisize import checks
from aisize.calibrate.names import accelerator_id, engine_key, model_id, precision

KINDS = ("aggregated", "disaggregated")
MAX_BYTES = 50_000_000  # a results file larger than this is not a benchmark export (a detailed vLLM one is ~20 MB)
MAX_RUNS = 2_000  # a campaign is tens to hundreds of runs (aisize's own fit: 311); the fit models each distinct
# one ~100 times at ~2 ms, so 2,000 distinct runs take ~7 minutes (with a progress line)
MAX_COLUMNS = 200  # commas on a CSV's header line (the reference files have ~40 columns)
# Physical bounds on what a run states: a figure outside them is a typo, a unit slip or a crafted file, and
# would divide by zero, overflow or drag the fit. Each sits far beyond any real deployment.
MAX_GPUS = 100_000  # GPUs of a deployment or of one parallel dimension: the largest clusters hold ~10^5
MAX_TOKENS = 10_000_000  # a mean prompt or output, a step's token budget: the longest contexts hold 10^7
MAX_TOKENS_PER_S_PER_GPU = 1e7  # a 0.5B model's 1 GFLOP per token at a 10 PFLOP/s GPU's peak
MAX_TPOT_S = 60.0  # a minute per output token: no serving engine is that slow
MAX_TTFT_S = 3600.0  # an hour to the first token: a queue no benchmark waits out
MAX_LOAD = 1e7  # requests in flight, or per second, at one deployment
MAX_BATCH = 1_000_000  # an engine's batch limit or balancing timeout [sequences, iterations]
MAX_SPECULATIVE_TOKENS = 64  # draft tokens per step: engines draft a handful
MIN_FIGURE = 1e-6  # every figure's floor, in its file's unit: far below any real one, and a ratio to it stays finite
LIMITS = {  # Run field -> (highest allowed, whole number?); the lowest is MIN_FIGURE
    "input_tokens": (MAX_TOKENS, True), "output_tokens": (MAX_TOKENS, True), "gpus": (MAX_GPUS, True),
    "tensor_parallel": (MAX_GPUS, True), "expert_parallel": (MAX_GPUS, True), "attention_dp": (MAX_GPUS, True),
    "measured_tokens_per_s_per_gpu": (MAX_TOKENS_PER_S_PER_GPU, False), "concurrency": (MAX_LOAD, False),
    "requests_per_s": (MAX_LOAD, False), "max_batch_size": (MAX_BATCH, True), "max_num_tokens": (MAX_TOKENS, True),
    "attention_dp_balance_iters": (MAX_BATCH, True), "speculative_tokens": (MAX_SPECULATIVE_TOKENS, True),
    "acceptance_length": (MAX_SPECULATIVE_TOKENS + 1, False), "measured_tpot_s": (MAX_TPOT_S, False),
    "measured_ttft_s": (MAX_TTFT_S, False),
}


def bounded(name: str, value, high: float, whole: bool = False):
    """``value`` (a number or its text) if it is from :data:`MIN_FIGURE` (``whole``: an int from 1) to ``high``;
    else a ValueError naming ``name``, the value and the range."""
    shown = (value if isinstance(value, str) and value.isprintable() else repr(value))[:40]  # on one line
    need = f"a whole number from 1 to {high:,}" if whole else f"a number from {MIN_FIGURE:g} to {high:g}"
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        x = math.nan
    if isinstance(value, bool) or not MIN_FIGURE <= x <= high or whole and x != int(x):
        raise ValueError(f"{name}={shown} is not allowed: {need}")
    return int(x) if whole else x


def check_run(run: "Run", where: str = "") -> "Run":
    """``run`` if every figure it holds is within :data:`LIMITS`, else a ValueError (naming ``where``)."""
    try:
        for name, (high, whole) in LIMITS.items():
            if getattr(run, name) is not None:
                bounded(name, getattr(run, name), high, whole)
        for side in ("prefill", "decode"):
            for key, value in (getattr(run, side) or {}).items():
                bounded(f"{side}_{key}", value, MAX_GPUS, True)
    except ValueError as e:
        raise ValueError(f"{where}: {e}" if where else str(e)) from None
    return run


def read_text(path) -> str:
    """A runs file's text: a regular file (a FIFO or device is refused without waiting) of at most
    :data:`MAX_BYTES`, in UTF-8; errors name the file."""
    try:
        raw = checks.read_file("runs file", path, MAX_BYTES)
    except FileNotFoundError:
        raise ValueError(f"runs file {str(path)[:200]!r} does not exist") from None
    except IsADirectoryError:  # refused on opening, before checks.read_file's own test
        raise ValueError(f"runs file {str(path)[:200]!r} is not a regular file: a folder") from None
    except OSError as e:
        raise ValueError(f"runs file {str(path)[:200]!r} cannot be read: {e.strerror}") from None
    try:
        return raw.decode("utf-8-sig")  # a spreadsheet's CSV may open with a byte-order mark
    except UnicodeDecodeError as e:
        raise ValueError(f"{Path(path).name}: byte {e.start} is not UTF-8 text") from None


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


def figures(run: Run, calibration=None) -> tuple:
    """aisize's output tokens/s per GPU, TPOT and TTFT [s] and whether uncalibrated for ``run``'s deployment
    (what was measured plays no part); raises ValueError when the run cannot be expressed."""
    from aisize import serving
    from aisize.serving.engine import resolve_engine

    engine = run.engine
    if run.attention_dp_balance_iters is not None:  # 0: the run's balancing off, whatever the engine's default
        engine = resolve_engine(engine, flat_out=False).with_(
            attention_dp_balance_iters=run.attention_dp_balance_iters)
    if run.kind == "disaggregated":
        est = serving.estimate_disaggregated(
            run.model, run.accelerator, prefill=run.prefill, decode=run.decode, weight_precision=run.weight_precision,
            kv_precision=run.kv_precision, input_tokens=run.input_tokens, output_tokens=run.output_tokens,
            concurrency=run.concurrency, requests_per_s=run.requests_per_s, engine=engine,
            max_batch_size=run.max_batch_size, calibration=calibration, **_speculative(run))
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
    return est.output_tokens_per_s / est.gpus, est.tpot_s, est.ttft_s, est.uncalibrated


def score(run: Run, modelled: tuple) -> Prediction:
    """``run``'s :class:`Prediction` from what :func:`figures` gave for its deployment."""
    per_gpu, tpot, ttft, uncal = modelled
    tpot_err = None
    if run.measured_tpot_s and tpot is not None and math.isfinite(tpot):
        tpot_err = tpot / run.measured_tpot_s - 1.0
    return Prediction(run, per_gpu, tpot, ttft, per_gpu / run.measured_tokens_per_s_per_gpu - 1.0, tpot_err, uncal)


def predict(run: Run, calibration=None) -> Prediction:
    """aisize's figures for ``run`` (raises ValueError when the run cannot be expressed)."""
    return score(run, figures(run, calibration))


def _num(row, key, high, default=None, whole=False):
    v = (row.get(key) or "").strip()
    return default if not v else bounded(key, v, high, whole)


def _int(row, key, default=None, high=MAX_GPUS):
    return _num(row, key, high, default, whole=True)


def _tokens(row, key):
    x = _num(row, key, MAX_TOKENS)
    return None if x is None else max(round(x), 1)  # a mean length may be fractional


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
        i, o = _tokens(row, "input_tokens"), _tokens(row, "output_tokens")
        if not i or not o:
            raise ValueError("input_tokens and output_tokens are needed")
        spec = (row.get("spec_method") or "").strip().lower()
        spec = "" if spec in ("", "none") else spec
        common = dict(model=model, accelerator=acc, engine=engine_key(row.get("engine") or ""), weight_precision=wp,
                      kv_precision=kv, input_tokens=i, output_tokens=o, speculative_method=spec or None,
                      speculative_tokens=_int(row, "spec_tokens", high=MAX_SPECULATIVE_TOKENS) if spec else None,
                      acceptance_length=_num(row, "acceptance_length", MAX_SPECULATIVE_TOKENS + 1) if spec else None,
                      measured_tpot_s=(_num(row, "tpot_ms", 1e3 * MAX_TPOT_S) or 0) / 1e3 or None,
                      measured_ttft_s=(_num(row, "ttft_ms", 1e3 * MAX_TTFT_S) or 0) / 1e3 or None,
                      source=(row.get("source_url") or row.get("source") or "")[:300], id=row.get("id") or "",
                      run_date=_run_date(row), expected_status=row.get("expected_status") or "")
        load = dict(concurrency=_num(row, "concurrency", MAX_LOAD), requests_per_s=_num(row, "request_rate", MAX_LOAD))
        if row.get("prefill_replicas") or row.get("prefill_workers"):
            p, d = _pool(row, "prefill"), _pool(row, "decode")
            gpus = _int(row, "total_gpus") or _int(row, "gpus")
            batch = _int(row, "decode_max_batch_size", high=MAX_BATCH)
            per_gpu = _num(row, "output_tokens_per_s_per_gpu", MAX_TOKENS_PER_S_PER_GPU)
            if per_gpu is None:
                raise ValueError("no measured output_tokens_per_s_per_gpu")
            layout = "disagg" + (f" (decode batch limit {batch})" if batch else "")
            return check_run(Run(label=_label(row, common, layout), gpus=gpus, measured_tokens_per_s_per_gpu=per_gpu,
                                 prefill=p, decode=d, max_batch_size=batch, **load, **common))
        tp = _int(row, "tensor_parallel", 1)
        gpus = _int(row, "gpus", tp)
        per_gpu = _num(row, "output_tokens_per_s_per_gpu", MAX_TOKENS_PER_S_PER_GPU)
        total = _num(row, "output_tokens_per_s", MAX_TOKENS_PER_S_PER_GPU * MAX_GPUS)
        if per_gpu is None and total is not None:
            per_gpu = bounded("output_tokens_per_s / gpus", total / gpus, MAX_TOKENS_PER_S_PER_GPU)
        if per_gpu is None:
            raise ValueError("no measured output_tokens_per_s_per_gpu (or output_tokens_per_s)")
        ep, dp = _int(row, "expert_parallel"), _int(row, "attention_dp")
        batch, budget = _int(row, "max_batch_size", high=MAX_BATCH), _int(row, "max_num_tokens", high=MAX_TOKENS)
        balance = _int(row, "attention_dp_balance_iters", high=MAX_BATCH)
        layout = f"TP{tp}" + (f" EP{ep}" if ep and ep > 1 else "") + (f" attention DP{dp}" if dp and dp > 1 else "")
        layout += f" (balanced, timeout {balance} iterations)" if balance else ""
        return check_run(Run(label=_label(row, common, layout), gpus=gpus, measured_tokens_per_s_per_gpu=per_gpu,
                             tensor_parallel=tp, expert_parallel=ep, attention_dp=dp, max_batch_size=batch,
                             max_num_tokens=budget, attention_dp_balance_iters=balance, **load, **common))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _label(row, common, layout) -> str:
    name = row.get("model") or row.get("model_hf_id") or common["model"]
    load = f"C={row['concurrency']}" if (row.get("concurrency") or "").strip() else "flat out"
    spec = f" {common['speculative_method']}{common['speculative_tokens']}" if common["speculative_method"] else ""
    return (f"{name.split('/')[-1][:80]} {(row.get('hardware') or row.get('gpu') or common['accelerator'])[:40]} "
            f"{common['engine'] or 'default'} {layout} {common['weight_precision']} "
            f"{common['input_tokens']}/{common['output_tokens']} {load[:40]}{spec}")


def read_table(path, limit: int = MAX_RUNS) -> list[Run]:
    """Every row of a CSV in the reference columns as a :class:`Run`, at most ``limit`` (errors name the line)."""
    return table_runs(read_text(path), Path(path).name, limit)


def table_runs(text: str, name: str, limit: int = MAX_RUNS, before: int = 0) -> list[Run]:
    """The runs of CSV ``text`` from file ``name``, refused past ``limit`` with ``before`` read from other files;
    errors read ``name:line: ...``."""
    if text[:text.find("\n")].count(",") >= MAX_COLUMNS:
        raise ValueError(f"{name}:1: more than {MAX_COLUMNS} columns: not a table of runs")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    runs = []
    try:
        for row in reader:
            line = reader.reader.line_num  # the row's last line (a quoted field may span lines)
            if before + len(runs) >= limit:
                raise ValueError(f"{name}:{line}: more than {limit:,} runs{' in all' if before else ''}: the fit "
                                 f"models each ~100 times; give a sample")
            runs.append(run_from_row(row, f"{name}:{line}"))
    except csv.Error as e:  # a field over csv's 131,072 characters, a NUL byte
        raise ValueError(f"{name}:{reader.reader.line_num}: not CSV: {e}") from None
    return runs
