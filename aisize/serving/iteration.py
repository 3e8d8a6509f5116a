"""Time of one continuous-batching iteration on one replica, from the roofline.

An iteration runs every layer once over the tokens it carries: one token for
each decoding sequence (``k + 1`` when a speculative step verifies k drafts) plus
the prompt tokens (or chunks) being prefilled [1, 2]. Per GPU of the replica, its
time is the sum over the kinds of work of each kind's roofline time,
max(FLOPs / achieved peak, bytes / achieved bandwidth) [3]:

- attention projections and dense MLPs (with shared experts): ``2·N·n`` FLOPs for n
  tokens, each kind at its weight format's GEMM peak, against one read of their weights;
- routed experts, spread over ``expert_parallel`` GPUs (each expert split over the
  remaining ``gpus / expert_parallel``, expert tensor parallelism [6]): every expert's
  tokens are padded to a GEMM tile (grouped GEMMs align each expert's rows to the
  kernel's M block [7]), so an expert that sees few tokens costs a tile of FLOPs; the
  weight read is the distinct experts the tokens touch. With expert parallelism the
  busiest GPU sets the pace: its tokens and touched experts are the mean plus the
  expected maximum of ``expert_parallel`` normal deviates (Blom's approximation [8])
  times their standard deviation under uniform routing;
- routing each token to its experts and back: HBM traffic per token and expert;
- output head: at the sampling positions only, and its fp32 logits;
- elementwise work (norms, rotary, activation, quantization, residuals): HBM
  traffic proportional to tokens x hidden x layers;
- decode attention: every decoding sequence reads its KV cache once and does the
  attention FLOPs of its engine's decode form (MLA absorbed), whichever is longer;
- prefill attention: causal FLOPs ``2·d_attn·s²`` per layer per prompt;
- with ``calib.allreduce_source == "kernels"``, the all-reduces within one server are read from the engine's
  measured all-reduce kernels (:mod:`aisize.serving.kernel_allreduce`);
- with ``calib.gather_source == "kernels"`` and an engine that exchanges with NCCL (``Engine.dp_gather_nccl``),
  attention-DP groups' gather and scatter around each MoE layer within one server are NCCL's all-gather and
  reduce-scatter as measured on the GPU (:func:`aisize.serving.kernel_allreduce.gather_scatter_seconds`): SGLang's
  padded 16-bit buffer both ways, or, where the engine exchanges by sizes, every rank's tokens quantized out and
  16-bit back (TensorRT-LLM's broadcasts and reduces [12]);
- with an engine that exchanges by per-rank sizes (``Engine.dp_exchange_by_sizes``), a rank receives every rank's
  tokens but its own, quantized to the experts' format on the way out (:func:`exchange_by_sizes_seconds`, the
  link's roofline where NCCL's tables do not cover the group) [11];
- with ``calib.attention_source == "kernels"``, decode and prefill attention (GQA/MHA and MLA) are read from
  the engine's attention kernels measured on the GPU where the tables cover the case
  (:mod:`aisize.serving.kernel_attention`), and the result says which share of their seconds was read;
- collectives: two tensor-parallel all-reduces per layer of the tokens' hidden
  states (ring bandwidth [4] plus a fixed latency each); with attention data
  parallelism, the gather and scatter of tokens around every MoE layer;
- fixed GPU time per layer and per MoE layer: kernel ramps and tails that remain
  when the iteration is replayed from a CUDA graph. An iteration the engine does
  not capture (a batch beyond its graph sizes, or prefill work in engines that graph
  decode only) is launched kernel by kernel, so it takes at least the host's launch
  time of its layers.

The host schedules the next iteration while the GPU runs this one (TensorRT-LLM's
and SGLang's overlap schedulers), so an iteration takes the longer of the GPU time
and the host time; an engine without overlap adds them.

All inputs broadcast, so one call evaluates a whole grid of shapes and batches.

References
----------
.. [1] Yu et al. 2022 (Orca), OSDI'22, sec. 4 (iteration-level scheduling).
.. [2] Agrawal et al. 2024 (Sarathi-Serve), OSDI'24, arXiv:2403.02310, sec. 3-4
       (prefill is compute-bound, decode memory-bound; a hybrid batch costs their parts).
.. [3] Williams, Waterman, Patterson 2009, "Roofline", CACM 52(4); Pope et al. 2023,
       arXiv:2211.05102, sec. 2-3 (inference rooflines, weight vs KV loading).
.. [4] Patarasuk & Yuan 2009 (ring all-reduce moves 2(n-1)/n of the buffer).
.. [5] Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2 (pipeline micro-batches); vLLM and
       TensorRT-LLM pipeline-parallel serving run one micro-batch per stage at a time.
.. [6] TensorRT-LLM ``MoeConfig`` / SGLang ``--ep-size``: experts split over ``moe_ep_size``
       GPUs and each expert over ``moe_tp_size = tp / moe_ep_size`` of them.
.. [7] deepseek-ai/DeepGEMM README (grouped GEMM "contiguous layout": each expert's segment
       aligned to the M block size); TensorRT-LLM MoE GEMM tactics (CUTLASS tile shapes with M
       from 16 to 128, chosen per token count by the autotuner).
.. [8] Blom 1958, "Statistical Estimates and Transformed Beta-Variables": the expected
       maximum of n standard normals is about Φ⁻¹((n - 0.375) / (n + 0.25)).
(References [9] and [10], the hierarchical collectives and DeepEP's dispatch, are cited where the collectives
are: :mod:`aisize.serving.iteration_comm`.)
.. [11] NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py`` (``forward_chunk``:
        under attention DP, ``run_post_quant_allgather`` quantizes NVFP4 inputs with ``fp4_quantize`` and
        ``allgather``s them with their scale factors, expert ids and weights by ``sizes=all_rank_num_tokens``;
        ``reducescatter_or_allreduce`` reduce-scatters the output by the same sizes); ``Engine.dp_exchange_by_sizes``.
.. [12] NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/thop/allgatherOp.cpp`` (with sizes, one ``ncclBroadcast`` per root
        rank in an NCCL group; without, ``ncclAllGather``) and ``reducescatterOp.cpp`` (one ``ncclReduce`` per root,
        or ``ncclReduceScatter``): the exchange is NCCL's, as SGLang's is (``Engine.dp_gather_nccl``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from aisize.serving import kernel_attention
from aisize.serving.iteration_comm import ACTIVATION_BYTES, _moe_exchange, all_reduce_seconds
from aisize.serving.iteration_shape import _layout, _per, _times
from aisize.serving.kernel_allreduce import allreduce_seconds as kernel_allreduce_seconds
from aisize.serving.kernel_gemms import linear_seconds as kernel_linear_seconds
from aisize.serving.kernel_moe import engine_experts_seconds as kernel_engine_experts_seconds
from aisize.serving.kernel_moe import experts_seconds as kernel_experts_seconds
from aisize.serving.kernel_moe import LOW_LATENCY_MAX_TOKENS
from aisize.serving.moe_cap import capped_roofline
from aisize.serving.moe_format import LOW_LATENCY_ENGINES
from aisize.serving.shapes import expert_slots
from aisize.serving.speculative import prepare_draft_seconds, verify_attention_lookup

LOGIT_BYTES = 4.0  # fp32 logits, written by the head and read by the sampler


@dataclass(frozen=True)
class Rates:
    """Achieved rates of one GPU for one serving precision [FLOP/s, B/s, s]."""

    attention_gemm_flops_per_s: float  # attention projections
    dense_gemm_flops_per_s: float  # dense MLPs, shared experts
    expert_flops_per_s: float  # routed experts' grouped GEMMs
    head_flops_per_s: float  # the 16-bit output head
    attention_flops_per_s: float  # attention itself (prefill and decode)
    memory_bytes_per_s: float
    link_bytes_per_s: float  # scale-up link per direction
    host_seconds_per_sequence: float
    uncalibrated: bool  # the GPU's generation has no fitted efficiency (a stand-in was used)
    expert_memory_bytes_per_s: float = 0.0  # the routed experts' weight reads
    layer_seconds: float = 0.0  # fixed GPU time per layer per graphed iteration
    moe_layer_seconds: float = 0.0  # additional fixed time per MoE layer
    kernel_gemms: tuple | None = None  # (gpu, engine key): linear layers from measured GEMMs (kernel_gemms)
    kernel_moe: tuple | None = None  # (gpu, engine key): routed experts from measured MoE kernels (kernel_moe)
    kernel_attention: tuple | None = None  # (gpu, engine key): attention from measured kernels (kernel_attention)
    kernel_allreduce: tuple | None = None  # (gpu, engine key): TP all-reduces from measured kernels (kernel_allreduce)
    kernel_moe_fixed_only: bool = False  # kernel_moe gives only their fixed time per MoE layer (moe_source="kernel_fixed")
    kernel_gather: str | None = None  # GPU id: attention-DP gather/scatter from NCCL's measured tables (gather_source)
    # the attention-DP exchange moves each rank's own tokens, quantized on the way (Engine.dp_exchange_by_sizes)
    dp_exchange_by_sizes: bool = False
    # (gpu, engine key): moe_layer_seconds scaled to the expert format by the measured MoE operators (moe_format)
    moe_format: tuple | None = None
    # ... only in iterations whose MoE layers take at most this many tokens (moe_layer_source="low_latency_kernels":
    # the engine's low-latency NVFP4 MoE kernels, moe_format.LOW_LATENCY_MAX_TOKENS); None: at every batch
    moe_format_max_tokens: float | None = None
    # (gpu, engine key, expert formats): the engine's own measured MoE operator under EP > 1
    # (Engine.measured_ep_moe_formats, kernel_moe.engine_experts_seconds)
    kernel_moe_engine: tuple | None = None
    kernel_moe_cap: bool = False  # kernel_moe caps the roofline's routed experts (moe_source="kernel_cap", moe_cap)
    kernel_moe_cap_split: bool = False  # ... on every split for moe_cap.SPLIT_CAPPED (moe_source="kernel_cap_split")


def achieved_rates(device, calib, engine=None) -> Rates:
    """Datasheet figures of a :class:`~aisize.serving.hardware.Device` times the calibration; with
    ``calib.gemm_source == "kernels"`` (``calib.moe_source``, ``calib.attention_source``) and an ``engine`` (key
    or record), its measured GEMMs (MoE kernels, attention kernels) where tables exist."""
    gen = device.generation if device.generation in calib.gemm_efficiency else calib.fallback_generation
    e = calib.value("gemm_efficiency", gen)
    attn, dense, experts = (p * e for p in device.gemm_peaks_flops_per_s)
    experts = experts * calib.expert_gemm_efficiency
    host = calib.host_seconds_per_sequence * (calib.grace_host_factor if device.grace_hosted else 1.0)
    head = device.head_peak_flops_per_s * e
    return Rates(attn, dense, experts, head, device.attention_peak_flops_per_s * calib.attention_efficiency,
                 device.memory_bandwidth_bytes_per_s * calib.value("memory_efficiency", gen),
                 device.link_bytes_per_s * calib.link_efficiency, host, gen != device.generation,
                 device.memory_bandwidth_bytes_per_s * calib.value("expert_memory_efficiency", gen),
                 calib.value("layer_seconds", gen), calib.value("moe_layer_seconds", gen),
                 _kernel_source(device, calib, engine, "gemm_source"), _kernel_source(device, calib, engine, "moe_source"),
                 _kernel_source(device, calib, engine, "attention_source"),
                 _kernel_source(device, calib, engine, "allreduce_source"), calib.moe_source == "kernel_fixed",
                 _gather_source(device, calib, engine),
                 bool(getattr(_engine_record(engine), "dp_exchange_by_sizes", False)),
                 *_moe_format_source(device, calib, engine), _engine_moe_source(device, engine),
                 calib.moe_source in ("kernel_cap", "kernel_cap_split"), calib.moe_source == "kernel_cap_split")


def _engine_moe_source(device, engine):
    """(GPU, engine key, expert formats) whose routed experts under EP > 1 the engine's own measured MoE operator
    times (:attr:`~aisize.serving.engine.Engine.measured_ep_moe_formats`), else None."""
    record = _engine_record(engine)
    formats = tuple(getattr(record, "measured_ep_moe_formats", ()) or ())
    if not formats:
        return None
    from aisize.serving.kernel_gemms import ENGINE_TABLES

    return (device.id, record.key, formats) if record.key in ENGINE_TABLES else None


def _moe_format_source(device, calib, engine):
    """((GPU, engine key), most tokens): whose measured MoE operators scale the MoE layer's fixed time to the expert
    format, and in iterations of up to how many tokens through a MoE layer: at every batch with
    ``moe_layer_source="format_kernels"``; with ``"low_latency_kernels"`` only under the engines whose NVFP4 MoE runs
    low-latency kernels at small batches (:data:`aisize.serving.moe_format.LOW_LATENCY_ENGINES`), up to their token
    limit (None: every batch); else (None, None)."""
    key = getattr(engine, "key", engine)
    if engine is None or calib.moe_layer_source == "fitted":
        return None, None
    if calib.moe_layer_source == "format_kernels":
        return (device.id, key), None
    return ((device.id, key), LOW_LATENCY_MAX_TOKENS) if key in LOW_LATENCY_ENGINES else (None, None)


def _engine_record(engine):
    """The :class:`~aisize.serving.engine.Engine` of a key or record (None stays None)."""
    if isinstance(engine, str):
        from aisize.serving.engine import ENGINES
        return ENGINES.get(engine)
    return engine


def _gather_source(device, calib, engine):
    """The GPU whose NCCL tables give the attention-DP gather and scatter, where the calibration reads them and
    the engine gathers with NCCL (:attr:`~aisize.serving.engine.Engine.dp_gather_nccl`), else None."""
    if calib.gather_source != "kernels" or engine is None:
        return None
    return device.id if getattr(_engine_record(engine), "dp_gather_nccl", False) else None


def _kernel_source(device, calib, engine, switch):
    source = getattr(calib, switch, "roofline")
    if source not in ("kernels", "kernel_fixed", "engine_kernels", "kernel_cap", "kernel_cap_split") or engine is None:
        return None
    from aisize.serving.calibration import MOE_KERNEL_ENGINES
    from aisize.serving.kernel_gemms import ENGINE_TABLES

    key = getattr(engine, "key", engine)
    if source == "engine_kernels" and key not in MOE_KERNEL_ENGINES:
        return None
    return (device.id, key) if key in ENGINE_TABLES else None


@lru_cache(maxsize=64)
def expected_max_normal(n: int) -> float:
    """Expected maximum of n standard normal deviates (Blom's approximation [8]); 0 for n = 1."""
    if n <= 1:
        return 0.0
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25))


def _z_max(n):
    n = np.asarray(n)
    if n.ndim == 0:
        return expected_max_normal(int(n))
    flat = [expected_max_normal(int(v)) for v in n.ravel()]
    return np.array(flat, dtype=float).reshape(n.shape)


@dataclass(frozen=True)
class IterationTime:
    """One iteration's time on one GPU of the replica, by kind of work [s]."""

    linear_seconds: object
    experts_seconds: object
    head_seconds: object
    elementwise_seconds: object
    decode_attention_seconds: object
    prefill_attention_seconds: object
    communication_seconds: object
    overhead_seconds: object
    host_seconds: object
    launch_seconds: object = 0.0  # host launch time of an iteration that is not graph-captured
    overlap: bool = True  # the host prepares the next iteration while the GPU runs this one
    # share of the attention seconds read from measured kernels (None: attention_source is the roofline)
    attention_table_share: object = None

    @property
    def gpu_seconds(self):
        work = (self.linear_seconds + self.experts_seconds + self.head_seconds + self.elementwise_seconds
                + self.decode_attention_seconds + self.prefill_attention_seconds
                + self.communication_seconds + self.overhead_seconds)
        return np.maximum(work, self.launch_seconds)

    @property
    def seconds(self):
        if self.overlap:
            return np.maximum(self.gpu_seconds, self.host_seconds)
        return self.gpu_seconds + self.host_seconds


MIN_TILE_TOKENS = 16.0  # the smallest M tile grouped-GEMM kernels choose for few tokens per expert [7]


def padded_expert_rows(tokens_per_expert, max_tile):
    """Expected GEMM rows of one expert given a Poisson number of tokens with mean λ, padded to whole
    tiles [7]. Kernels pick the tile by the tokens per expert (autotuned tactics): the power of two at
    or above λ, from 16 up to ``max_tile`` rows. E[ceil(X/t)]·t is approximated by
    max(t·P(X > 0), λ + t/2·(1 - e^(-λ/t))) (exact as λ → 0, within half a tile as λ → ∞)."""
    lam = np.asarray(tokens_per_expert, dtype=float)
    tile = np.clip(2.0 ** np.ceil(np.log2(np.maximum(lam, 1.0))), MIN_TILE_TOKENS, max_tile)
    return np.maximum(-tile * np.expm1(-lam), lam + 0.5 * tile * -np.expm1(-lam / tile))


def _experts(costs, rates, calib, n, g, ep):
    """Routed-expert time of one GPU: grouped GEMMs (tile-padded), distinct experts read, imbalance."""
    if not costs.moe_layers:
        return 0.0 * n
    e, k = float(costs.experts), float(costs.experts_per_token)
    slots = expert_slots(e, ep)  # with redundant copies where EP does not divide the experts
    etp = g / ep  # GPUs each expert is split over
    local = slots / ep  # expert slots per expert-parallel rank
    lam = n * k / slots  # tokens per slot per layer (a hot expert's tokens spread over its copies)
    z = _z_max(ep)
    rows = local * padded_expert_rows(lam, calib.gemm_tile_tokens)
    spread = np.sqrt(np.maximum(local * lam, 1e-12))
    busiest_rows = rows * (1.0 + z * np.minimum(spread / np.maximum(local * lam, 1e-12), 1.0))
    flops_per_row = costs.expert_flops_per_token / (costs.moe_layers * k)  # 2 x one expert's weights
    compute = costs.moe_layers * flops_per_row * busiest_rows / etp / rates.expert_flops_per_s
    p = -np.expm1(n * np.log1p(-k / slots))  # chance a slot is touched
    touched = local * p
    busiest = touched + z * np.sqrt(np.maximum(local * p * (1.0 - p), 0.0))
    memory = costs.moe_layers * np.minimum(busiest, local) * costs.expert_bytes / etp / rates.expert_memory_bytes_per_s
    routing = (calib.expert_bytes_per_token * costs.hidden * costs.moe_layers * k * n / g / rates.memory_bytes_per_s)
    return np.maximum(compute, memory) + routing


def iteration_time(costs, rates: Rates, calib, *, decode_sequences, decode_context, prefill_tokens,
                   prefill_prompts, prompt_tokens, gpus=1, attention_dp=1, pipeline_parallel=1,
                   stage_link_bytes_per_s=None, expert_parallel=None, speculation=None, graphed=True,
                   overlap=True, scaleup_domain=None, scaleout_bytes_per_s=None) -> IterationTime:
    """Time of one iteration of one replica, per GPU (work balanced over its GPUs).

    Parameters
    ----------
    costs : :class:`~aisize.serving.costs.ModelCosts`
    rates : achieved rates of one GPU (:func:`achieved_rates`)
    calib : :class:`~aisize.serving.calibration.Calibration` (overheads, traffic constants)
    decode_sequences : sequences generating this iteration [count]
    decode_context : their mean context (tokens in cache) [tokens]
    prefill_tokens : prompt tokens processed this iteration [tokens]
    prefill_prompts : prompts finishing their prefill this iteration (they sample) [count]
    prompt_tokens : prompt length, for the causal attention cost [tokens]
    gpus : GPUs of a pipeline stage [count]
    attention_dp : attention data-parallel groups; attention and dense layers are
        tensor-parallel over ``gpus / attention_dp`` GPUs [count]
    pipeline_parallel : stages, p. The running sequences split into p micro-batches that
        follow each other through the stages [5], so one round (every sequence advancing)
        takes p stage-times of one micro-batch; a stage runs L/p layers, the last one the head
    stage_link_bytes_per_s : datasheet rate per GPU per direction of the link between stages
        (default: the scale-up link); collectives reach ``calib.link_efficiency`` of it
    expert_parallel : GPUs of a stage the routed experts are spread over (None: all of them);
        each expert is split over ``gpus / expert_parallel`` GPUs [count]
    speculation : a :class:`~aisize.serving.speculative.Speculation` (None: none): each decoding
        sequence runs ``k + 1`` tokens through the model, after k draft passes
    scaleup_domain, scaleout_bytes_per_s : where a stage spans servers, GPUs per scale-up domain and the
        datasheet scale-out rate per GPU per direction (None: the stage sits in one domain); its
        collectives run hierarchically over both links (:func:`all_reduce_seconds`)
    graphed : the iteration is replayed from a CUDA graph (else launched kernel by kernel)
    overlap : the host's scheduling overlaps the GPU's work

    Returns
    -------
    :class:`IterationTime` (``seconds`` is the iteration's wall time).
    """
    return _prepared(costs, rates, calib, decode_context, prompt_tokens, gpus, attention_dp, pipeline_parallel,
                     stage_link_bytes_per_s, expert_parallel, speculation, overlap, scaleup_domain,
                     scaleout_bytes_per_s)(decode_sequences, prefill_tokens, prefill_prompts, graphed)


def prepare_iteration_time(costs, rates: Rates, calib, *, decode_context, prompt_tokens, gpus=1, attention_dp=1,
                           pipeline_parallel=1, stage_link_bytes_per_s=None, expert_parallel=None, speculation=None,
                           overlap=True, scaleup_domain=None, scaleout_bytes_per_s=None):
    """:func:`iteration_time` with all but the batch fixed, for a solve that asks it at many batches: returns
    ``at(decode_sequences, prefill_tokens, prefill_prompts, graphed, seconds_only=False)``, the
    :class:`IterationTime` ``iteration_time`` gives with these arguments (with ``seconds_only``, its ``seconds``),
    to the bit: what depends only on the fixed arguments is read once, by the same expressions."""
    return _prepared(costs, rates, calib, decode_context, prompt_tokens, gpus, attention_dp, pipeline_parallel,
                     stage_link_bytes_per_s, expert_parallel, speculation, overlap, scaleup_domain,
                     scaleout_bytes_per_s)


def _prepared(costs, rates, calib, decode_context, prompt_tokens, gpus, attention_dp, pipeline_parallel,
              stage_link_bytes_per_s, expert_parallel, speculation, overlap, scaleup_domain, scaleout_bytes_per_s):
    """The batch's part of :func:`iteration_time` as a closure over what its other arguments fix."""
    lay = _layout(costs, rates, calib, gpus, attention_dp, pipeline_parallel, expert_parallel, speculation,
                  stage_link_bytes_per_s, scaleout_bytes_per_s)
    g, dp, pp, ep, tp, v, mem = lay.g, lay.dp, lay.pp, lay.ep, lay.tp, lay.v, lay.mem
    one_pp, one_dp, one_v = lay.one_stage, lay.one_group, lay.one_token  # x / 1 and x * 1 skipped (_per, _times)
    kv_bytes, decode_flops, prefill_flops, scan_flops = lay.lengths(costs, decode_context, prompt_tokens)
    latency = calib.collective_seconds
    out = lay.scaleout_bytes_per_s
    link = rates.link_bytes_per_s
    # all_reduce_seconds' own tests on its fixed arguments, made once: one group size of one link in one domain
    groups = np.asarray(tp, dtype=float)
    one_size = groups.ndim == 0 and np.ndim(link) == 0 and np.ndim(latency) == 0
    alone, ring_only = one_size and bool(groups <= 1), one_size and bool(groups > 1) and (
        scaleup_domain is None or out is None)
    reduce_kernel = rates.kernel_allreduce is not None and out is None
    # _ring's leading factor 2 (n - 1) / n, evaluated left to right before the payload: the same bits once
    ring_share = 2.0 * (groups[()] - 1.0) / groups[()] if ring_only else None
    # draft_seconds is 0.0 without a drafter's passes: the overhead's fixed part, lay.overhead_seconds + 0.0 * pp
    drafted = not (speculation is None or speculation.draft_costs is None)
    fixed_overhead = None if drafted else lay.overhead_seconds + 0.0 * pp
    shape_kwargs = dict(gpus=gpus, attention_dp=attention_dp, expert_parallel=expert_parallel)
    draft = prepare_draft_seconds(speculation, rates, calib, decode_context=decode_context,
                                  shape_kwargs=shape_kwargs) if drafted else None  # the drafter's passes
    prompt_flops = prefill_flops + scan_flops  # the leading factors of products evaluated left to right
    reduces = 2.0 * costs.layers
    low_latency = bool(np.any(lay.moe_format_delta))

    def at(decode_sequences, prefill_tokens, prefill_prompts, graphed, seconds_only=False):
        tokens = _times(decode_sequences, v, one_v)  # decode tokens: every decoding sequence's verify tokens
        n = _per(tokens + prefill_tokens, pp, one_pp)  # tokens of one micro-batch through every linear layer
        sampled = _per(tokens + prefill_prompts, pp, one_pp)
        seqs = _per(decode_sequences, pp, one_pp)
        prompts = _per(prefill_prompts, pp, one_pp)
        # attention-DP groups run their own sequences; prompts come whole, so the group holding the most
        # prompt tokens sets the pace (with one group, all of them)
        per_prompt = np.where(prompts > 0, _per(prefill_tokens, pp, one_pp) / np.maximum(prompts, 1e-12), 0.0)
        busiest_prompts = np.maximum(_per(prompts, dp, one_dp), np.minimum(prompts, 1.0))
        # tokens through one group's attention and dense layers
        n_group = _per(_times(seqs, v, one_v), dp, one_dp) + busiest_prompts * per_prompt
        linear = (np.maximum(costs.attention_flops_per_token * n_group / tp / rates.attention_gemm_flops_per_s,
                             lay.attention_weight_seconds)
                  + np.maximum(costs.dense_flops_per_token * n_group / tp / rates.dense_gemm_flops_per_s,
                               lay.dense_weight_seconds))
        if rates.kernel_gemms is not None:  # the engine's GEMMs as measured on this GPU, where tables cover them
            linear = kernel_linear_seconds(costs, *rates.kernel_gemms, n_group, tp, linear)
        roof = capped_roofline(costs, rates, n, g, ep, lambda: _experts(costs, rates, calib, n, g, ep))  # moe_cap
        if rates.kernel_moe is not None and not (rates.kernel_moe_fixed_only or rates.kernel_moe_cap):  # the engine's
            experts = kernel_experts_seconds(costs, *rates.kernel_moe, n, g, ep,  # MoE operator as measured on this
                                             roof)  # GPU, where tables cover it
        elif rates.kernel_moe_engine is not None:  # the engine's own operator under EP > 1 (measured_ep_moe_formats)
            experts = kernel_engine_experts_seconds(costs, *rates.kernel_moe_engine, n, g, ep, roof)
        else:  # the roofline (+ the operator's fixed time, lay.overhead_seconds, with moe_source="kernel_fixed")
            experts = roof()
        head = (np.maximum(costs.head_flops_per_token * sampled / g / rates.head_flops_per_s, lay.head_weight_seconds)
                + sampled / g * costs.vocab * LOGIT_BYTES * 2.0 / mem)
        elementwise = lay.elementwise_bytes_per_token * n_group / mem
        decode_attention = np.maximum(seqs * kv_bytes / lay.kv_split / mem,
                                      _times(seqs, v, one_v) * decode_flops / g / rates.attention_flops_per_s)
        prefill_attention = (busiest_prompts * prompt_flops / tp / rates.attention_flops_per_s)
        table_share = None
        if rates.kernel_attention is not None:  # the engine's attention kernels as measured on this GPU, where covered
            scan = busiest_prompts * costs.ssm_scan_flops_per_token * prompt_tokens / tp / rates.attention_flops_per_s
            attention_only = busiest_prompts * prefill_flops / tp / rates.attention_flops_per_s
            verify_batch, verify_tp = verify_attention_lookup(costs.model, seqs / dp, v, tp)  # MLA: KV read once
            decode_attention, prefill_attention, table_share = _kernel_attention(
                costs, rates.kernel_attention, verify_batch, decode_context, busiest_prompts, prompt_tokens, tp,
                decode_attention, attention_only, verify_tp)
            prefill_attention = prefill_attention + scan
        if costs.mamba_layers:  # each decoding sequence reads and writes its Mamba-2 state once per step
            decode_attention = decode_attention + seqs / dp * 2.0 * lay.ssm_state_bytes / mem
        hidden_bytes = n_group * costs.hidden * ACTIVATION_BYTES
        if alone:  # what all_reduce_seconds gives on one GPU: zeros of the payload's shape
            reduce = np.zeros(np.shape(hidden_bytes))
        elif ring_only and type(hidden_bytes) is np.ndarray and hidden_bytes.ndim:  # ... and in one domain
            reduce = ring_share * hidden_bytes / link + latency  # _ring(groups[()], hidden_bytes, link, latency)
        else:
            reduce = all_reduce_seconds(hidden_bytes, tp, link, latency, scaleup_domain=scaleup_domain,
                                        scaleout_bytes_per_s=out)
        if reduce_kernel:  # one server's all-reduce as measured on the GPU
            reduce = kernel_allreduce_seconds(*rates.kernel_allreduce, hidden_bytes, tp, reduce)
        comm = reduces * reduce
        if costs.moe_layers:  # attention-DP groups gather their tokens for the experts and scatter them back
            comm = comm + _moe_exchange(costs, rates, n, n_group, dp, ep, g, hidden_bytes, latency, out,
                                        scaleup_domain)
        launch = np.where(graphed, 0.0, lay.eager_seconds)
        host = _per(_times(rates.host_seconds_per_sequence * sampled, pp, one_pp), dp, one_dp)
        # a round is p stage-times; a stage runs 1/p of every per-layer term, the last one the head
        if lay.pipelined:
            send = np.where(pp > 1, pp * (n_group * costs.hidden * ACTIVATION_BYTES / tp / lay.link_bytes_per_s
                                          + latency), 0.0)
        else:  # what np.where(pp > 1, ..., 0.0) gives for one stage
            send = np.zeros(np.shape(n_group))
        if drafted:
            drafts = draft(seqs)
            overhead = lay.overhead_seconds + drafts * pp + 0.0 * n
        else:
            overhead = fixed_overhead + 0.0 * n
        if low_latency:  # the engine's low-latency MoE kernels run where few tokens go through a MoE layer
            overhead = overhead + np.where(n <= lay.moe_format_max_tokens, lay.moe_format_delta, 0.0)
        head, comm = _times(head, pp, one_pp), comm + send
        if seconds_only:  # IterationTime.seconds, by its properties' expressions
            gpu = np.maximum(linear + experts + head + elementwise + decode_attention + prefill_attention + comm
                             + overhead, launch)
            return np.maximum(gpu, host) if overlap else gpu + host
        return IterationTime(linear, experts, head, elementwise, decode_attention, prefill_attention, comm, overhead,
                             host, launch, overlap, table_share)
    return at


def _kernel_attention(costs, source, batch, context, prompts, prompt_tokens, tp, decode_roofline, prefill_roofline,
                      decode_tp):
    """Decode and prefill attention from the measured kernels where covered (kernel_attention), and the share
    of their seconds the tables gave; decode read at ``batch`` on ``decode_tp`` GPUs (verify_attention_lookup)."""
    decode, dec_ok = kernel_attention.decode_seconds(costs, *source, batch, context, decode_tp, decode_roofline)
    prefill, pre_ok = kernel_attention.prefill_seconds(costs, *source, prompts, prompt_tokens, tp, prefill_roofline)
    total = decode + prefill
    measured = np.where(dec_ok, decode, 0.0) + np.where(pre_ok, prefill, 0.0)
    share = np.where(total > 0, measured / np.where(total > 0, total, 1.0), 1.0)
    return decode, prefill, share
