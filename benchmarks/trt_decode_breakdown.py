"""DeepSeek-R1 NVFP4 on 4 x B200 at TP 4 (fp8 KV, no EP, no attention DP) under TensorRT-LLM and SGLang: aisize's
decode step by kind of work, the prefill stall on top of it, and the measured generation-MLA kernels beside the
roofline's decode attention (issue 48; docs/calibration-trt-decode.md).

For each engine, input length (922 or 7,373 tokens, 922 out) and concurrency of the public fixed-concurrency rows
(``serving_load.csv`` rows 7, 8 and 32 to 48, as ``check_serving_load.py`` maps them), at the estimate's own batch,
in ms per step:

- ``attn``, ``GEMMs`` (linear layers and head), ``MoE`` (routed experts), ``elem`` (elementwise), ``comm``
  (all-reduces), ``fixed`` (per-layer and per-MoE-layer fixed time), ``host``: a decode-only iteration
  (``ServingEstimate.iteration_breakdown``, shipped calibration);
- ``step``: that iteration's wall time; ``stall``: TPOT less ``step``, what the prompts prefilled in between add to
  every decoding token (the share of iterations carrying a prefill times their excess, :mod:`aisize.serving.steady`);
- ``MLA trt`` / ``MLA sgl``: the same decode attention from each engine's measured ``generation_mla`` table (B200,
  TensorRT-LLM 1.3.0rc20 and SGLang 0.5.14, bfloat16 compute over the fp8 cache: the only fp8-KV variant measured),
  all 61 layers at the batch and mean context (:func:`aisize.serving.kernel_attention.decode_seconds`).

Run: ``python benchmarks/trt_decode_breakdown.py`` (``--engine`` and ``--input`` narrow it).
"""

from __future__ import annotations

import argparse

import numpy as np

from aisize import serving
from aisize.serving import kernel_attention

GPU, MODEL, TP, OUTPUT = "b200", "deepseek-r1", 4, 922
#: (input tokens, concurrencies) of the public rows: SGLang 4 to 64, TensorRT-LLM 16 to 256
ROWS = {"sglang": {922: (4, 8, 16, 32, 64), 7373: (4, 8, 16, 32)},
        "trtllm": {922: (16, 32, 64, 128, 256), 7373: (16, 32, 64, 128, 256)}}
PARTS = {"attn": ("decode_attention_seconds",), "GEMMs": ("linear_seconds", "head_seconds"),
         "MoE": ("experts_seconds",), "elem": ("elementwise_seconds",), "comm": ("communication_seconds",),
         "fixed": ("overhead_seconds",), "host": ("host_seconds",)}


def estimate(engine: str, input_tokens: int, concurrency: int):
    """The shipped estimate of one replica as the public check maps the row (TP 4, EP 1, no attention DP)."""
    return serving.estimate(MODEL, GPU, tensor_parallel=TP, weight_precision="nvfp4", kv_precision="fp8",
                            input_tokens=input_tokens, output_tokens=OUTPUT, concurrency=concurrency, engine=engine,
                            expert_parallel=1, attention_dp=1)


def step(est) -> dict:
    """ms per decode step by kind of work, the step's wall time and the prefill stall on top of it."""
    bd = est.iteration_breakdown
    out = {name: 1e3 * sum(bd[k] for k in keys) for name, keys in PARTS.items()}
    gpu = sum(v for k, v in bd.items() if k != "host_seconds")
    out["step"] = 1e3 * max(gpu, bd["host_seconds"])
    out["stall"] = 1e3 * est.tpot_s - out["step"]
    return out


def measured_mla_ms(est, engine_tables: str) -> float:
    """All layers' decode attention at the estimate's batch and mean context from ``engine_tables``'s measured
    ``generation_mla`` (nan where no table covers it) [ms]."""
    ctx = est.input_tokens + 0.5 * est.output_tokens
    sec, ok = kernel_attention.decode_seconds(est.replica.costs, GPU, engine_tables, max(est.batch_size, 1.0), ctx,
                                              TP, np.nan)
    return float(1e3 * sec) if bool(ok) else float("nan")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=sorted(ROWS), help="one engine only")
    ap.add_argument("--input", type=int, choices=(922, 7373), help="one input length only")
    a = ap.parse_args(argv)
    cols = list(PARTS) + ["step", "stall"]
    print(f"{'engine':7s} {'in':>5s} {'C':>4s} {'batch':>6s} {'TPOT':>6s} | " + " ".join(f"{c:>6s}" for c in cols)
          + f" | {'MLA trt':>7s} {'MLA sgl':>7s}")
    for engine, by_input in ROWS.items():
        if a.engine and engine != a.engine:
            continue
        for input_tokens, concurrencies in by_input.items():
            if a.input and input_tokens != a.input:
                continue
            for c in concurrencies:
                est = estimate(engine, input_tokens, c)
                parts = step(est)
                print(f"{engine:7s} {input_tokens:5d} {c:4d} {est.batch_size:6.1f} {1e3 * est.tpot_s:6.2f} | "
                      + " ".join(f"{parts[k]:6.2f}" for k in cols)
                      + f" | {measured_mla_ms(est, 'trtllm'):7.2f} {measured_mla_ms(est, 'sglang'):7.2f}")


if __name__ == "__main__":
    main()
