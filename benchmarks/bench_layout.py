"""Layout search throughput: consistent configurations evaluated per second on one core.

One broadcast grid per model: TP x PP x CP x schedule (1F1B, interleaved 1F1B with 2 or
4 chunks) x micro-batch x ZeRO stage x recompute (none, selective, full on half or all of
each chunk's layers) (x EP x expert TP for DeepSeek-V3: MoE parallel folding) over eight
GPU counts and six sequence lengths (4k-128k tokens), so context parallelism, interleaving,
expert folding and partial recompute are in the grid. Times the vectorized memory and step-time evaluation plus
the ranking (aisize.training.layout.evaluate_grid and rank_layouts); counts only
consistent layouts. Prints figures; asserts nothing.
Run: OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_layout.py
"""

from __future__ import annotations

import time

import numpy as np

from aisize import catalog
from aisize.training.layout import evaluate_grid, layout_grid, rank_layouts
from aisize.training.setup import default_links, engine

GPU_COUNTS = np.array([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536])
GLOBAL_BATCH = 2**13
SEQ_LENS = 4096 * 2 ** np.arange(6)  # 4k-128k


def bench(model_id: str, gpu_id: str = "h100-sxm", repeats: int = 3) -> tuple[int, float]:
    model, gpu = catalog.transformers[model_id], catalog.accelerators[gpu_id]
    t0 = time.perf_counter()
    grid = layout_grid(GPU_COUNTS, heads=model.heads, layers=model.layers, global_batch=GLOBAL_BATCH,
                       seq_len=SEQ_LENS, scaleup_domain=gpu.scaleup_domain, experts=model.experts,
                       expert_ffn=model.moe_ffn_hidden or 0, micro_batches=(1, 2, 4), stages=(0, 2, 3))
    build = time.perf_counter() - t0
    eng = engine(gpu, precision="bf16", framework="fsdp", optimizer="adamw", links=default_links(gpu))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        mem, step = evaluate_grid(model, grid, eng, framework="fsdp", compiled=True)
        rank_layouts(grid, mem, step, gpu.memory_bytes * 0.95, top=10)
        best = min(best, time.perf_counter() - t0)
    n = grid.count
    print(f"{model_id:>14}: {n:>10,} consistent configurations (grid of {grid.valid.size:,} points), built in "
          f"{build:.3f} s, evaluated and ranked in {best:.3f} s -> {n / best:,.0f} configurations/s "
          f"({n / (best + build):,.0f} incl. grid build)")
    return n, best


if __name__ == "__main__":
    total_n = total_s = 0.0
    for mid in ("deepseek-v3", "llama-3-70b", "llama-3.1-405b"):
        n, s = bench(mid)
        total_n, total_s = total_n + n, total_s + s
    print(f"overall: {total_n / total_s:,.0f} configurations evaluated per second")
