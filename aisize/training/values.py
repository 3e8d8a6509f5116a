"""The values training's vectorized cores take: the layouts as arrays and the framework's options.

:class:`Layouts` is the vectorized form of :class:`aisize.training.parallel.TrainingLayout`: the same
degrees, batches, schedule, recompute and ZeRO stage, each a scalar or a numpy array that broadcasts
against the others (the layout search's grid, :func:`aisize.training.layout.layout_grid`, or one
checked layout, :meth:`Layouts.of`). It is not checked here: a ``TrainingLayout`` or the grid's mask
(both from :data:`aisize.training.parallel.RULES`) checked it where it entered.

:class:`Options` holds the framework settings of one evaluation that are not layout axes. With the
model's :class:`aisize.training.dims.ModelDims` and the hardware and precision of an
:class:`aisize.training.setup.Engine` (calibration included), these are everything
:func:`aisize.training.evaluate.evaluate`, :func:`aisize.training.step_time.step_breakdown` and the
memory core read. Who builds them and who reads them: docs/training-layout.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize.training.parallel import RECOMPUTE
from aisize.training.schedules import SCHEDULE_CODES


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
    embed_slot: int = 0  # 1 where the embedding counts as a pipeline layer
    loss_slot: int = 0  # 1 where the loss counts as a pipeline layer
    offload_layers: int = 0  # layers per stage whose activations wait in host memory
    lora_rank: int | None = None
    frozen_dtype_bytes: float = 0.0

    @property
    def fused(self) -> bool:
        """Whether elementwise chains run fused: torch.compile, or Megatron-LM's fused kernels (always)."""
        return bool(self.compiled) or self.framework == "megatron"


def transformer_engine(framework: str, cp_method: str) -> bool:
    """Whether a layout runs Transformer Engine kernels: Megatron-Core always; FSDP when it uses
    Megatron-Core's ring context parallelism (Megatron-FSDP), else PyTorch FSDP2 (torchtitan)."""
    return framework == "megatron" or (framework == "fsdp" and cp_method == "ring")


@dataclass(frozen=True, kw_only=True)
class Layouts:
    """Layouts as broadcastable scalars or arrays (unchecked; see the module docstring).

    ``micro_batch``: sequences per pipeline micro-batch; ``microbatches``: micro-batches per pipeline
    flush (1 without PP); ``accumulation``: flushes per optimizer step; ``recompute`` 0/1/2 none /
    selective / full with ``full_share`` of the layers under full recompute; ``sp`` sequence
    parallelism; ``stage`` the ZeRO stage; ``schedule_code`` in :data:`aisize.training.schedules.SCHEDULES`.
    """

    seq_len: object
    micro_batch: object
    microbatches: object
    accumulation: object
    tp: object
    pp: object
    cp: object
    dp: object
    ep: object
    etp: object = 1
    virtual_stages: object = 1
    schedule_code: object = 0
    recompute: object = 0
    full_share: object = 1.0
    sp: object = False
    stage: object = 0

    @classmethod
    def of(cls, lay) -> "Layouts":
        """One checked :class:`~aisize.training.parallel.TrainingLayout` (its pipeline micro-batch,
        micro-batches per flush and accumulation steps, its degrees and recompute)."""
        return cls(seq_len=lay.seq_len, micro_batch=lay.pipeline_micro_batch, microbatches=lay.pipeline_microbatches,
                   accumulation=lay.accumulation, tp=lay.tp, pp=lay.pp, cp=lay.cp, dp=lay.dp, ep=lay.ep,
                   etp=lay.etp, virtual_stages=lay.vp, schedule_code=SCHEDULE_CODES[lay.schedule],
                   recompute=RECOMPUTE.index(lay.recompute), full_share=lay.recompute_share,
                   sp=lay.sequence_parallel, stage=lay.zero_stage)
