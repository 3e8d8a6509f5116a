"""Layout search throughput: configurations evaluated per second on one core.

Builds a large grid (DeepSeek-V3 and Llama-3-70B, TP x PP x DP x EP x micro-batch x
ZeRO stage x recompute over many GPU counts, swept over 64 sequence lengths so the
arrays hold about a million configurations), then times the vectorized memory and
step-time evaluation plus ranking. Prints figures; asserts nothing.
Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_layout.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from aisize import catalog
from aisize.models import transformer_params
from aisize.layout import evaluate_layouts, layout_frame, layout_grid
from aisize.memory.training import transformer_memory_inputs
from aisize.precision import peak_flops_per_s
from aisize.units import bidirectional_to_per_direction

GPU_COUNTS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
GLOBAL_BATCH = 2**16
SEQ_LENS = np.arange(1, 65) * 1024


def bench(model_id: str, gpu_id: str = "h100-sxm", repeats: int = 3) -> tuple[int, float]:
    model, gpu = catalog.transformers[model_id], catalog.accelerators[gpu_id]
    t0 = time.perf_counter()
    grids = [layout_grid(n, heads=model.heads, layers=model.layers, global_batch=GLOBAL_BATCH,
                         scaleup_domain=gpu.scaleup_domain, micro_batches=2 ** np.arange(9),
                         experts=model.experts) for n in GPU_COUNTS]
    grid = {k: np.tile(np.concatenate([g[k] for g in grids]), SEQ_LENS.size) for k in grids[0]}
    seq_len = np.repeat(SEQ_LENS, grid["tp"].size // SEQ_LENS.size)
    build = time.perf_counter() - t0
    pc = transformer_params(model)
    up = bidirectional_to_per_direction(gpu.scaleup_bidirectional_bytes_per_s)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        inputs = transformer_memory_inputs(model, pp=grid["pp"])
        mem, step = evaluate_layouts(grid, inputs=inputs, seq_len=seq_len, global_batch=GLOBAL_BATCH,
                                     precision="bf16", optimizer="adamw", framework="zero",
                                     active_params=pc.active, total_params=pc.total,
                                     routed_params=inputs["expert_params"] * model.layers,
                                     experts_per_token=model.experts_per_token,
                                     peak=peak_flops_per_s(gpu, "bf16"), up_bw=up, out_bw=50e9,
                                     domain=gpu.scaleup_domain)
        layout_frame(grid, mem, step, gpu.memory_bytes * 0.95, GLOBAL_BATCH * seq_len, top=10, pd=pd)
        best = min(best, time.perf_counter() - t0)
    n = grid["tp"].size
    print(f"{model_id:>12}: {n:>9,} configurations, grid built in {build:.3f} s, evaluated and ranked in "
          f"{best:.3f} s -> {n / best:,.0f} configurations/s ({n / (best + build):,.0f} incl. grid build)")
    return n, best


if __name__ == "__main__":
    total_n = total_s = 0.0
    for mid in ("deepseek-v3", "llama-3-70b"):
        n, s = bench(mid)
        total_n, total_s = total_n + n, total_s + s
    print(f"overall: {total_n / total_s:,.0f} configurations evaluated per second")
