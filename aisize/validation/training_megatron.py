"""NVIDIA's published Megatron-Core pre-training runs (NeMo, Megatron-Bridge) vs :func:`aisize.training.estimate`.

``data/validation/training_megatron.csv`` is a copy of ``reference/training_megatron.csv``:
the NeMo 24.07 and Megatron-Bridge 25.11 performance summaries (H100, B200, GB200, GB300),
with the settings of the public recipe files beside each row. A row becomes one
:func:`~aisize.training.estimate` call exactly as ``tools/check_training_megatron.py`` builds it
(that tool is the contract): Megatron-Core DDP with the distributed optimizer (Megatron-FSDP rows
as framework ``fsdp``), the table's TP/PP/CP/VP/EP, and, where the recipe matches the run's layout,
its recompute, CPU offload, gradient-reduce precision, TP overlap, MoE dispatcher, expert TP,
CUDA graphs and pipeline-split settings. Models not in the catalog are the architectures of
``data/validation/megatron_models.csv`` (NeMo's configs).
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from aisize.validation.cases import validation_dir

# Megatron-Bridge / NeMo model names -> catalog ids (as tools/check_training_megatron.py maps them)
CATALOG_MODELS = {
    "GPT3-175B": "gpt-3-175b", "LLAMA2-7B": "llama-2-7b", "LLAMA2-13B": "llama-2-13b", "LLAMA2-70B": "llama-2-70b",
    "LLAMA3-8B": "llama-3-8b", "LLAMA3_8B": "llama-3-8b", "LLAMA3-70B": "llama-3-70b", "LLAMA3_70B": "llama-3-70b",
    "LLAMA3-405B": "llama-3.1-405b", "LLAMA3.1_405B": "llama-3.1-405b", "Mixtral-8x7B": "mixtral-8x7b",
    "DeepSeekV3": "deepseek-v3", "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b", "Kimi_K2": "kimi-k2"}
GPUS = {"DGX-H100": "h100-sxm", "DGX-B200": "b200", "DGX-B300": "b300", "DGX-GB200": "gb200", "DGX-GB300": "gb300"}
PRECISIONS = {"FP8": "fp8", "FP8-CS": "fp8", "FP8-MX": "mxfp8", "MXFP8": "mxfp8", "NVFP4": "nvfp4", "BF16": "bf16"}
MUON_MODELS = {"Kimi_K2"}
APPLIED_LAYOUTS = ("yes", "partial")  # recipe settings apply where the recipe's layout matches the run's


@lru_cache(maxsize=2)
def megatron_rows(path: str | None = None) -> tuple[dict, ...]:
    """The rows of ``training_megatron.csv`` as dicts of text."""
    frame = pd.read_csv(path or validation_dir() / "training_megatron.csv", dtype=str, keep_default_na=False)
    return tuple(frame.to_dict("records"))


@lru_cache(maxsize=64)
def megatron_model(name: str):
    """The Transformer record of a Megatron-Bridge model name (catalog, or megatron_models.csv)."""
    from aisize import models

    if name in CATALOG_MODELS:
        return models.resolve(CATALOG_MODELS[name])
    frame = pd.read_csv(validation_dir() / "megatron_models.csv", dtype=str, keep_default_na=False)
    match = frame[frame["name"] == name]
    if match.empty:
        raise ValueError(f"model {name!r} has no aisize mapping")
    row = match.iloc[0].to_dict()
    fields = {k: v for k, v in row.items() if k != "name"}
    for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "max_seq"):
        fields[k] = int(fields[k])
    for k in ("tied_embeddings", "bias"):
        fields[k] = fields[k] == "true"
    return models.from_fields(fields)


def _int(v, default=1):
    v = (v or "").strip()
    return int(v) if v else default


def megatron_kwargs(row: dict) -> tuple[object, str, dict]:
    """(model record, accelerator id, :func:`aisize.training.estimate` keywords) of one row."""
    rec = megatron_model(row["model"])
    gpus, gbs, mbs, seq = (_int(row[k]) for k in ("gpus", "global_batch", "micro_batch", "seq_len"))
    tp, pp, cp, vp, ep = (_int(row[k]) for k in ("tp", "pp", "cp", "vp", "ep"))
    dp = gpus // (tp * pp * cp)
    ga = gbs // (mbs * dp)
    fsdp = _int(row.get("fsdp"), 0) > 0
    kw = dict(gpus=gpus, tensor_parallel=tp, pipeline_parallel=pp, context_parallel=cp, expert_parallel=ep,
              global_batch=gbs, seq_len=seq, recompute="none", precision=PRECISIONS[row["precision"].strip()],
              framework="fsdp" if fsdp else "megatron", zero_stage=3 if fsdp else 1, compiled=fsdp,
              async_tp=tp > 1, cp_method="ring", optimizer="sgd" if row["model"] in MUON_MODELS else "adamw")
    if pp > 1:
        kw.update(micro_batch=gbs // dp, pipeline_microbatches=ga)
    else:
        kw.update(micro_batch=mbs)
    kw.update(schedule="interleaved-1f1b", virtual_stages=vp) if pp > 1 and vp > 1 else kw.update(schedule="1f1b")
    if row.get("layout_match", "").strip() in APPLIED_LAYOUTS:
        _apply_recipe(kw, row, rec.layers, row["model"])
    return rec, GPUS[row["hardware"]], kw


def _apply_recipe(kw: dict, rec: dict, layers: int, model: str) -> None:
    """The recipe columns as estimate() keywords (tools/check_training_megatron.py ``apply_recipe``)."""
    pp = kw.get("pipeline_parallel", 1)
    vp = kw.get("virtual_stages", 1) if kw.get("schedule") == "interleaved-1f1b" else 1
    gran = (rec.get("recompute_granularity") or "").strip()
    method = (rec.get("recompute_method") or "").strip()
    nlay = (rec.get("recompute_num_layers") or "").strip()
    mods = tuple(sorted(m.strip() for m in (rec.get("recompute_modules") or "").split(";") if m.strip()))
    if gran == "full":
        chunk = max(1, -(-layers // (pp * vp)))
        kw["recompute"] = "full"
        if method != "uniform" and nlay and int(nlay) < chunk:
            kw["recompute_layers"] = int(nlay)
    elif gran == "selective":
        kw["recompute"] = "selective"
        if mods != ("core_attn",):
            kw["recompute_modules"] = mods
    tpo = (rec.get("tp_comm_overlap") or "").strip()
    if tpo in ("true", "false") and kw["tensor_parallel"] > 1:
        kw["async_tp"] = tpo == "true"
    if (rec.get("use_distributed_optimizer") or "").strip() == "false" and kw["framework"] == "megatron" \
            and model not in MUON_MODELS:
        kw["zero_stage"] = 0
    off = (rec.get("cpu_offload_layers") or "").strip()
    if off and off != "0":
        kw["activation_offload_layers"] = int(off)
    grad = (rec.get("grad_reduce_in_fp32") or "").strip()
    if grad in ("true", "false"):
        kw["grad_reduce_precision"] = "fp32" if grad == "true" else "bf16"
    disp = (rec.get("moe_token_dispatcher") or "").strip()
    if disp:
        kw["moe_dispatcher"] = "flex" if disp.startswith("flex") else disp
    etp = (rec.get("expert_tensor_parallel") or "").strip()
    if etp:
        kw["expert_tensor_parallel"] = int(etp)
    graphs = (rec.get("cuda_graphs") or "").strip()
    if graphs:
        kw["cuda_graphs"] = not graphs.startswith("none")
    for col in ("embedding_in_pipeline_split", "loss_in_pipeline_split"):
        if (rec.get(col) or "").strip() == "true":
            kw[col] = True


def megatron_table(path: str | None = None) -> pd.DataFrame:
    """Tokens/s per GPU of every Megatron-Core row: published vs predicted, and the memory verdict.

    A published run ran, so aisize should say it fits; where it does not, the row's description says
    so with the peak it predicts (the validation page shows it beside the error).
    """
    from aisize.training import estimate
    from aisize.validation.training import COLUMNS, TOKENS_TOLERANCE_PCT, _layout_text, _row

    rows = []
    for r in megatron_rows(path):
        model, gpu, kw = megatron_kwargs(r)
        est = estimate(model, gpu, **kw)
        case = f"{r['id']} {r['model']} {r['hardware']} {r['precision']} {r['gpus']} GPUs"
        fit = "" if est.fits else (f"aisize: does not fit ({est.peak_memory_bytes / 2**30:.0f} GiB of "
                                   f"{est.memory_capacity_bytes / 2**30:.0f})")
        note = "; ".join(x for x in (r["source_note"].split(";")[0], fit) if x)
        layout = _layout_text(kw) + f", TP{kw['tensor_parallel']} PP{kw['pipeline_parallel']} EP{kw['expert_parallel']}"
        rows.append(_row(case, "tokens/s per GPU", float(r["tokens_per_s_per_gpu"]), est.tokens_per_s_per_gpu,
                         "tokens/s", TOKENS_TOLERANCE_PCT, layout, r["source_url"]) | {"note": note})
    return pd.DataFrame(rows, columns=[*COLUMNS, "note"])
