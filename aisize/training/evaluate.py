"""One evaluation of layouts (a scalar or a whole broadcast grid): memory and step time together.

The single place :func:`aisize.training.estimate` and :func:`aisize.training.search_layouts`
turn a layout into numbers, so a searched layout and the same layout estimated on its own
always agree. Inputs are unchecked here; the callers check them where they enter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.memory.activations import layer_bytes_core
from aisize.training.dims import model_dims
from aisize.training.efficiency import attention_kernel
from aisize.training.memory import TrainingMemory, memory_breakdown, peak_memory_bytes
from aisize.training.memory_inputs import recompute_saved_sbh, transformer_memory_inputs
from aisize.training.parallel import RECOMPUTE
from aisize.training.schedules import SCHEDULE_CODES, in_flight, pipeline_slots, stage_in_flight
from aisize.training.setup import Engine
from aisize.training.step_time import Moe, Recompute, StepTime, step_breakdown


@dataclass(frozen=True)
class Options:
    """Framework settings of one evaluation that are not layout axes (see :func:`aisize.training.estimate`)."""

    framework: str = "fsdp"
    compiled: bool = False
    te: bool = False  # Transformer Engine kernels (Megatron-Core, Megatron-FSDP), else PyTorch's
    async_tp: bool = False
    cp_method: str = "all-gather"
    dp_overlap: float | None = None  # None: the calibration's (aisize.training.calibration)
    modules: tuple = ("core_attn",)  # Megatron selective recompute modules
    dispatcher: int = 0  # index in aisize.training.moe.DISPATCHERS
    imbalance: float = 1.0
    cuda_graphs: bool = False
    embed_slot: int = 0
    loss_slot: int = 0
    offload_layers: int = 0
    lora_rank: int | None = None
    frozen_dtype_bytes: float = 0.0


def fused_kernels(framework: str, compiled: bool) -> bool:
    """Whether elementwise chains run fused: torch.compile, or Megatron-LM's fused kernels (always)."""
    return bool(compiled) or framework == "megatron"


def transformer_engine(framework: str, cp_method: str) -> bool:
    """Whether a layout runs Transformer Engine kernels: Megatron-Core always; FSDP when it uses
    Megatron-Core's ring context parallelism (Megatron-FSDP), else PyTorch FSDP2 (torchtitan)."""
    return framework == "megatron" or (framework == "fsdp" and cp_method == "ring")


def evaluate_layout(model, eng: Engine, opt: Options, layout, memory: str = "breakdown") -> tuple[TrainingMemory,
                                                                                                StepTime]:
    """:func:`evaluate` of one :class:`~aisize.training.parallel.TrainingLayout` (its pipeline
    micro-batch, micro-batches per flush and accumulation steps, its degrees and recompute)."""
    lay = layout
    return evaluate(model, eng, opt, seq_len=lay.seq_len, micro_batch=lay.pipeline_micro_batch,
                    microbatches=lay.pipeline_microbatches, accumulation=lay.accumulation, tp=lay.tp, pp=lay.pp,
                    cp=lay.cp, dp=lay.dp, ep=lay.ep, etp=lay.etp, virtual_stages=lay.vp,
                    schedule_code=SCHEDULE_CODES[lay.schedule], code=RECOMPUTE.index(lay.recompute),
                    full_share=lay.recompute_share, sp=lay.sequence_parallel, stage=lay.zero_stage, memory=memory)


def evaluate(model, eng: Engine, opt: Options, *, seq_len, micro_batch, microbatches, accumulation, tp, pp, cp, dp,
             ep, virtual_stages, schedule_code, code, sp, stage, etp=1, full_share=1.0,
             memory: str = "breakdown") -> tuple[TrainingMemory, StepTime]:
    """(memory of the largest stage, step time) of layouts given as broadcastable arrays.

    ``micro_batch``: sequences per pipeline micro-batch; ``microbatches``: micro-batches per
    pipeline flush; ``accumulation``: flushes per optimizer step; ``code`` 0/1/2 recompute
    none/selective/full with ``full_share`` of the layers under full recompute. ``memory="peak"``
    returns only the peak bytes per GPU instead of the breakdown (what ranking a large grid needs).
    """
    d = model_dims(model)
    framework = opt.framework
    fused = fused_kernels(framework, opt.compiled)
    inputs = transformer_memory_inputs(model, pp=pp, norm_impl="fused" if fused else "eager",
                                       lora_rank=opt.lora_rank, te=opt.te, low_precision=eng.recipe.low_dtype is not None)
    consts = inputs["constants"]
    saved_rep, saved_par = recompute_saved_sbh(model, opt.modules, consts)
    offload_bytes = 0.0
    if opt.offload_layers:
        sbh = seq_len / cp * micro_batch * d.hidden
        offload_bytes = eng.activation_scale * (
            layer_bytes_core(consts, seq_len / cp, micro_batch, d.hidden, d.heads, tp, sp, 0)
            + inputs["moe_copy_sbh"] * sbh / tp)
    step = step_breakdown(
        d, recipe=eng.recipe, gen=eng.generation, framework=framework, compiled=fused, seq_len=seq_len,
        micro_batch=micro_batch, microbatches=microbatches, accumulation=accumulation, tp=tp, pp=pp, cp=cp, dp=dp,
        ep=ep, virtual_stages=virtual_stages, schedule_code=schedule_code,
        rc=Recompute(code, full_share, opt.modules), sp=sp, stage=stage, high_peak=eng.high_peak,
        low_peak=eng.low_peak, hbm_bytes_per_s=eng.hbm_bytes_per_s, links=eng.links,
        state_bytes_per_param=eng.optimizer_state_bytes, gather_bytes=eng.gather_bytes, grad_bytes=eng.grad_bytes,
        async_tp=opt.async_tp, cp_method=opt.cp_method, dp_overlap=opt.dp_overlap,
        moe=Moe(etp, opt.dispatcher, opt.imbalance, opt.cuda_graphs), attention_kernel=attention_kernel(eng.generation, opt.te), te=opt.te,
        exp_per_s=eng.exp_per_s, embed_slot=opt.embed_slot, loss_slot=opt.loss_slot, offload_bytes=offload_bytes,
        offload_layers=opt.offload_layers, host_bytes_per_s=eng.host_bytes_per_s,
        optimizer_flops_per_param=d.muon_flops_per_param if eng.optimizer == "muon" else 0.0,
        trainable_share=inputs["trainable_share"] if opt.lora_rank is not None else None,
        parts=memory == "breakdown", calibration=eng.calibration)
    held, interleave = in_flight(pp, microbatches, virtual_stages)
    busy, last, first = pipeline_slots(d.layers, pp, virtual_stages, opt.embed_slot, opt.loss_slot)
    single = np.asarray(pp) == 1
    core = memory_breakdown if memory == "breakdown" else peak_memory_bytes
    mem = core(
        layer_params=inputs["layer_params"], expert_params=inputs["expert_params"],
        embed_params=inputs["embed_params"], output_params=inputs["output_params"],
        layers_first=np.where(single, d.layers, first), layers_last=np.where(single, d.layers, last),
        hidden=d.hidden, heads=d.heads, vocab=d.vocab,
        seq_len=seq_len / cp, micro_batch=micro_batch, tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, sp=sp, code=code,
        stage=stage, in_flight=held, interleave=interleave, virtual_stages=virtual_stages,
        consts=consts, act_scale=eng.activation_scale, dropout=0.0, unit=eng.unit,
        framework=framework, weight_bytes=eng.weight_bytes, gather_bytes=eng.gather_bytes, compiled=fused,
        sac_sbh=inputs["sac_sbh"], kv_width=inputs["kv_width"], trainable_share=inputs["trainable_share"],
        frozen_dtype_bytes=opt.frozen_dtype_bytes, etp=etp, full_share=full_share, saved_rep_sbh=saved_rep,
        saved_par_sbh=saved_par, moe_copy_sbh=inputs["moe_copy_sbh"], offload_layers=opt.offload_layers, te=opt.te,
        mtp_layers=d.mtp_layers, in_flight_last=stage_in_flight(pp, microbatches, virtual_stages, pp - 1),
        calibration=eng.calibration)
    return mem, step
