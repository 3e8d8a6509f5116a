"""Read benchmark results in the formats people have into :class:`~aisize.calibrate.runs.Run` records.

- a CSV in aisize's reference columns (``data/validation/serving_load.csv`` and kin);
- ``vllm bench serve --save-result`` JSON and SGLang ``bench_serving`` JSONL (one result per line):
  ``output_throughput`` [tokens/s], ``mean_tpot_ms``, ``mean_ttft_ms``, ``max_concurrency`` or
  ``request_rate``, ``total_input_tokens`` / ``total_output_tokens`` over ``completed`` requests;
- AIPerf / genai-perf exports (``profile_export*.json``): ``output_token_throughput``,
  ``inter_token_latency`` and ``time_to_first_token`` [ms], ``input_sequence_length`` and
  ``output_sequence_length`` (each a dict with ``avg``), the concurrency in ``input_config``;
- InferenceX results (``process_result.py`` output): ``output_tput_per_gpu``, ``mean_tpot`` and
  ``mean_ttft`` [s], ``tp``, ``ep``, ``conc``, ``isl``/``osl`` (flat or under ``metrics``).

What a file does not state (the GPU, the tensor parallelism, the precisions, the engine) comes
from ``defaults`` (``aisize calibrate --accelerator h100-sxm --tensor-parallel 8 ...``); a run that
still lacks one is refused with the field it needs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from aisize.calibrate.names import accelerator_id, engine_key, model_id, precision
from aisize.calibrate.runs import (MAX_GPUS, MAX_LOAD, MAX_RUNS, MAX_TOKENS, MAX_TOKENS_PER_S_PER_GPU, MAX_TPOT_S,
                                   MAX_TTFT_S, Run, bounded, check_run, read_text, table_runs)

NEEDED = ("model", "accelerator", "tensor_parallel")
MAX_CONTAINERS = 1_000_000  # JSON objects and arrays in one file: a detailed vLLM result holds ~10^4; each costs
# ~60 bytes parsed, so a file of nothing but "[]" would take 25x its size in memory
MAX_NUMBER_CHARS = 40  # digits of a JSON integer: every bound ends far below 10^40 (and Python refuses 4,300)
MAX_REQUESTS = 10**9  # requests a benchmark completed
DEFAULT_FLAGS = {"tensor_parallel": "--tensor-parallel", "gpus": "--gpus", "expert_parallel": "--expert-parallel"}


def read_runs(paths, defaults: dict | None = None, limit: int = MAX_RUNS) -> list[Run]:
    """Every run in ``paths`` (files of any format above), with ``defaults`` for what they do not state; at
    most ``limit`` runs in all. Errors read ``FILE:LINE: field=value is not allowed: range``."""
    defaults = dict(defaults or {})
    for key, flag in DEFAULT_FLAGS.items():
        if defaults.get(key) is not None:
            defaults[key] = bounded(flag, defaults[key], MAX_GPUS, whole=True)
    runs = []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        p = Path(path)
        text = read_text(p)
        if p.suffix.lower() == ".csv":
            runs += table_runs(text, p.name, limit, before=len(runs))
            continue
        records = _records(text, p.name)
        if len(runs) + len(records) > limit:
            raise ValueError(f"{p.name}: more than {limit:,} runs{' in all' if runs else ''}: the fit models "
                             f"each ~100 times; give a sample")
        runs += [_run(r, defaults, where) for where, r in records]
    if not runs:
        raise ValueError("no runs found in the files given")
    return runs


def _int_text(text: str):
    return int(text) if len(text) <= MAX_NUMBER_CHARS else math.inf  # inf: refused by name where it is used


def _records(text: str, name: str) -> list[tuple[str, object]]:
    """(where, record) of a JSON result (a record, or a list of them: ``FILE record N``) or of JSON lines
    (``FILE:LINE``)."""
    if text.count("{") + text.count("[") > MAX_CONTAINERS:
        raise ValueError(f"{name}: more than {MAX_CONTAINERS:,} JSON objects and arrays: not a benchmark result")
    try:
        data = json.loads(text, parse_int=_int_text)
        return [(f"{name} record {n}", r) for n, r in enumerate(data, 1)] if isinstance(data, list) else [
            (name, data)]
    except RecursionError:
        raise ValueError(f"{name}: JSON nested too deep to be a benchmark result") from None
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), 1):  # JSON lines (SGLang bench_serving)
        if line.strip():
            try:
                out.append((f"{name}:{n}", json.loads(line, parse_int=_int_text)))
            except RecursionError:
                raise ValueError(f"{name}:{n}: JSON nested too deep to be a benchmark result") from None
            except json.JSONDecodeError as e:
                raise ValueError(f"{name}:{n}: not JSON: {e.msg}; expected a CSV, a JSON result or JSON "
                                 f"lines") from None
    return out


def _avg(v):
    if isinstance(v, dict):
        v = v.get("avg", v.get("mean"))
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _get(rec: dict, *keys, high=None, whole=False):
    """The first of ``keys`` that holds a number (flat, under ``metrics`` or ``records``, or a dict's ``avg``),
    checked against (0, ``high``] by that key's name; None when none does."""
    for k in keys:
        for src in (rec, rec.get("metrics"), rec.get("records")):
            if isinstance(src, dict) and k in src and _avg(src[k]) is not None:
                return _avg(src[k]) if high is None else bounded(k, _avg(src[k]), high, whole)
    return None


def _text(rec: dict, *keys):
    for k in keys:
        v = rec.get(k)
        if isinstance(v, list) and v:
            v = v[0]
        if isinstance(v, str) and v.strip():
            return v
    return None


def _run(rec, defaults: dict, where: str) -> Run:
    try:
        if not isinstance(rec, dict):
            raise ValueError("a benchmark result must be a JSON object")
        return check_run(_fields(rec, defaults, where))
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _per_request(rec: dict, key: str, completed):
    total = _get(rec, key, high=MAX_TOKENS * MAX_REQUESTS)
    return bounded(f"{key} / completed", total / completed, MAX_TOKENS) if total and completed else None


def _fields(rec: dict, defaults: dict, where: str) -> Run:
    config = rec.get("input_config") if isinstance(rec.get("input_config"), dict) else {}
    per_gpu = _get(rec, "output_tput_per_gpu", high=MAX_TOKENS_PER_S_PER_GPU)
    total = _get(rec, "output_throughput", "output_token_throughput", high=MAX_TOKENS_PER_S_PER_GPU * MAX_GPUS)
    tpot_ms = _get(rec, "mean_tpot_ms", "inter_token_latency", high=1e3 * MAX_TPOT_S)
    ttft_ms = _get(rec, "mean_ttft_ms", "time_to_first_token", high=1e3 * MAX_TTFT_S)
    if tpot_ms is None and _get(rec, "mean_tpot") is not None:  # InferenceX: seconds
        tpot_ms, ttft = 1e3 * _get(rec, "mean_tpot", high=MAX_TPOT_S), _get(rec, "mean_ttft", high=MAX_TTFT_S)
        ttft_ms = 1e3 * ttft if ttft else None
    completed = _get(rec, "completed", high=MAX_REQUESTS, whole=True)
    i = _get(rec, "isl", "input_sequence_length", high=MAX_TOKENS) or _per_request(rec, "total_input_tokens", completed)
    o = _get(rec, "osl", "output_sequence_length", high=MAX_TOKENS) or _per_request(rec, "total_output_tokens",
                                                                                    completed)
    conc = _get(rec, "max_concurrency", "conc", "concurrency", high=MAX_LOAD)
    if conc is None and _avg(config.get("concurrency")) is not None:
        conc = bounded("input_config.concurrency", _avg(config.get("concurrency")), MAX_LOAD)
    rate = _get(rec, "request_rate")  # vLLM writes "inf" (or Infinity) for flat out
    rate = None if rate is None or rate == math.inf else bounded("request_rate", rate, MAX_LOAD)
    fields = {
        "model": _text(rec, "model_id", "model", "model_name") or _text(config, "model") or defaults.get("model"),
        "accelerator": _text(rec, "hw", "hardware", "gpu") or defaults.get("accelerator"),
        "tensor_parallel": _get(rec, "tp", "tensor_parallel", high=MAX_GPUS, whole=True)
        or defaults.get("tensor_parallel"),
    }
    missing = [k for k in NEEDED if not fields[k]]
    if missing:
        raise ValueError(f"the result does not say its {', '.join(missing)}: give "
                         + " ".join(f"--{k.replace('_', '-')}" for k in missing))
    if per_gpu is None and total is None:
        raise ValueError("no output throughput (output_throughput, output_token_throughput or output_tput_per_gpu)")
    if not i or not o:
        raise ValueError("no mean input/output lengths (isl/osl, total_*_tokens with completed, or "
                         "input/output_sequence_length)")
    tp = fields["tensor_parallel"]
    gpus = defaults.get("gpus") or tp
    if per_gpu is None:
        per_gpu = bounded("output throughput / gpus", total / gpus, MAX_TOKENS_PER_S_PER_GPU)
    model = model_id(fields["model"])
    acc = fields["accelerator"]
    acc = acc if acc in _catalog_ids() else accelerator_id(acc)
    wp = precision(_text(rec, "precision") or defaults.get("weight_precision") or "bf16", "weight")
    kv = precision(defaults.get("kv_precision") or "bf16", "kv")
    engine = engine_key(_text(rec, "framework", "backend", "engine") or defaults.get("engine") or "")
    ep = _get(rec, "ep", "expert_parallel", high=MAX_GPUS, whole=True) or defaults.get("expert_parallel")
    load = {"concurrency": conc} if conc else ({"requests_per_s": rate} if rate else {})
    return Run(label=f"{model} {acc} TP{tp} {wp} {round(i)}/{round(o)} "
                     + (f"C={conc:g}" if conc else (f"{rate:g} req/s" if load else "flat out")),
               model=model, accelerator=acc, engine=engine, weight_precision=wp, kv_precision=kv,
               input_tokens=max(round(i), 1), output_tokens=max(round(o), 1), gpus=gpus,
               measured_tokens_per_s_per_gpu=per_gpu, tensor_parallel=tp, expert_parallel=ep,
               measured_tpot_s=tpot_ms / 1e3 if tpot_ms else None, measured_ttft_s=ttft_ms / 1e3 if ttft_ms else None,
               source=where, **load)


def _catalog_ids():
    from aisize import catalog
    return set(catalog.accelerators.ids())
