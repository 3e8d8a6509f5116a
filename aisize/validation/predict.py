"""One predictor per kind of validation case: aisize's engine applied to a case's inputs.

Each predictor takes the parsed ``inputs`` of a row of ``data/validation/cases.csv``
and returns a :class:`Prediction` in base units (bytes, FLOP, GPU-seconds, B/s,
1/s, ratio). Predictors only call the engine; no formula lives here. Where the
source does not publish an input aisize needs (an MFU, a throughput), the
prediction is NaN and ``implied`` says what the published figure implies instead
(an MFU), rather than faking an error.

References
----------
.. [1] the ``source`` column of each case; the engine functions' own references.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from aisize import catalog
from aisize import format as F
from aisize.models import attention_dim, transformer_params
from aisize.compute import flops_per_token, seconds_from_throughput, training_flops
from aisize.memory.activations import activation_constants, layer_activation_bytes
from aisize.memory.inference import transformer_kv_bytes_per_token, weight_bytes
from aisize.memory.states import model_states
from aisize.precision import peak_flops_per_s
from aisize.serving import CALIBRATION, decode_step
from aisize.storage.checkpoint import checkpoint_size
from aisize.storage.demand import mlperf_read_demand
from aisize.training import TRAINING_FLOPS_PER_FORWARD_FLOP, samples_per_s_from_flops
from aisize.units import TFLOP

# Transformer fields a case may override on a catalog model (e.g. MLPerf's 128-head Llama 3 70B).
OVERRIDABLE = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab")
NEEDS_MFU = "needs MFU/throughput"


@dataclass(frozen=True)
class Prediction:
    """aisize's figure for one case, in base units; NaN when an input is missing."""

    value: float
    assumptions: str
    implied: str = ""  # what the published figure implies (MFU, goodput)
    implied_mfu: float = math.nan  # ratio, where the case implies one


def _model(inputs: dict):
    """A catalog transformer with the case's architecture overrides applied."""
    base = catalog.transformers[inputs["model"]]
    changes = {k: int(inputs[k]) for k in OVERRIDABLE if k in inputs}
    return dataclasses.replace(base, **changes) if changes else base


def _params(inputs: dict) -> tuple[float, str]:
    """Parameters from ``params`` or from a catalog model's architecture."""
    if "params" in inputs:
        return float(inputs["params"]), f"N = {F.large(float(inputs['params']))}"
    model = _model(inputs)
    extra = ", ".join(f"{k}={inputs[k]}" for k in OVERRIDABLE if k in inputs)
    n = transformer_params(model).total
    return float(n), f"N = {n:,} from {inputs['model']} architecture" + (f" ({extra})" if extra else "")


def _peak(inputs: dict) -> tuple[float, str]:
    """Dense peak per GPU: ``peak_tflops`` as the source states it, else the catalog accelerator."""
    if "peak_tflops" in inputs:
        return float(inputs["peak_tflops"]) * TFLOP, f"peak {inputs['peak_tflops']} TFLOP/s (source)"
    acc = catalog.accelerators[inputs["accelerator"]]
    peak = peak_flops_per_s(acc, inputs["dtype"])
    return peak, f"{acc.id} {inputs['dtype']} peak {peak / TFLOP:g} TFLOP/s"


def _attention(inputs: dict) -> dict:
    return {k: float(inputs[k]) for k in ("layers", "attention_dim", "seq_len") if k in inputs}


def zero_states(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    prec, stage, dp = inputs.get("precision", "bf16"), int(inputs["zero_stage"]), int(inputs["dp"])
    states = model_states(n, precision=prec, optimizer=inputs.get("optimizer", "adamw"),
                          framework=inputs.get("framework", "zero"), zero_stage=stage, dp=dp)
    return Prediction(states.total_bytes, f"{how}; {prec} Adam, ZeRO-paper profile, stage {stage}, N_d={dp}")


def weights(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    return Prediction(weight_bytes(n, inputs["dtype"]), f"{how}; {inputs['dtype']} weights")


def activations(inputs: dict) -> Prediction:
    m = _model(inputs)
    dropout, flash = bool(inputs.get("dropout", True)), bool(inputs.get("flash_attention", False))
    c = activation_constants(m.ffn_type, m.ffn_hidden / m.hidden, dropout=dropout, flash_attention=flash)
    per_layer = layer_activation_bytes(inputs["seq_len"], inputs["micro_batch"], m.hidden, m.heads,
                                       recompute=inputs.get("recompute", "none"), constants=c)
    return Prediction(float(per_layer) * m.layers,
                      f"Korthikanti per-layer formula x {m.layers} layers; dropout={dropout}, "
                      f"flash={flash}, recompute={inputs.get('recompute', 'none')}")


def kv_cache(inputs: dict) -> Prediction:
    m, tokens = _model(inputs), float(inputs.get("tokens", 1))
    per_token = transformer_kv_bytes_per_token(m, inputs["kv_dtype"])
    return Prediction(float(per_token) * tokens,
                      f"2·L·k_v·d_h·bytes = {per_token:,.0f} B/token ({inputs['kv_dtype']}) x {tokens:g} tokens")


def param_count(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    return Prediction(n, how)


def training_flops_case(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    att = _attention(inputs)
    term = "6ND + 12·L·h·s·D" if att else "6ND"
    return Prediction(float(training_flops(n, float(inputs["tokens"]), **att)), f"{how}; {term}")


def mfu_from_throughput(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    peak, peak_how = _peak(inputs)
    per_token = flops_per_token(n, **_attention(inputs))
    mfu = float(inputs["tokens_per_s"]) * per_token / (float(inputs["gpus"]) * peak)
    return Prediction(mfu, f"{how}; (6N + 12·L·h·s) x tokens/s / (chips x peak); {peak_how}")


def gpu_hours_case(inputs: dict, published_base: float) -> Prediction:
    """Compute-only GPU-hours at the published rate; else the MFU the GPU-hours imply."""
    n, how = _params(inputs)
    tokens = float(inputs["tokens"])
    if "per_gpu_tflops" in inputs or "mfu" in inputs:
        if "per_gpu_tflops" in inputs:
            rate, rate_how = float(inputs["per_gpu_tflops"]) * TFLOP, f"{inputs['per_gpu_tflops']} TFLOP/s per GPU"
        else:
            peak, peak_how = _peak(inputs)
            rate, rate_how = float(inputs["mfu"]) * peak, f"MFU {F.pct(float(inputs['mfu']))} of {peak_how}"
        seconds = seconds_from_throughput(n, tokens, rate)  # GPU-seconds with gpus=1
        return Prediction(float(seconds), f"{how}; 6ND at {rate_how}; compute only",
                          implied=f"implied goodput {F.sig(seconds / published_base)}")
    peak, peak_how = _peak(inputs)
    mfu = float(training_flops(n, tokens, **_attention(inputs))) / (published_base * peak)
    return Prediction(math.nan, f"{how}; {peak_how}; {NEEDS_MFU}",
                      implied=f"implied MFU {F.pct(mfu)} over the published GPU-hours", implied_mfu=mfu)


def mlperf_demand(inputs: dict) -> Prediction:
    d = mlperf_read_demand(inputs["batch"], inputs["record_bytes"], inputs["computation_seconds"])
    return Prediction(d.ideal_per_gpu_bytes_per_s,
                      f"batch {inputs['batch']:g} x {inputs['record_bytes']:,.0f} B / {inputs['computation_seconds']:g} s")


def checkpoint(inputs: dict) -> Prediction:
    n, how = _params(inputs)
    size = checkpoint_size(n)
    return Prediction(size.total_bytes, f"{how}; 14 B/param (bf16 weights + fp32 master, m, v)")


def throughput(inputs: dict, published_base: float) -> Prediction:
    """Samples/s need an MFU the source does not give: report the MFU the published rate implies."""
    peak, peak_how = _peak(inputs)
    mid = inputs["model"]
    if mid in catalog.other_models:
        per_sample = TRAINING_FLOPS_PER_FORWARD_FLOP * catalog.other_models[mid].forward_per_sample_flops
        flops_how = f"3 x {per_sample / 3 / 1e9:g} GFLOP forward per image"
    else:
        m, s = _model(inputs), float(inputs["seq_len"])
        n = transformer_params(m).total
        per_sample = float(flops_per_token(n, layers=m.layers, attention_dim=attention_dim(m), seq_len=s)) * s
        flops_how = f"(6N + 12·L·h·s) x {s:g} tokens per sequence, N = {n:,} (embeddings included)"
    gpus = float(inputs["gpus"])
    mfu = published_base / (gpus * samples_per_s_from_flops(per_sample, peak, efficiency=1.0))
    return Prediction(math.nan, f"{flops_how}; {peak_how}; {gpus:g} GPUs; {NEEDS_MFU}",
                      implied=f"implied MFU {F.pct(mfu)}", implied_mfu=float(mfu))


# kind -> (predictor, required inputs, takes the published value)
def decode_throughput(inputs: dict) -> Prediction:
    """Output tokens/s of a static decode batch: batch / one decode iteration of
    :func:`aisize.serving.decode_step` at the mean context prompt + output/2 (TensorRT-LLM 1.0 calibration)."""
    dtype = inputs["dtype"]
    batch, tp = int(inputs["batch"]), int(inputs.get("tp", 1))
    ctx = float(inputs["prompt"]) + float(inputs["output"]) / 2
    step = decode_step(_model(inputs), inputs["accelerator"], batch=batch, context_tokens=ctx, tensor_parallel=tp,
                       weight_precision=dtype, kv_precision=dtype)
    flag = " (uncalibrated generation: Hopper efficiencies)" if step["uncalibrated"] else ""
    return Prediction(float(batch / step["seconds"]), f"{inputs['model']} {dtype} on {tp} x {inputs['accelerator']}, "
                      f"batch {batch}, context {ctx:g} tokens; serving iteration model, {CALIBRATION.name} "
                      f"calibration{flag}")


PREDICTORS: dict[str, tuple[Callable[..., Prediction], tuple[str, ...], bool]] = {
    "zero-states": (zero_states, ("dp", "zero_stage"), False),
    "weights": (weights, ("dtype",), False),
    "activations": (activations, ("model", "seq_len", "micro_batch"), False),
    "kv-cache": (kv_cache, ("model", "kv_dtype"), False),
    "param-count": (param_count, ("model",), False),
    "training-flops": (training_flops_case, ("tokens",), False),
    "mfu-from-throughput": (mfu_from_throughput, ("tokens_per_s", "gpus"), False),
    "gpu-hours": (gpu_hours_case, ("tokens",), True),
    "mlperf-demand": (mlperf_demand, ("batch", "record_bytes", "computation_seconds"), False),
    "checkpoint-size": (checkpoint, (), False),
    "throughput": (throughput, ("model", "gpus"), True),
    "decode-throughput": (decode_throughput, ("model", "accelerator", "dtype", "batch", "prompt", "output"), False),
}
KINDS = tuple(PREDICTORS)


def predict(kind: str, inputs: dict, published_base: float) -> Prediction:
    """aisize's prediction for a case of ``kind`` [base units]; ``published_base`` only for implied figures."""
    fn, _, wants_published = PREDICTORS[kind]
    return fn(inputs, published_base) if wants_published else fn(inputs)
