"""One evaluation of layouts (a scalar or a whole broadcast grid): memory and step time together.

The single place :func:`aisize.training.estimate` and :func:`aisize.training.search_layouts`
turn a layout into numbers, so a searched layout and the same layout estimated on its own
always agree. Inputs are unchecked here; the callers check them where they enter.
"""

from __future__ import annotations

from aisize.training.dims import model_dims
from aisize.training.memory import TrainingMemory, memory_breakdown, peak_memory_bytes
from aisize.training.memory_inputs import transformer_memory_inputs
from aisize.training.schedules import in_flight
from aisize.training.setup import Engine
from aisize.training.step_time import DP_OVERLAP, StepTime, step_breakdown


def fused_kernels(framework: str, compiled: bool) -> bool:
    """Whether elementwise chains run fused: torch.compile, or Megatron-LM's fused kernels (always)."""
    return bool(compiled) or framework == "megatron"


def evaluate(model, eng: Engine, *, framework: str, compiled: bool, seq_len, micro_batch, microbatches,
             accumulation, tp, pp, cp, dp, ep, virtual_stages, schedule_code, code, sp, stage, async_tp=False,
             cp_method="all-gather", dp_overlap=DP_OVERLAP, lora_rank=None,
             frozen_dtype_bytes=0.0, memory: str = "breakdown") -> tuple[TrainingMemory, StepTime]:
    """(memory of the largest stage, step time) of layouts given as broadcastable arrays.

    ``micro_batch``: sequences per pipeline micro-batch; ``microbatches``: micro-batches per
    pipeline flush; ``accumulation``: flushes per optimizer step. ``memory="peak"`` returns
    only the peak bytes per GPU instead of the breakdown (what ranking a large grid needs).
    """
    d = model_dims(model)
    fused = fused_kernels(framework, compiled)
    step = step_breakdown(
        d, recipe=eng.recipe, gen=eng.generation, framework=framework, compiled=fused, seq_len=seq_len,
        micro_batch=micro_batch, microbatches=microbatches, accumulation=accumulation, tp=tp, pp=pp, cp=cp, dp=dp,
        ep=ep, virtual_stages=virtual_stages, schedule_code=schedule_code, code=code, sp=sp, stage=stage,
        high_peak=eng.high_peak, low_peak=eng.low_peak, hbm_bytes_per_s=eng.hbm_bytes_per_s, links=eng.links,
        state_bytes_per_param=eng.optimizer_state_bytes, gather_bytes=eng.gather_bytes, grad_bytes=eng.grad_bytes,
        async_tp=async_tp, cp_method=cp_method, dp_overlap=dp_overlap)
    inputs = transformer_memory_inputs(model, pp=pp, norm_impl="fused" if fused else "eager", lora_rank=lora_rank)
    held, interleave = in_flight(pp, microbatches, virtual_stages)
    L = d.layers
    core = memory_breakdown if memory == "breakdown" else peak_memory_bytes
    mem = core(
        layer_params=inputs["layer_params"], expert_params=inputs["expert_params"],
        embed_params=inputs["embed_params"], output_params=inputs["output_params"],
        layers_first=-(-L // pp), layers_last=L // pp, hidden=d.hidden, heads=d.heads, vocab=d.vocab,
        seq_len=seq_len / cp, micro_batch=micro_batch, tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, sp=sp, code=code,
        stage=stage, in_flight=held, interleave=interleave, virtual_stages=virtual_stages,
        consts=inputs["constants"], act_scale=eng.activation_scale, dropout=0.0, unit=eng.unit,
        framework=framework, weight_bytes=eng.weight_bytes, gather_bytes=eng.gather_bytes, compiled=fused,
        sac_sbh=inputs["sac_sbh"], kv_width=inputs["kv_width"], trainable_share=inputs["trainable_share"],
        frozen_dtype_bytes=frozen_dtype_bytes)
    return mem, step
