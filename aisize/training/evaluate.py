"""One evaluation of layouts (a scalar or a whole broadcast grid): memory and step time together.

The single place :func:`aisize.training.estimate` and :func:`aisize.training.search_layouts`
turn a layout into numbers, so a searched layout and the same layout estimated on its own
always agree. Inputs are unchecked here; the callers check them where they enter.
"""

from __future__ import annotations

import numpy as np

from aisize.memory.activations import layer_bytes_core
from aisize.training.dims import model_dims
from aisize.training.memory import (MemoryModel, MemoryRecipe, StageSplit, TrainingMemory, memory_breakdown,
                                    peak_memory_bytes)
from aisize.training.memory_inputs import recompute_saved_sbh, transformer_memory_inputs
from aisize.training.schedules import in_flight, pipeline_slots, stage_in_flight
from aisize.training.setup import Engine
from aisize.training.step_time import StepTime, step_breakdown
from aisize.training.values import Layouts, Options


def evaluate_layout(model, eng: Engine, opt: Options, layout, memory: str = "breakdown") -> tuple[TrainingMemory,
                                                                                                StepTime]:
    """:func:`evaluate` of one :class:`~aisize.training.parallel.TrainingLayout`."""
    return evaluate(model, eng, opt, Layouts.of(layout), memory=memory)


def evaluate(model, eng: Engine, opt: Options, lay: Layouts, memory: str = "breakdown") -> tuple[TrainingMemory,
                                                                                                 StepTime]:
    """(memory of the largest stage, step time) of layouts ``lay`` (broadcastable arrays) of ``model`` on
    the hardware and precision of ``eng`` under the framework options ``opt``. ``memory="peak"`` returns
    only the peak bytes per GPU instead of the breakdown (what ranking a large grid needs).
    """
    seq_len, micro_batch, microbatches, tp, pp, cp, virtual_stages, sp = (
        lay.seq_len, lay.micro_batch, lay.microbatches, lay.tp, lay.pp, lay.cp, lay.virtual_stages, lay.sp)
    d = model_dims(model)
    inputs = transformer_memory_inputs(model, pp=pp, norm_impl="fused" if opt.fused else "eager",
                                       lora_rank=opt.lora_rank, te=opt.te, low_precision=eng.recipe.low_dtype is not None)
    consts = inputs["constants"]
    saved_rep, saved_par = recompute_saved_sbh(model, opt.modules, consts)
    offload_bytes = 0.0
    if opt.offload_layers:
        sbh = seq_len / cp * micro_batch * d.hidden
        offload_bytes = eng.activation_scale * (
            layer_bytes_core(consts, seq_len / cp, micro_batch, d.hidden, d.heads, tp, sp, 0)
            + inputs["moe_copy_sbh"] * sbh / tp)
    step = step_breakdown(d, lay, eng, opt, offload_bytes=offload_bytes,
                          trainable_share=inputs["trainable_share"] if opt.lora_rank is not None else None,
                          parts=memory == "breakdown")
    held, interleave = in_flight(pp, microbatches, virtual_stages)
    busy, last, first = pipeline_slots(d.layers, pp, virtual_stages, opt.embed_slot, opt.loss_slot)
    single = np.asarray(pp) == 1
    core = memory_breakdown if memory == "breakdown" else peak_memory_bytes
    m = MemoryModel(inputs["layer_params"], inputs["expert_params"], inputs["embed_params"], inputs["output_params"],
                    d.hidden, d.heads, d.vocab, consts, inputs["sac_sbh"], inputs["kv_width"], inputs["moe_copy_sbh"],
                    saved_rep, saved_par, d.mtp_layers, inputs["trainable_share"])
    split = StageSplit(np.where(single, d.layers, first), np.where(single, d.layers, last), held, interleave,
                       stage_in_flight(pp, microbatches, virtual_stages, pp - 1))
    mem = core(m, lay, split, MemoryRecipe.of(eng, opt))
    return mem, step
