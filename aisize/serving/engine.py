"""The serving engine's scheduler limits: batch size, token budget, KV pool, admission.

A continuous-batching engine (Orca [1], vLLM [2], TensorRT-LLM) runs one
iteration at a time over every admitted sequence. Four settings bound what an
iteration may carry, and they decide throughput as much as the GPU does:

- ``max_batch_size``: sequences scheduled in one iteration (prefilling or decoding);
- ``max_num_tokens``: tokens in one iteration (each decoding sequence costs one,
  a prefill its prompt, or its chunk with chunked prefill [3]);
- the KV pool: the share ``kv_memory_fraction`` of the memory left after weights and
  the runtime's own peak, in blocks of ``block_tokens``;
- admission: with ``reserve_full_sequence`` a request is admitted only when blocks
  for its whole prompt + output are free (TensorRT-LLM's GUARANTEED_NO_EVICT), so
  concurrency is the pool over (prompt + output) rounded up to blocks;
- ``windowed_kv``: whether sliding-window and chunked-attention layers allocate only
  their window (vLLM's hybrid allocator) or the whole context like full layers.

:data:`TRTLLM_BENCH` holds trtllm-bench 1.0's defaults for the PyTorch backend;
when it is given no limits, :func:`trtllm_bench_limits` reproduces the
heuristic it uses to choose them (``bench/build/tuning.py``).

References
----------
.. [1] Yu et al. 2022, "Orca: A Distributed Serving System for Transformer-Based
       Generative Models", OSDI'22 (iteration-level scheduling).
.. [2] Kwon et al. 2023, "Efficient Memory Management for Large Language Model
       Serving with PagedAttention", SOSP'23, arXiv:2309.06180.
.. [3] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference
       with Sarathi-Serve", OSDI'24, arXiv:2403.02310 (chunked prefill, token budget).
.. [4] NVIDIA/TensorRT-LLM v1.0: ``tensorrt_llm/bench/build/tuning.py``
       (``calc_engine_setting``, ``finetune_setting``), ``bench/benchmark/utils/general.py``
       (``max_num_tokens >= max_isl + max_batch_size`` without chunking), ``llmapi``
       ``KvCacheConfig`` (``tokens_per_block`` 32), ``capacityScheduler.cpp``
       (GUARANTEED_NO_EVICT), ``docs/source/performance/perf-overview.md`` at commit
       00f37686 (``kv_cache_free_gpu_mem_fraction`` 0.95, 0.90 on out-of-memory).
.. [5] ai-dynamo/aiconfigurator ``systems/*.yaml`` (``other_mem`` 3.5 GiB) and its
       activation-memory coefficients (2 x tokens x hidden x 11 for dense models at TP 1,
       22 for MoE).
.. [6] NVIDIA/TensorRT-LLM ``_executor/py_executor.py`` ``_balance_adp_requests`` (context requests are
       scheduled once every rank has one and a free slot, or after ``timeout_iters``) and ``llm_args.py``
       ``AttentionDpConfig`` (enable_balance False by default).
.. [7] sgl-project/sglang ``python/sglang/srt/managers/scheduler_recv_skipper.py`` (``SchedulerRecvSkipper``:
       with ``--scheduler-recv-interval N`` > 1 the scheduler polls for new requests once its counter, +1 per
       decode or target-verify iteration and +1000 per any other, reaches N; default 1: every iteration) and
       ``server_args.py`` (``scheduler_recv_interval`` 1).
.. [8] sgl-project/sglang ``python/sglang/srt/server_args.py`` (``enable_mixed_chunk = False``) and
       ``managers/scheduler.py`` ``get_next_batch_to_run`` (a new prefill batch runs before the running decode
       batch; ``mix_with_running`` joins them only with ``--enable-mixed-chunk``); TensorRT-LLM's in-flight
       batching schedules context and generation requests in one batch (``microBatchScheduler.cpp``), as vLLM V1
       does under its token budget (``v1/core/sched/scheduler.py``).
.. [9] sgl-project/sglang ``python/sglang/srt/layers/dp_attention.py``: ``DpPaddingMode.MAX_LEN`` ("padding tokens
       to max length and then gather tokens using all_gather_into_tensor", the default inside CUDA graphs), the
       gathered buffer in the model's dtype (``init_dp_gathered_buffer``), the scatter by ``reduce_scatter_tensor``;
       docs/calibration.md ("SGLang's attention-DP decode").
.. [10] NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py`` ``forward_chunk``
       (``run_post_quant_allgather``: ``fp4_quantize``, then ``allgather(..., sizes=all_rank_num_tokens)`` of the
       values, scale factors, expert ids and weights) and ``reducescatter_or_allreduce`` (``reducescatter`` by the
       same sizes), both NCCL's (``cpp/tensorrt_llm/thop/allgatherOp.cpp``: one ``ncclBroadcast`` per root in a
       group; ``reducescatterOp.cpp``: one ``ncclReduce`` per root).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from aisize import checks
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element
from aisize.units import GiB


@dataclass(frozen=True)
class Engine:
    """Scheduler settings of a serving engine. ``None`` limits are chosen per workload.

    Built from a row of ``data/engines.csv`` (:func:`engine`), each figure read from the
    engine's code at the version the row names; :meth:`with_` makes a variant (a
    deployment's own flags).
    """

    name: str
    key: str  # short name (ENGINES key)
    kv_memory_fraction: float  # share of memory given to KV (see kv_fraction_of_total)
    block_tokens: int  # paged-KV block size [tokens]
    chunked_prefill: bool  # prefills split to fit the token budget (Sarathi-Serve)
    reserve_full_sequence: bool  # admit only when blocks for prompt + output are free
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    windowed_kv: bool = True  # sliding/chunked layers allocate only their window (else the whole context)
    runtime_reserve_bytes: float = 3.5 * GiB  # CUDA context, NCCL, CUDA graphs [5]
    activation_bytes_per_token_hidden: float = 22.0  # profiling peak = tokens x hidden x this [5]
    cuda_graph_max_batch: int | None = None  # decode batches up to this replay a CUDA graph (None: every batch)
    cuda_graph_mixed_tokens: int = 0  # iterations with prefill work up to this many tokens are graphed too
    overlap_scheduler: bool = True  # the host prepares the next iteration while the GPU runs this one
    overlap_with_speculation: bool = True  # ... and still does while it speculates (SGLang: not without spec v2)
    kv_fraction_of_total: bool = False  # the share bounds weights + runtime + KV together (vLLM, SGLang)
    limits_shared_by_dp: bool = False  # the batch and token limits are the replica's, split among its DP ranks
    # TensorRT-LLM's attention_dp_config.enable_balance: prompts wait until every attention-DP rank has
    # one, at most timeout_iters iterations (this; 0: off, TensorRT-LLM's default) [6]. The catalog's
    # attention_dp_balance_iters column: 60 in the trtllm row, as its aggregated attention-DP deployments set it,
    # 0 in the others (docs/calibration.md, "Long prompts under attention DP"); with_() states a run's own
    attention_dp_balance_iters: int = 0
    # SGLang's --scheduler-recv-interval: new requests are taken in once every this many decode iterations
    # (1, every iteration: the default; InferenceX's DeepSeek-R1 recipes set 10 or 30) [7]
    scheduler_recv_interval: int = 1
    # whether an iteration that prefills also advances the decoding sequences (in-flight batching [1, 3]): the
    # catalog's mixes_prefill column. SGLang by default runs a prefill batch alone and the decodes wait for it
    # (--enable-mixed-chunk off) [8], yet its row keeps true: with SGLang's false the cross-validated serving scores
    # fell (docs/calibration.md, "Prefill alone"), so false is a deployment's choice (a site's engine table, or
    # with_(mixes_prefill=False))
    mixes_prefill: bool = True
    # attention-DP ranks gather every rank's 16-bit hidden states before each MoE layer with NCCL's all-gather and
    # scatter the results with its reduce-scatter, read from NCCL's measured tables under the calibration's
    # gather_source="kernels": the catalog's dp_gather_nccl column (true for SGLang [9] and TensorRT-LLM, whose
    # exchange by sizes is NCCL broadcasts and reduces, read as NCCL's all-gather and reduce-scatter [10])
    dp_gather_nccl: bool = False
    # attention-DP ranks all-gather their own tokens by per-rank counts, NVFP4 inputs quantized first, and
    # reduce-scatter the 16-bit results by the same counts (TensorRT-LLM's fused MoE [10]): a rank receives every
    # rank's tokens but its own, so one rank's prompt crosses the links once, not attention_dp times
    # (aisize.serving.iteration_comm.exchange_by_sizes_seconds). The catalog's dp_exchange_by_sizes column where its
    # table has one (true for TensorRT-LLM: docs/calibration.md, "Long prompts under attention DP"), else off
    dp_exchange_by_sizes: bool = False
    # expert formats whose routed experts, where expert parallelism spreads them (EP > 1), are timed from this
    # engine's own measured MoE operator (aisize.serving.kernel_moe.engine_experts_seconds), the roofline elsewhere
    # and where no table covers the shape: the catalog's measured_ep_moe_formats column (empty in every catalog row).
    # SGLang's "fp8" was judged: its flashinfer_trtllm FP8 block-scaled operator, the one its B200 recipes run, takes
    # 2.7 to 9.2 times TensorRT-LLM's DeepGEMM MoE time at EP 8 and 4,096 to 16,384 tokens (DeepSeek-R1) and runs
    # 10 to 27 % faster at EP 1; read at EP > 1 it held every public check but lost runs leaving a model and a GPU
    # out, so it is a deployment's choice (with_(), a site's engine table) (docs/calibration-sglang-fp8.md)
    measured_ep_moe_formats: tuple = ()
    version: str = ""
    source: str = ""

    def __post_init__(self):
        checks.integer("attention_dp_balance_iters", self.attention_dp_balance_iters, low=0, high=1_000_000)
        checks.integer("scheduler_recv_interval", self.scheduler_recv_interval, low=1, high=100_000)
        if not isinstance(self.measured_ep_moe_formats, tuple):
            raise ValueError(f"measured_ep_moe_formats={self.measured_ep_moe_formats!r}: give a tuple of expert "
                             f"formats, e.g. ('fp8',)")
        for f in self.measured_ep_moe_formats:  # a misspelt format would silently keep the roofline
            checks.choice("measured_ep_moe_formats", f, BITS_PER_ELEMENT)
        if self.scheduler_recv_interval > 1 and self.key != "sglang":
            raise ValueError(f"scheduler_recv_interval={self.scheduler_recv_interval} is SGLang's "
                             f"--scheduler-recv-interval; engine {self.key!r} takes requests in every iteration (1)")

    def with_(self, **changes) -> "Engine":
        """A copy with some settings changed (a deployment's own flags)."""
        return replace(self, **changes)

    def speculating(self, speculation) -> "Engine":
        """The engine as it runs with ``speculation`` (a :class:`~aisize.serving.speculative.Speculation` or
        None): an engine that turns its overlap scheduler off to speculate runs without it."""
        if speculation is None or self.overlap_with_speculation or not self.overlap_scheduler:
            return self
        return replace(self, overlap_scheduler=False)

    def rank_limit(self, value, attention_dp):
        """A batch or token limit as one attention-DP rank schedules it: SGLang's flags are the replica's and
        each rank gets ``value // attention_dp`` (server_args.py divides ``chunked_prefill_size`` and
        max_running_requests by ``dp_size`` under ``--enable-dp-attention``); other engines' are per rank."""
        if value is None or not self.limits_shared_by_dp:
            return value
        return np.maximum(np.floor(np.asarray(value, dtype=float) / np.asarray(attention_dp, dtype=float)), 1.0)

    def launch(self, max_batch_size=None, groups=1) -> "Launch":
        """How this engine launches iterations (CUDA graphs, host overlap) under a batch limit per rank.

        ``groups`` are the attention-DP ranks (times pipeline stages) a replica's batch splits over. Each rank
        replays a graph of its own batch, so the CUDA-graph limits are per rank: under attention DP,
        TensorRT-LLM's ranks all-gather their batch sizes and pad each to the largest, graphed while that is
        within ``cuda_graph_config.max_batch_size`` (``_torch/pyexecutor/cuda_graph_runner.py``
        ``_get_padded_batch``); SGLang compares the largest rank's batch with ``cuda_graph_max_bs``
        (``model_executor/cuda_graph_runner.py`` ``can_run``). A replica's iteration is graphed while its
        batch is within ``groups`` times the rank's limit (ranks balanced)."""
        graph = self.cuda_graph_max_batch
        if graph is None:
            graph = max_batch_size if max_batch_size is not None else np.inf
        return Launch(graph * groups, self.cuda_graph_mixed_tokens * groups, self.overlap_scheduler,
                      float(self.attention_dp_balance_iters), float(self.scheduler_recv_interval),
                      self.mixes_prefill)


@dataclass(frozen=True)
class Launch:
    """Which iterations replay a CUDA graph, whether the host overlaps the GPU, and whether prompts wait
    for every attention-DP rank to have one."""

    graph_batch: object  # decode-only iterations of at most this many sequences are graphed
    graph_mixed_tokens: float  # iterations with prefill work of at most this many tokens are graphed
    overlap: bool
    balance_iters: float = 0.0  # attention-DP prompts held until every rank has one, at most this many iterations
    recv_interval: float = 1.0  # the scheduler takes new requests in once every this many decode iterations
    mixes_prefill: bool = True  # prefill work rides in the decode iteration (else a prefill iteration runs alone)

    def receive_wait_iterations(self, quantile=None):
        """Whole iterations a new request waits for the scheduler to take it in, beyond the running one's rest
        (counted apart) [iterations]: 0 when it polls every iteration. With an interval N > 1 the polls fall N
        decode iterations apart [7] and a request arrives at a uniformly random point between two, so it waits
        (N - 1) / 2 whole iterations on average and ``quantile`` x (N - 1) at that quantile. A prefill iteration
        also triggers a poll, but in a closed loop the prefills are those of the prompts a poll just took in, so
        the polls stay about N iterations apart; the prompts one poll takes in are not batched into one prefill
        here (their prefills are timed as they come)."""
        span = max(float(self.recv_interval) - 1.0, 0.0)
        return 0.5 * span if quantile is None else float(quantile) * span

    def graphed(self, decode_sequences, tokens, with_prefill):
        """Whether an iteration of ``decode_sequences`` (``tokens`` in all) replays a CUDA graph."""
        decode = np.asarray(decode_sequences, dtype=float) <= self.graph_batch
        mixed = np.asarray(tokens, dtype=float) <= self.graph_mixed_tokens
        return np.where(with_prefill, mixed, decode)


GRAPHED = Launch(np.inf, np.inf, True)  # every iteration from a CUDA graph, host overlapped


def engine(key: str) -> Engine:
    """The :class:`Engine` of a ``data/engines.csv`` row."""
    from aisize import catalog

    r = catalog.engines[key]
    return Engine(name=f"{r.name} {r.version}", key=r.id, kv_memory_fraction=r.kv_memory_fraction,
                  block_tokens=r.block_tokens, chunked_prefill=r.chunked_prefill,
                  reserve_full_sequence=r.reserve_full_sequence, max_batch_size=r.max_batch_size,
                  max_num_tokens=r.max_num_tokens, windowed_kv=r.windowed_kv,
                  runtime_reserve_bytes=r.runtime_reserve_bytes, cuda_graph_max_batch=r.cuda_graph_max_batch,
                  cuda_graph_mixed_tokens=r.cuda_graph_mixed_tokens, overlap_scheduler=r.overlap_scheduler,
                  overlap_with_speculation=(r.overlap_scheduler if r.overlap_with_speculation is None
                                            else r.overlap_with_speculation),
                  kv_fraction_of_total=r.kv_fraction_of_total, limits_shared_by_dp=r.limits_shared_by_dp,
                  mixes_prefill=r.mixes_prefill, dp_gather_nccl=r.dp_gather_nccl,
                  dp_exchange_by_sizes=r.dp_exchange_by_sizes,
                  attention_dp_balance_iters=r.attention_dp_balance_iters,
                  measured_ep_moe_formats=tuple((r.measured_ep_moe_formats or "").split()), version=r.version,
                  source=r.source)


class _Engines(Mapping):
    """The catalog's engines by key (``data/engines.csv`` and any user overlay), read on use."""

    def __getitem__(self, key):
        from aisize import catalog
        if key not in catalog.engines:
            raise KeyError(key)
        return engine(key)

    def __iter__(self):
        from aisize import catalog
        return iter(catalog.engines.ids())

    def __len__(self):
        from aisize import catalog
        return len(catalog.engines)


ENGINES = _Engines()


def resolve_engine(engine, *, flat_out: bool) -> Engine:
    """An :class:`Engine` from an engine, a key, or None: TensorRT-LLM, with trtllm-bench's scheduler for
    a max-throughput run (``flat_out``) and trtllm-serve's at a rate or a concurrency."""
    if isinstance(engine, Engine):
        return engine
    if engine is None:
        engine = "trtllm-bench" if flat_out else "trtllm"
    return ENGINES[checks.choice("engine", engine, tuple(ENGINES))]


_HEURISTIC_BYTES = {"fp8": 1.0, "nvfp4": 0.5}  # tuning.py BYTES_PER_ELEM (others: 2)
_BATCH_CAP = 4096  # tuning.py: min(kv_cache_max_requests, 4096)
_TOKEN_CAP = 32768  # tuning.py: min(raw_bs x (1 + isl/osl), 32768)


def _round_batch(raw):
    """tuning.py: batches under 256 round up to 32 (at least 64), under 1024 to 128, else to 256."""
    step = np.where(raw < 256, 32, np.where(raw < 1024, 128, 256))
    return np.maximum(np.where(raw < 256, 64, 0), step * np.ceil(raw / step))


def _round_tokens(raw):
    """tuning.py: token budgets under 4096 round up to 256 (at least 2048), under 8192 to 512, else 1024."""
    step = np.where(raw < 4096, 256, np.where(raw < 8192, 512, 1024))
    return np.maximum(np.where(raw < 4096, 2048, 0), step * np.ceil(raw / step))


def trtllm_bench_limits(kv_max_requests, input_tokens, output_tokens, *, pipeline_parallel=1,
                        chunked_prefill=False):
    """trtllm-bench's ``max_batch_size`` and ``max_num_tokens`` for a fixed-length workload.

    Parameters
    ----------
    kv_max_requests : requests of ``input + output`` tokens the heuristic thinks the
        KV cache holds (its own estimate, from total memory minus weights) [count]
    input_tokens, output_tokens : the dataset's mean lengths [tokens]
    pipeline_parallel : PP degree; chunked_prefill : whether prefills are chunked

    Returns
    -------
    (max_batch_size, max_num_tokens) as floats or arrays.

    References
    ----------
    .. [4] ``finetune_setting`` in ``tensorrt_llm/bench/build/tuning.py``;
       ``get_settings`` in ``bench/benchmark/utils/general.py``.
    """
    req = checks.positive("kv_max_requests", kv_max_requests)
    i = checks.positive("input_tokens", input_tokens)
    o = checks.positive("output_tokens", output_tokens)
    pp = checks.integer("pipeline_parallel", pipeline_parallel)
    raw_bs = np.minimum(req, _BATCH_CAP) / pp
    raw_token = np.minimum(raw_bs * (1.0 + i / o), _TOKEN_CAP)
    batch = _round_batch(raw_bs)
    tokens = _round_tokens(raw_token)
    if not chunked_prefill:
        tokens = np.maximum(tokens, i + batch)  # a whole prompt must fit one iteration
    return batch, tokens


def trtllm_bench_kv_requests(costs, memory_bytes, gpus, tensor_parallel, fraction, input_tokens, output_tokens):
    """Requests of ``input + output`` tokens trtllm-bench's heuristic believes the KV cache holds.

    ``(memory x gpus - engine size) x fraction / (KV bytes per token x (I + O))``, with
    its own simplifications: the engine is the checkpoint's element count at 1 B (FP8),
    0.5 B (NVFP4) or 2 B per element, an NVFP4 checkpoint counting two FP4 values per
    element (so half the real size of its quantized layers), and KV heads counted as
    ``max(tp, kv_heads)`` [4]. Each kind of layer counts at its own format.

    Parameters
    ----------
    costs : :class:`~aisize.serving.costs.ModelCosts` (its weight formats included)
    memory_bytes : usable memory per GPU [B]; gpus, tensor_parallel : replica shape [count]
    fraction : the KV memory fraction; input_tokens, output_tokens : [tokens]
    """
    fmt = costs.formats
    routed = costs.weights_bytes - costs.head_bytes - costs.attention_weight_bytes - costs.dense_weight_bytes
    # the 16-bit embedding and head count as elements of the checkpoint's main format
    engine_bytes = costs.head_bytes / 2.0 * _HEURISTIC_BYTES.get(fmt.experts, 2.0)
    for fmt_name, stored in ((fmt.attention, costs.attention_weight_bytes), (fmt.dense, costs.dense_weight_bytes),
                             (fmt.experts, routed)):
        elements = stored / bytes_per_element(fmt_name)
        if fmt_name == "nvfp4":  # packed: two FP4 values per counted element
            elements /= 2.0
        engine_bytes = engine_bytes + elements * _HEURISTIC_BYTES.get(fmt_name, 2.0)
    per_token = costs.kv_bytes_per_token_full + costs.kv_bytes_per_token_window
    per_token = per_token * np.maximum(tensor_parallel, costs.kv_heads) / costs.kv_heads
    free = np.maximum(memory_bytes * gpus - engine_bytes, 0.0) * fraction
    return free / (per_token * (input_tokens + output_tokens))
