"""The public entry point: one training layout of one model on one GPU type, estimated.

:func:`estimate` builds the layout once, as a :class:`~aisize.training.parallel.TrainingLayout`
(or takes one: ``layout=``), which refuses an inconsistent one with a ``ValueError`` naming the
parameter; then it runs the same vectorized cores the layout search uses:
:func:`aisize.training.step_time.step_breakdown` and
:func:`aisize.training.memory.memory_breakdown`.

Batch conventions (torchtitan's): ``micro_batch`` is the number of sequences one
data-parallel rank runs forward and backward at once (its "local batch"); with
pipeline parallelism it is split into ``pipeline_microbatches`` micro-batches
(default: the number of stages, torchtitan's default); ``global_batch`` over
``micro_batch`` x DP is the number of gradient-accumulation steps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from aisize import checks
from aisize.memory.states import tidy
from aisize.precision import bytes_per_element
from aisize.training import comm, kernel_gemms, kernel_moe
from aisize.training.dims import model_dims, resolve
from aisize.training.efficiency import efficiency_constants
from aisize.training.evaluate import evaluate_layout
from aisize.training.layer_kinds import model_flops_per_token
from aisize.training.memory import TrainingMemory
from aisize.training.moe import DISPATCHERS
from aisize.training.parallel import TrainingLayout
from aisize.training.recipes import recipe
from aisize.training.setup import accelerator_record, default_links, engine
from aisize.training.values import Options, transformer_engine
from aisize.training.calibration import CALIBRATION as TRAINING_CALIBRATION
from aisize.training.calibration import TrainingCalibration
from aisize.training.calibration import resolve as resolve_calibration
from aisize.training.step_time import CP_METHODS, StepTime

Layout = TrainingLayout  # the name estimates' layouts had before TrainingLayout


@dataclass(frozen=True)
class TrainingEstimate:
    """Predicted step time, throughput, MFU and peak memory of one layout."""

    model: str
    accelerator: str
    layout: TrainingLayout  # resolved: every default filled in, moe_dispatcher included
    step: StepTime
    memory: TrainingMemory
    memory_capacity_bytes: float  # what the framework sees (nvidia-smi total)
    generation: str  # tensor-core generation the efficiencies are taken for
    step_seconds: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    hfu: float  # hardware FLOPs (recompute included, Korthikanti et al. sec. 6) / (time x GPUs x peak)
    peak_memory_bytes: float
    fits: bool
    gemm_source: str = "roofline"  # where the layers' GEMM times come from (aisize.training.kernel_gemms)
    gemm_coverage: str = ""  # in words: which tables, which share of the GEMM FLOPs
    calibration: TrainingCalibration = TRAINING_CALIBRATION  # the constants the step was timed with
    moe_source: str = "roofline"  # where routed experts' times come from (aisize.training.kernel_moe)
    moe_coverage: str = ""  # in words: which table, or the roofline and why

    def __post_init__(self):
        tidy(self)

    @property
    def breakdown(self) -> dict:
        """Step time by part [s]: compute, exposed TP/CP/PP/DP/EP communication, host synchronisation,
        exposed activation offload, bubble, stragglers."""
        s = self.step
        return {"compute": s.compute_seconds, "tp": s.tp_comm_seconds, "cp": s.cp_comm_seconds,
                "pp": s.pp_comm_seconds, "dp": s.dp_comm_exposed_seconds, "ep": s.ep_comm_seconds,
                "host": s.host_sync_seconds, "offload": s.offload_exposed_seconds,
                "bubble": s.pp_bubble_seconds, "stragglers": s.straggler_seconds}

    @property
    def constants(self) -> list[dict]:
        """The efficiency constants behind the estimate, with their sources."""
        return efficiency_constants(self.calibration)


def _int(name, value, high):
    return int(checks.scalar(name, checks.integer(name, value, high=high)))


def estimate(model, accelerator, *, gpus=None, tensor_parallel=1, pipeline_parallel=1, context_parallel=1,
             expert_parallel=1, expert_tensor_parallel=None, schedule="1f1b", virtual_stages=None, micro_batch=None,
             global_batch=None, seq_len=None, pipeline_microbatches=None, recompute="selective", recompute_layers=None,
             recompute_modules=None, activation_offload_layers=0, precision="bf16", compiled=False,
             framework="fsdp", zero_stage=None, optimizer="adamw", grad_reduce_precision=None,
             sequence_parallel=None, async_tp=False, cp_method="all-gather", moe_dispatcher=None,
             moe_load_imbalance=1.0, cuda_graphs=False, embedding_in_pipeline_split=False,
             loss_in_pipeline_split=False, scaleup_bytes_per_s=None, scaleout_bytes_per_s=None,
             scaleup_domain=None, oversubscription=1.0, switch_radix=comm.DEFAULT_SWITCH_RADIX,
             dp_overlap=None, lora_rank=None, qlora=False, gemm_source=None, moe_source=None,
             layout=None, calibration=None) -> TrainingEstimate:
    """Step time, tokens/s per GPU, MFU and peak memory of one training layout.

    Parameters
    ----------
    model : catalog id (``"llama-3-8b"``) or a Transformer record (e.g. from a Hugging Face config)
    accelerator : catalog id (``"h100-sxm"``) or an Accelerator record
    gpus : GPUs [count]; data parallel = gpus / (TP x PP x CP)
    tensor_parallel, pipeline_parallel, context_parallel : degrees (TP divides the heads, PP at
        most the layers (uneven stages allowed), CP divides seq_len)
    expert_parallel : EP, divides the routed experts; with MoE parallel folding (Megatron-Core)
        the expert layers split the same TP x CP x DP GPUs as expert-TP x EP x expert-DP, so
        EP x expert_tensor_parallel must divide TP x CP x DP
    expert_tensor_parallel : expert-TP degree (default: TP, Megatron-Core's default)
    schedule : "1f1b" | "interleaved-1f1b" | "zero-bubble"; virtual_stages : model chunks per
        stage for "interleaved-1f1b" (default 2; must divide the layers per stage when PP divides L)
    micro_batch : sequences per data-parallel rank per forward/backward (torchtitan's local batch)
    global_batch : sequences per optimizer step, a multiple of micro_batch x DP
    seq_len : tokens per sequence
    pipeline_microbatches : micro-batches the local batch is split into for the pipeline
        (default: pipeline_parallel; must divide micro_batch)
    recompute : "none" | "selective" | "full" (:mod:`aisize.training.recompute`)
    recompute_layers : with "full", layers of each model chunk recomputed (Megatron's
        ``recompute_num_layers``, block method); default all
    recompute_modules : with "selective" and a framework other than "fsdp", Megatron's modules
        (``core_attn``, ``moe_act``, ``layernorm``, ``mla_up_proj``, ``mlp``, ``moe``,
        ``shared_experts``); default ``("core_attn",)``
    activation_offload_layers : layers per pipeline stage whose activations are copied to host
        memory after forward and back for backward (Megatron-Core CPU offloading); needs a host
        link (catalog NVLink-C2C or PCIe); the host bytes appear in ``memory.host_bytes``
    precision : "bf16" | "fp16" | "fp8" | "mxfp8" | "nvfp4" (:mod:`aisize.training.recipes`)
    compiled : fused kernels (torch.compile): elementwise chains fused, casts fused into producers
    framework : "fsdp" (PyTorch FSDP2, torchtitan) | "megatron" | "zero" | "deepspeed"
    zero_stage : sharding stage (default 3 for fsdp, 1 for megatron (the distributed optimizer;
        0 without it) and zero, 2 for deepspeed)
    optimizer : see :data:`aisize.precision.OPTIMIZERS` ("muon" adds its Newton-Schulz work)
    grad_reduce_precision : "fp32" | "bf16" gradient buffer and reduction (default fp32 for
        fsdp, bf16 for megatron: Megatron-Core's ``grad_reduce_in_fp32=False``)
    sequence_parallel : default on when TP > 1
    async_tp : overlap TP collectives with the GEMMs (Megatron's TP communication overlap)
    cp_method : "all-gather" (torchtitan, Llama 3) | "ring" (Megatron-Core, overlapped); framework
        "fsdp" with "ring" is Megatron-FSDP, which runs Transformer Engine's kernels (attention,
        fused activations, quantized saved inputs) as Megatron-Core does
    moe_dispatcher : "alltoall" (NCCL all-to-all, separate permutation) | "flex" (DeepEP /
        HybridEP: permutation fused into the dispatch) (:mod:`aisize.training.moe`); default
        "flex" on scale-up domains beyond 8 GPUs (HybridEP, as Megatron-Bridge's GB200/GB300
        recipes run it), else "alltoall"
    moe_load_imbalance : max / mean routed tokens per rank, >= 1 (1: balanced, as the
        benchmark recipes force it; an auxiliary-loss run sits above)
    cuda_graphs : CUDA graphs capture the layers' launches: the GPU waits less for the host
        after the MoE dispatcher's synchronisation (:data:`aisize.training.moe.CUDA_GRAPH_HOST_SHARE`)
    embedding_in_pipeline_split, loss_in_pipeline_split : count the embedding / the loss as one
        pipeline layer (Megatron's ``account_for_*_in_pipeline_split``)
    scaleup_bytes_per_s, scaleout_bytes_per_s, scaleup_domain : per-GPU link rates per direction
        and NVLink domain (default: the accelerator's, and the NICs of the catalog's first
        server with this GPU)
    oversubscription, switch_radix : the scale-out fat tree's leaf down:up ratio and switch ports
    dp_overlap : share of compute that hides data-parallel traffic, [0, 1] (default: the calibration's)
    lora_rank, qlora : LoRA adapters on all linear layers: memory counts the frozen base at bf16
        (nf4 with ``qlora``) and the adapters' training states; the step runs no weight-gradient
        GEMMs for the frozen base and reduces, all-gathers and updates the adapters only
        (:func:`aisize.training.step_time.step_breakdown`); MFU counts the 4N + attention FLOPs
        per token such a step needs (:func:`aisize.compute.flops_per_token`, ``method="lora"``)
    gemm_source : "roofline" (fitted efficiency per generation) | "kernels" (the layers' forward, dgrad and
        wgrad GEMMs read from NVIDIA's measured tables of this GPU, roofline where none covers them;
        :mod:`aisize.training.kernel_gemms`); None: the source of a ``kernel_gemms.using`` block around the
        call, else :data:`aisize.training.kernel_gemms.DEFAULT_GEMM_SOURCE`

    moe_source : "roofline" (tile-padded grouped GEMMs x fitted efficiency) | "kernels" (routed experts read from
        NVIDIA's measured MoE operator on this GPU, roofline where none covers them; :mod:`aisize.training.kernel_moe`);
        None: the source of a ``kernel_moe.using`` block around the call, else
        :data:`aisize.training.kernel_moe.DEFAULT_MOE_SOURCE`
    calibration : the fitted training constants (:mod:`aisize.training.calibration`): None (the shipped
        one), a TrainingCalibration, an :class:`aisize.calibration.Calibration` or a calibration file's path
    layout : a :class:`~aisize.training.parallel.TrainingLayout` of ``model``, instead of the layout
        keywords (gpus through loss_in_pipeline_split, and the recompute, ZeRO, offload, gradient
        reduction and dispatcher choices), which must then be left out

    Returns
    -------
    :class:`TrainingEstimate` with ``tokens_per_s_per_gpu``, ``mfu`` (against the 16-bit dense
    peak), ``step_seconds``, ``peak_memory_bytes`` and ``breakdown``.

    References
    ----------
    .. [1] see :mod:`aisize.training.step_time`, :mod:`aisize.training.memory`,
       :mod:`aisize.training.efficiency`, :mod:`aisize.training.moe` and :mod:`aisize.training.schedules`.
    """
    m = resolve(model)
    acc = accelerator_record(accelerator)
    d = model_dims(m)
    given = dict(gpus=gpus, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                 context_parallel=context_parallel, expert_parallel=expert_parallel,
                 expert_tensor_parallel=expert_tensor_parallel, schedule=schedule, virtual_stages=virtual_stages,
                 micro_batch=micro_batch, global_batch=global_batch, seq_len=seq_len,
                 pipeline_microbatches=pipeline_microbatches, recompute=recompute, recompute_layers=recompute_layers,
                 recompute_modules=recompute_modules, activation_offload_layers=activation_offload_layers,
                 framework=framework, zero_stage=zero_stage, grad_reduce_precision=grad_reduce_precision,
                 sequence_parallel=sequence_parallel, moe_dispatcher=moe_dispatcher,
                 embedding_in_pipeline_split=embedding_in_pipeline_split,
                 loss_in_pipeline_split=loss_in_pipeline_split)
    lay = _layout(m, layout, given)
    recipe(precision, acc)
    compiled = checks.flag("compiled", compiled)
    async_tp = checks.flag("async_tp", async_tp)
    graphs = checks.flag("cuda_graphs", cuda_graphs)
    checks.choice("cp_method", cp_method, CP_METHODS)
    if lay.moe_dispatcher is None:  # HybridEP on scale-up domains beyond 8 GPUs (Megatron-Bridge's GB200 recipes)
        lay = replace(lay, moe_dispatcher="flex" if (scaleup_domain or acc.scaleup_domain) > 8 else "alltoall")
    imbalance = float(checks.scalar("moe_load_imbalance", checks.number("moe_load_imbalance", moe_load_imbalance,
                                                                        low=1.0, high=64.0)))
    links = default_links(acc, scaleup_bytes_per_s=scaleup_bytes_per_s, scaleout_bytes_per_s=scaleout_bytes_per_s,
                          scaleup_domain=scaleup_domain, oversubscription=oversubscription,
                          switch_radix=switch_radix)
    cal = resolve_calibration(calibration)
    overlap = None if dp_overlap is None else checks.fraction("dp_overlap", dp_overlap, allow_zero=True)

    eng = engine(acc, precision=precision, framework=lay.framework, optimizer=optimizer, links=links,
                 grad_reduce_precision=lay.grad_reduce_precision, calibration=cal)
    offload = lay.activation_offload_layers
    if offload and eng.host_bytes_per_s is None:
        raise ValueError(f"activation_offload_layers={offload} is not allowed on {acc.id}: the catalog gives it "
                         "no host link (NVLink-C2C or PCIe) to copy activations over")
    if qlora and lora_rank is None:
        raise ValueError("qlora=True is not allowed without lora_rank: QLoRA trains LoRA adapters")
    rank = None if lora_rank is None else _int("lora_rank", lora_rank, 10**5)
    frozen = bytes_per_element("nf4" if qlora else "bf16") if rank is not None else 0.0
    te = transformer_engine(lay.framework, cp_method)
    opt = Options(framework=lay.framework, compiled=compiled, te=te, async_tp=async_tp, cp_method=cp_method,
                  dp_overlap=overlap, modules=lay.recompute_modules, dispatcher=DISPATCHERS.index(lay.moe_dispatcher),
                  imbalance=imbalance, cuda_graphs=graphs, embed_slot=int(lay.embedding_in_pipeline_split),
                  loss_slot=int(lay.loss_in_pipeline_split), offload_layers=offload, lora_rank=rank,
                  frozen_dtype_bytes=frozen)
    # None: the source of a `using` block around the call, else the default (one rule for both switches)
    source = kernel_gemms.resolve_source(gemm_source)
    experts = kernel_moe.resolve_source(moe_source)
    b, s, cp = lay.pipeline_micro_batch, lay.seq_len, lay.context_parallel
    with kernel_gemms.using(acc.id, source), kernel_moe.using(experts):
        mem, step = evaluate_layout(m, eng, opt, lay)
    covered = (kernel_gemms.coverage(d, acc.id, eng.recipe, b * s / cp, lay.tp, te)
               if source == "kernels" else "roofline x fitted efficiency (gemm_source='roofline')")
    capacity = acc.memory_visible_bytes or acc.memory_bytes
    total = float(np.asarray(mem.total_bytes))
    method = "full" if rank is None else "lora"
    hw = model_flops_per_token(d, s, lay.recompute, method) / model_flops_per_token(d, s, method=method)
    return TrainingEstimate(m.id, acc.id, lay, step, mem, float(capacity), eng.generation, float(step.step_seconds),
                            float(step.tokens_per_s), float(step.tokens_per_s_per_gpu), float(step.mfu),
                            float(step.mfu * hw), total, bool(total <= capacity), source, covered, cal, experts,
                            kernel_moe.coverage(d, acc.id, eng.recipe, lay.ep, lay.etp) if experts == "kernels" else
                            "roofline x fitted expert efficiency (moe_source='roofline')")


# estimate()'s layout keywords and their defaults: with layout= they must be left out
LAYOUT_KEYWORDS = dict(gpus=None, tensor_parallel=1, pipeline_parallel=1, context_parallel=1, expert_parallel=1,
                       expert_tensor_parallel=None, schedule="1f1b", virtual_stages=None, micro_batch=None,
                       global_batch=None, seq_len=None, pipeline_microbatches=None, recompute="selective",
                       recompute_layers=None, recompute_modules=None, activation_offload_layers=0, framework="fsdp",
                       zero_stage=None, grad_reduce_precision=None, sequence_parallel=None, moe_dispatcher=None,
                       embedding_in_pipeline_split=False, loss_in_pipeline_split=False)


def _is_default(value, default) -> bool:
    if value is None or default is None:
        return value is default
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):  # an array: not a default
        return False


def _layout(m, layout, given: dict) -> TrainingLayout:
    """The estimate's layout: ``layout`` (built for model ``m``) or one built from the loose keywords."""
    if layout is None:
        return TrainingLayout(model=m, **given)
    if not isinstance(layout, TrainingLayout):
        raise ValueError(f"layout={layout!r} is not allowed: give a aisize.training.TrainingLayout")
    if layout.model != m:
        raise ValueError(f"layout= is not allowed for model={m.id!r}: it was built for model {layout.model.id!r}")
    extra = [k for k, v in given.items() if not _is_default(v, LAYOUT_KEYWORDS[k])]
    if extra:
        raise ValueError(f"{extra[0]}={given[extra[0]]!r} is not allowed with layout=: the layout gives "
                         f"{', '.join(extra)}; leave them out or build the layout with them")
    return layout
