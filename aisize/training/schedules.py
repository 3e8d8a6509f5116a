"""Pipeline schedules: layers per stage (uneven stages allowed), the bubble, micro-batches in flight.

=================  ===============================  ===================================  =====================
schedule           bubble (share of one flush's      micro-batches the first stage holds   source
                   ideal time)
=================  ===============================  ===================================  =====================
1f1b               (p - 1) / m                       min(p, m)                             Narayanan et al. 2021
                                                                                           sec. 2.2.1
interleaved-1f1b   (p - 1) / (v m)                   min(m, p (1 + (p - 1)/(p v)))         sec. 2.2.2; Korthikanti
                                                                                           et al. 2022 sec. 4.2.3
zero-bubble        (p - 1) / (3 m)                   min(p, m)                             Qi et al. 2024 (ZB-H1)
=================  ===============================  ===================================  =====================

p stages, m micro-batches per flush, v model chunks per stage. Zero-bubble (ZB-H1)
splits the backward into input-gradient (B) and weight-gradient (W) passes and fills
the bubble with W: its bubble is (p - 1)(T_F + T_B - T_W) against 1F1B's
(p - 1)(T_F + T_B + T_W); with the three equal (each a third of a layer's GEMM
FLOPs) that is a third of 1F1B's, at 1F1B's activation memory [3].

Uneven stages: like torchtitan's split, a model of L layers over p stages gives
each stage floor(L/p) or ceil(L/p) layers (126 over 8: 15 or 16); the slowest
stage sets the pace. Interleaving splits a stage into v chunks; when p divides L,
v must divide the layers per stage (Megatron-LM's rule).

References
----------
.. [1] Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
   Clusters Using Megatron-LM", arXiv:2104.04473, sec. 2.2.
.. [2] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4.2.3 (interleaved memory).
.. [3] Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241, sec. 3.
.. [4] pytorch/torchtitan ``pipelining_utils.generate_split_points`` (uneven stages).
.. [5] NVIDIA Megatron-LM ``megatron/core/pipeline_parallel/schedules.py``
   (``forward_backward_pipelining_with_interleaving``: rank r runs (p - r - 1)·2 + (v - 1)·p
   warmup forwards; without interleaving p - r - 1) and ``combined_1f1b.py`` (the EP all-to-all
   of one micro-batch's forward hidden under another's backward, and vice versa, in the steady
   state only).

Each rank holds the activations of its warmup forwards and one more until its first backward:
(W_r + 1)/v micro-batches of its stage's layers, at most all m. Rank 0 gives
:func:`in_flight` (p + (p - 1)/v); the last rank (which also runs the loss) holds
((v - 1)·p + 1)/v, not one micro-batch, under interleaving [5].
"""

from __future__ import annotations

import numpy as np

from aisize import checks

SCHEDULES = ("1f1b", "interleaved-1f1b", "zero-bubble")
BUBBLE_SHARE = {"1f1b": 1.0, "interleaved-1f1b": 1.0, "zero-bubble": 1.0 / 3.0}
SCHEDULE_CODES = {name: i for i, name in enumerate(SCHEDULES)}


def check_virtual_stages(layers, pp, virtual_stages, schedule: str) -> None:
    """Raise ValueError when the chunks do not fit the layers (scalar inputs): the schedule rules of
    :data:`aisize.training.parallel.RULES`, the ones layouts and the layout search are checked with."""
    from aisize.training.parallel import Degrees, ModelSizes, check

    code = SCHEDULE_CODES[checks.choice("schedule", schedule, SCHEDULES)]
    d = Degrees(gpus=pp, tp=1, pp=int(pp), cp=1, dp=1, ep=1, etp=1, schedule=code, v=int(virtual_stages),
                slots=int(layers), extra_slots=0, micro_batch=1, microbatches=1, global_batch=1, seq_len=1)
    check(d, ModelSizes("", int(layers), 1, 0, 0, 1, 0), topics=("schedule",))


def stage_layers(layers, pp, virtual_stages=1):
    """(layers on the busiest stage, layers on the last stage) with uneven splits allowed.

    The busiest rank holds v chunks of ceil(L/(p v)) layers; the last stage (which also
    runs the output layer and the loss) holds floor(L/p).
    """
    chunk = -(-layers // (pp * virtual_stages))
    return chunk * virtual_stages, layers // pp


def pipeline_slots(layers, pp, virtual_stages=1, embed_slot=0, loss_slot=0):
    """Transformer layers on (a middle stage, the last stage, the first stage).

    Megatron can count the embedding and the loss as one pipeline layer each
    (``account_for_embedding_in_pipeline_split``, ``account_for_loss_in_pipeline_split``):
    the L + e + l slots are split into chunks of ceil((L + e + l)/(p v)), so 126 layers with
    both over 16 x 4 chunks are 2 slots each, and the first and last stages hold one
    transformer layer fewer. Without them this is :func:`stage_layers` (the first stage
    holds as many layers as the busiest).
    """
    slots = layers + embed_slot + loss_slot
    chunk = -(-slots // (pp * virtual_stages))
    busy = chunk * virtual_stages
    return busy, slots // pp - loss_slot, busy - embed_slot


def bubble_share(pp, microbatches, virtual_stages, schedule_code):
    """Idle share of one pipeline flush relative to its ideal time: share x (p - 1)/(v m)."""
    share = np.choose(schedule_code, [BUBBLE_SHARE[s] for s in SCHEDULES])
    return share * (pp - 1) / (virtual_stages * microbatches)


def in_flight(pp, microbatches, virtual_stages):
    """Micro-batches of activations the first stage holds at once (1F1B and interleaved 1F1B).

    Returns (micro-batches, interleave factor): the first stage keeps min(p, m)
    micro-batches of its layers; interleaving holds (1 + (p - 1)/(p v)) times that,
    never more than all m micro-batches.
    """
    held = np.minimum(pp, microbatches)
    factor = np.where(virtual_stages > 1, 1.0 + (pp - 1) / (pp * virtual_stages), 1.0)
    return held, np.minimum(factor, microbatches / held)


def pipeline_in_flight(pp, num_microbatches, virtual_stages=1):
    """:func:`in_flight` with its inputs checked (scalars or arrays).

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2.1-2.2.2; Korthikanti et al. 2022, sec. 4.2.3.
    """
    p = checks.integer("pp", pp, high=10**4)
    m = checks.integer("num_microbatches", num_microbatches, high=10**9)
    v = checks.integer("virtual_stages", virtual_stages, high=10**3)
    return in_flight(p, m, v)


def warmup_chunks(pp, microbatches, virtual_stages, rank=0):
    """Model-chunk forwards rank ``rank`` runs before its first backward (Megatron-LM's schedules [5]).

    Interleaved (v > 1): (p - r - 1)·2 + (v - 1)·p; 1F1B: p - r - 1; never more than all m·v.
    """
    v = np.asarray(virtual_stages)
    w = np.where(v > 1, (pp - rank - 1) * 2 + (v - 1) * pp, pp - rank - 1)
    return np.minimum(w, microbatches * v)


def stage_in_flight(pp, microbatches, virtual_stages, rank):
    """Micro-batches of its stage's layer activations rank ``rank`` holds at its peak [count].

    (warmup chunks + 1)/v, at most m: rank 0 is :func:`in_flight`'s product; the last rank
    holds ((v - 1)·p + 1)/v under interleaving and 1 without it.
    """
    v = np.asarray(virtual_stages)
    held = np.minimum(warmup_chunks(pp, microbatches, v, rank) + 1, microbatches * v)
    return held / v


def unpaired_share(pp, microbatches, virtual_stages):
    """Share of rank 0's chunk forwards (and backwards) the combined 1F1B schedule runs alone [0-1].

    Megatron-LM's EP all-to-all overlap pairs each steady-state forward with another micro-batch's
    backward; the warmup forwards and the cool-down backwards have no partner [5]. Without
    pipelining the first forward and the last backward are alone (one of m).
    """
    total = microbatches * np.asarray(virtual_stages)
    return np.minimum(np.maximum(warmup_chunks(pp, microbatches, virtual_stages, 0), 1), total) / total
