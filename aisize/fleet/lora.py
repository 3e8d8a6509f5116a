"""Many LoRA adapters on one base model: their memory, the batched-LoRA kernel's cost, and misses.

**Memory.** An adapter on a linear layer W (d_in x d_out) adds A (d_in x r) and B (r x d_out):
r·(d_in + d_out) parameters [1] (:func:`aisize.memory.lora_adapter_params`). ``targets``
"attention" adapts q, k, v and o; "all-linear" also the MLP (gate, up, down for SwiGLU) of every
dense layer (routed experts are not adapted). With tensor parallelism each GPU holds 1/t of
every adapter. Adapters live in three tiers: up to ``hbm_adapters`` per replica in GPU memory
(taken from the KV-cache pool), up to ``host_adapters`` in host RAM, the rest in storage.

**Kernel cost.** A batch of B requests using D distinct adapters runs one batched LoRA kernel per
adapted layer (Punica's SGMV [2], S-LoRA's MBGMM [3]): it reads each distinct adapter once and
computes 2·r·(d_in + d_out) FLOPs per token. At decode that is memory-bound, so an iteration
takes longer by D x adapter bytes / (HBM x achieved share) (or its FLOPs at the bf16 peak,
whichever is longer). With request popularity p_i, the expected distinct adapters in a batch of
B is Σ_i 1 − (1 − p_i)^B, the same occupancy formula as MoE experts.

**Misses.** An adapter's request finds it in GPU memory, else in host RAM (a PCIe copy, each
GPU its shard), else in storage (a read, then the copy). Each cache keeps the most recently
used adapters: under independent requests its hit rate follows Che's approximation [4]:
adapter i is resident with probability 1 − exp(−p_i·T_C), T_C solving Σ_i 1 − exp(−p_i·T_C) = C.
The mean time-to-first-token grows by the miss shares times those load times.

References
----------
.. [1] Hu et al. 2021, "LoRA", arXiv:2106.09685, sec. 4.
.. [2] Chen et al. 2024, "Punica: Multi-Tenant LoRA Serving", MLSys 2024, arXiv:2310.18547
   (SGMV kernel; 12x throughput over systems without batched LoRA, "adding 2 ms latency per token").
.. [3] Sheng et al. 2024, "S-LoRA: Serving Thousands of Concurrent LoRA Adapters", MLSys 2024,
   arXiv:2311.03285 (unified paging of adapters and KV cache; adapters in host RAM, loaded on demand).
.. [4] H. Che, Y. Tung, Z. Wang, "Hierarchical Web caching systems: modeling, design and
   experimental results", IEEE JSAC 20(7), 2002; C. Fricker, P. Robert, J. Roberts, "A versatile
   and accurate approximation for LRU cache performance", ITC 24, 2012.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aisize import catalog, checks, models
from aisize.memory import lora_adapter_params
from aisize.precision import bytes_per_element, peak_flops_per_s

TARGETS = ("attention", "all-linear")
MAX_ADAPTERS = 1_000_000


def adapter_params(model, rank, targets: str = "all-linear") -> float:
    """Parameters of one adapter on ``model`` (every layer) [count]."""
    arch = models.resolve(model)
    checks.choice("targets", targets, TARGETS)
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    attention = [(h, q), (h, kv), (h, kv), (q, h)]
    total = lora_adapter_params(rank, arch.layers, attention)
    if targets == "all-linear":
        dense = arch.layers - models.moe_layers(arch)
        f = arch.ffn_hidden
        mlp = [(h, f), (h, f), (f, h)] if arch.ffn_type == "swiglu" else [(h, f), (f, h)]
        if dense:
            total += lora_adapter_params(rank, dense, mlp)
    return float(total)


def popularity(adapters, zipf_exponent=1.0) -> np.ndarray:
    """Request shares of ``adapters`` adapters, most popular first: p_i ∝ i^(−s) (s = 0: uniform)."""
    n = int(checks.scalar("adapters", checks.integer("adapters", adapters, high=MAX_ADAPTERS)))
    s = checks.scalar("zipf_exponent", checks.number("zipf_exponent", zipf_exponent, low=0.0, high=5.0))
    w = np.arange(1, n + 1, dtype=float) ** (-s)
    return w / w.sum()


def lru_hit_rate(p: np.ndarray, capacity) -> float:
    """Share of requests that find their adapter in an LRU cache of ``capacity`` adapters (Che [4])."""
    c = checks.scalar("capacity", checks.non_negative("capacity", capacity))
    if c <= 0:
        return 0.0
    if c >= p.size:
        return 1.0
    lo, hi = 0.0, 1.0
    while np.sum(1.0 - np.exp(-p * hi)) < c:
        hi *= 2.0
    for _ in range(100):  # bisection on the characteristic time T_C
        mid = 0.5 * (lo + hi)
        if np.sum(1.0 - np.exp(-p * mid)) < c:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi)
    return float(np.sum(p * (1.0 - np.exp(-p * t))))


def distinct_adapters(p: np.ndarray, batch):
    """Expected distinct adapters among ``batch`` requests drawn with shares ``p`` (vectorized over batch)."""
    b = np.asarray(checks.non_negative("batch", batch), dtype=float)
    return np.sum(1.0 - (1.0 - p[:, None]) ** b.reshape(1, -1), axis=0).reshape(b.shape)


@dataclass(frozen=True)
class LoraServing:
    """Adapters on one replica: memory, kernel cost per iteration, miss rates and load times."""

    adapter_params: float  # one adapter, whole model
    adapter_bytes: float  # one adapter, whole model, at its precision
    hbm_adapters: int  # resident per replica
    hbm_bytes_per_gpu: float  # taken from the KV pool on each GPU
    host_adapters: int  # cached in host RAM per server
    host_bytes: float
    hbm_hit_rate: float
    host_hit_rate: float  # of all requests: missed in HBM, found in host RAM
    storage_share: float  # of all requests: read from storage
    load_from_host_seconds: float
    load_from_storage_seconds: float
    added_ttft_mean_seconds: float
    distinct_per_iteration: float  # at the batch
    added_iteration_seconds: float  # the batched-LoRA kernels at the batch
    iteration_seconds: float  # the base model's iteration at the batch (given)

    @property
    def capacity_factor(self) -> float:
        """Share of the replica's throughput left with adapters (the iteration stretched by the kernels)."""
        return self.iteration_seconds / (self.iteration_seconds + self.added_iteration_seconds)


def lora_serving(model, accelerator, *, adapters, rank, zipf_exponent=1.0, targets="all-linear",
                 precision="bf16", hbm_adapters, host_adapters, batch, iteration_seconds, tensor_parallel=1,
                 pcie_bytes_per_s, storage_bytes_per_s, memory_efficiency) -> LoraServing:
    """Adapters served by one replica of ``tensor_parallel`` GPUs at a batch of ``batch`` requests.

    Parameters
    ----------
    model : catalog id or model record; accelerator : catalog accelerator id
    adapters, rank, zipf_exponent, targets, precision : the adapter set (count, LoRA rank, popularity
        exponent, adapted layers, storage format)
    hbm_adapters : adapters one replica keeps in GPU memory (vLLM's ``--max-loras``)
    host_adapters : adapters one server keeps in host RAM (vLLM's ``--max-cpu-loras``)
    batch : requests in flight per iteration; iteration_seconds : the base model's iteration at it [s]
    pcie_bytes_per_s : host-to-GPU copy rate per GPU [B/s]; storage_bytes_per_s : a replica's read rate [B/s]
    memory_efficiency : share of the HBM bandwidth streaming kernels reach (the serving calibration's)
    """
    acc = catalog.accelerators[accelerator] if isinstance(accelerator, str) else accelerator
    n = int(checks.scalar("adapters", checks.integer("adapters", adapters, high=MAX_ADAPTERS)))
    tp = int(checks.scalar("tensor_parallel", checks.integer("tensor_parallel", tensor_parallel, high=4096)))
    k_hbm = int(checks.scalar("hbm_adapters", checks.integer("hbm_adapters", hbm_adapters, low=1, high=MAX_ADAPTERS)))
    k_host = int(checks.scalar("host_adapters", checks.integer("host_adapters", host_adapters, low=0,
                                                                high=MAX_ADAPTERS)))
    b = checks.scalar("batch", checks.positive("batch", batch, high=1e6))
    t_base = checks.scalar("iteration_seconds", checks.positive("iteration_seconds", iteration_seconds))
    pcie = checks.scalar("pcie_bytes_per_s", checks.positive("pcie_bytes_per_s", pcie_bytes_per_s))
    store = checks.scalar("storage_bytes_per_s", checks.positive("storage_bytes_per_s", storage_bytes_per_s))
    eff = checks.scalar("memory_efficiency", checks.fraction("memory_efficiency", memory_efficiency))
    params = adapter_params(model, rank, targets)
    size = params * bytes_per_element(precision, name="precision")
    p = popularity(n, zipf_exponent)
    in_hbm, in_host = min(k_hbm, n), min(max(k_host, k_hbm), n)
    hit_hbm = lru_hit_rate(p, in_hbm)
    hit_any = lru_hit_rate(p, in_host)
    t_host = size / tp / pcie
    t_storage = size / store + t_host
    d = float(distinct_adapters(p, b))
    d = min(d, float(in_hbm))  # at most the resident adapters serve one iteration
    per_gpu_bytes = d * size / tp
    flops = 2.0 * params * b / tp
    kernel = max(per_gpu_bytes / (acc.memory_bandwidth_bytes_per_s * eff), flops / peak_flops_per_s(acc, "bf16"))
    miss_host, miss_storage = max(hit_any - hit_hbm, 0.0), 1.0 - hit_any
    return LoraServing(params, size, in_hbm, in_hbm * size / tp, in_host, in_host * size, hit_hbm, miss_host,
                       miss_storage, t_host, t_storage, miss_host * t_host + miss_storage * t_storage, d, kernel,
                       t_base)


def adapters_that_fit(free_bytes_per_gpu, adapter_bytes, tensor_parallel=1) -> int:
    """How many adapters fit in ``free_bytes_per_gpu`` on each of a replica's GPUs [count]."""
    free = checks.scalar("free_bytes_per_gpu", checks.non_negative("free_bytes_per_gpu", free_bytes_per_gpu))
    size = checks.scalar("adapter_bytes", checks.positive("adapter_bytes", adapter_bytes))
    tp = checks.scalar("tensor_parallel", checks.positive("tensor_parallel", tensor_parallel))
    return int(math.floor(free / (size / tp) + 1e-9))
