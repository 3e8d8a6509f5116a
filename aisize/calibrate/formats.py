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
from aisize.calibrate.runs import Run, read_table

MAX_BYTES = 50_000_000  # a results file larger than this is not a benchmark export
NEEDED = ("model", "accelerator", "tensor_parallel")


def read_runs(paths, defaults: dict | None = None) -> list[Run]:
    """Every run in ``paths`` (files of any format above), with ``defaults`` for what they do not state."""
    runs = []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"runs file {str(path)[:200]!r} does not exist")
        if p.stat().st_size > MAX_BYTES:
            raise ValueError(f"runs file {p.name!r} is larger than {MAX_BYTES // 10**6} MB: not a benchmark export")
        if p.suffix.lower() == ".csv":
            runs += read_table(p)
            continue
        text = p.read_text(encoding="utf-8")
        records = _records(text, p.name)
        runs += [_run(r, defaults or {}, f"{p.name} record {n}") for n, r in enumerate(records, 1)]
    if not runs:
        raise ValueError("no runs found in the files given")
    return runs


def _records(text: str, where: str) -> list[dict]:
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), 1):  # JSON lines (SGLang bench_serving)
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{where} line {n} is not JSON: {e.msg}; expected a CSV, a JSON result or "
                                 f"JSON lines") from None
    return out


def _avg(v):
    if isinstance(v, dict):
        v = v.get("avg", v.get("mean"))
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _get(rec: dict, *keys):
    for k in keys:
        for src in (rec, rec.get("metrics") or {}, rec.get("records") or {}):
            if isinstance(src, dict) and k in src and _avg(src[k]) is not None:
                return _avg(src[k])
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
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: a benchmark result must be a JSON object")
    config = rec.get("input_config") or {}
    per_gpu = _get(rec, "output_tput_per_gpu")
    total = _get(rec, "output_throughput", "output_token_throughput")
    tpot_ms = _get(rec, "mean_tpot_ms", "inter_token_latency")
    ttft_ms = _get(rec, "mean_ttft_ms", "time_to_first_token")
    if tpot_ms is None and _get(rec, "mean_tpot") is not None:  # InferenceX: seconds
        tpot_ms, ttft_ms = 1e3 * _get(rec, "mean_tpot"), 1e3 * (_get(rec, "mean_ttft") or 0.0) or None
    completed = _get(rec, "completed")
    i = _get(rec, "isl", "input_sequence_length") or (
        _get(rec, "total_input_tokens") / completed if completed and _get(rec, "total_input_tokens") else None)
    o = _get(rec, "osl", "output_sequence_length") or (
        _get(rec, "total_output_tokens") / completed if completed and _get(rec, "total_output_tokens") else None)
    conc = _get(rec, "max_concurrency", "conc", "concurrency") or _avg(config.get("concurrency"))
    rate = _get(rec, "request_rate")
    fields = {
        "model": _text(rec, "model_id", "model", "model_name") or _text(config, "model") or defaults.get("model"),
        "accelerator": _text(rec, "hw", "hardware", "gpu") or defaults.get("accelerator"),
        "tensor_parallel": _get(rec, "tp", "tensor_parallel") or defaults.get("tensor_parallel"),
    }
    missing = [k for k in NEEDED if not fields[k]]
    if missing:
        raise ValueError(f"{where}: the result does not say its {', '.join(missing)}: give "
                         + " ".join(f"--{k.replace('_', '-')}" for k in missing))
    if per_gpu is None and total is None:
        raise ValueError(f"{where}: no output throughput (output_throughput, output_token_throughput or "
                         f"output_tput_per_gpu)")
    if not i or not o:
        raise ValueError(f"{where}: no mean input/output lengths (isl/osl, total_*_tokens with completed, or "
                         f"input/output_sequence_length): give --input-tokens and --output-tokens")
    tp = int(fields["tensor_parallel"])
    gpus = int(defaults.get("gpus") or tp)
    model = model_id(fields["model"])
    acc = fields["accelerator"]
    acc = acc if acc in _catalog_ids() else accelerator_id(acc)
    wp = precision(_text(rec, "precision") or defaults.get("weight_precision") or "bf16", "weight")
    kv = precision(defaults.get("kv_precision") or "bf16", "kv")
    engine = engine_key(_text(rec, "framework", "backend", "engine") or defaults.get("engine") or "")
    ep = _get(rec, "ep", "expert_parallel") or defaults.get("expert_parallel")
    load = {"concurrency": conc} if conc else ({"requests_per_s": rate} if rate and math.isfinite(rate) else {})
    return Run(label=f"{model} {acc} TP{tp} {wp} {round(i)}/{round(o)} "
                     + (f"C={conc:g}" if conc else (f"{rate:g} req/s" if load else "flat out")),
               model=model, accelerator=acc, engine=engine, weight_precision=wp, kv_precision=kv,
               input_tokens=max(round(i), 1), output_tokens=max(round(o), 1), gpus=gpus,
               measured_tokens_per_s_per_gpu=per_gpu if per_gpu is not None else total / gpus,
               tensor_parallel=tp, expert_parallel=int(ep) if ep else None,
               measured_tpot_s=tpot_ms / 1e3 if tpot_ms else None, measured_ttft_s=ttft_ms / 1e3 if ttft_ms else None,
               source=where, **load)


def _catalog_ids():
    from aisize import catalog
    return set(catalog.accelerators.ids())
