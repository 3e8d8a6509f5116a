"""Training: memory per GPU, kernel efficiency, step time, schedules, layout search, throughput.

``estimate(model, accelerator, gpus=..., ...)`` is the entry point the planner, the app, the
report and the validation use; ``search_layouts`` ranks every layout of a job; ``samples_per_s``
is what the storage side asks for. Modules, one concept each:

========================  ==========================================================
``dims``                  the sizes of a transformer the cores use
``layer_kinds``           attention / Mamba-2 / MLP / MoE blocks: parameters, FLOPs, activations
``efficiency``            GEMM, attention, memory-bound and straggler efficiencies
``recipes``               bf16 / fp8 / mxfp8 / nvfp4: low-precision GEMMs, casts, state
``work``                  one layer's kernels timed (forward, backward; Mamba-2 scans)
``moe``                   routed experts: grouped GEMMs, routing, permutation, dispatcher sync
``recompute``             full (some layers per chunk) and Megatron module recompute
``schedules``             pipeline schedules: stages, bubble, micro-batches in flight
``comm``                  where a group's traffic goes; collectives over NVLink and fabric
``step_time``             the step-time parts and MFU
``memory``                the per-GPU memory breakdown
``memory_inputs``         a transformer record to the memory core's numbers
``setup`` / ``evaluate``  shared inputs and the one evaluation both entry points use
``arrays``                sums of broadcast arrays, smallest first (layout-search speed)
``parallel``              TrainingLayout: a layout as one value, its rules written once
``layout``                the vectorized layout search
``throughput``            samples/s per GPU (storage demand)
``estimate``              the public entry point
========================  ==========================================================
"""

from aisize.training.efficiency import efficiency_constants, generation
from aisize.training.estimate import Layout, TrainingEstimate, estimate
from aisize.training.layer_kinds import LayerKind, layer_kinds, mamba_saved_bytes_per_token, model_flops_per_token
from aisize.training.layout import (Grid, chosen_layout, evaluate_grid, layout_frame, layout_grid, rank_layouts,
                                    search_layouts)
from aisize.training.memory import (Fit, TrainingMemory, fits, max_micro_batch, other_model_training_memory,
                                    training_memory)
from aisize.training.memory_inputs import transformer_memory_inputs, transformer_training_memory
from aisize.training.parallel import TrainingLayout
from aisize.training.recipes import PRECISIONS, recipe
from aisize.training.schedules import SCHEDULES, pipeline_in_flight
from aisize.training.step_time import ASYNC_TP_HIDDEN_SHARE, DP_OVERLAP, PARTS, StepTime
from aisize.training.throughput import (DEFAULT_MFU, TRAINING_FLOPS_PER_FORWARD_FLOP, ResolvedThroughput,
                                        resolve_samples_per_s, samples_per_s, samples_per_s_for_model,
                                        samples_per_s_from_flops)

__all__ = ["estimate", "TrainingEstimate", "TrainingLayout", "Layout", "search_layouts", "chosen_layout",
           "layout_grid", "evaluate_grid", "rank_layouts", "layout_frame", "Grid", "TrainingMemory", "Fit", "fits", "max_micro_batch",
           "training_memory", "transformer_training_memory", "transformer_memory_inputs",
           "other_model_training_memory", "StepTime", "PARTS", "DP_OVERLAP", "ASYNC_TP_HIDDEN_SHARE", "SCHEDULES", "pipeline_in_flight", "PRECISIONS", "recipe",
           "efficiency_constants", "generation", "samples_per_s", "resolve_samples_per_s",
           "samples_per_s_for_model", "samples_per_s_from_flops", "ResolvedThroughput",
           "TRAINING_FLOPS_PER_FORWARD_FLOP", "DEFAULT_MFU", "layer_kinds", "LayerKind", "model_flops_per_token",
           "mamba_saved_bytes_per_token"]
