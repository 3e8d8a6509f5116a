"""Parallel layout search: every TP x PP x DP x micro-batch x ZeRO stage x recompute
(x EP) for a model on N GPUs, evaluated at once with numpy, ranked by predicted step time.

The grid is built with ``np.meshgrid`` and filtered by masks (TP divides heads
and fits one scale-up domain, PP divides layers, DP x micro-batch divides the
global batch, EP divides DP and the experts); memory comes from the training
breakdown core and time from the step-time core, both vectorized, so no
Python loop runs per configuration.
"""

from __future__ import annotations

import numpy as np

from aisize import checks
from aisize.memory.activations import ActivationConstants
from aisize.memory.states import FRAMEWORK_STAGES, per_param_bytes
from aisize.memory.training import TrainingMemory, _memory, transformer_memory_inputs
from aisize.network.collectives import DEFAULT_EFFICIENCY
from aisize.precision import bytes_per_element, peak_flops_per_s, training_precision
from aisize.step_time import (DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_DP_OVERLAP, RECOMPUTE, StepTime, _step)
from aisize.units import bidirectional_to_per_direction


def _divisors(n: int) -> np.ndarray:
    k = np.arange(1, n + 1)
    return k[n % k == 0]


def layout_grid(gpus: int, *, heads: int, layers: int, global_batch: int, scaleup_domain: int,
                stages=(0, 1, 2, 3), recomputes=RECOMPUTE, micro_batches=None, experts: int = 1) -> dict:
    """All consistent layouts as flat integer arrays (keys tp, pp, dp, ep, micro_batch, zero_stage, recompute).

    Parameters
    ----------
    gpus : GPUs [count]; heads, layers : a, L; global_batch : sequences per step
    scaleup_domain : GPUs per NVLink domain (TP stays inside it)
    stages : ZeRO stages to try; recomputes : recompute modes to try
    micro_batches : micro-batch sizes to try (default: powers of two up to 64)
    experts : routed experts (1 = dense: EP fixed at 1)

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (TP inside a server, PP across).
    """
    n = checks.integer("gpus", gpus, high=10**7)
    checks.integer("heads", heads, high=10**6)
    checks.integer("layers", layers, high=10**5)
    checks.integer("global_batch", global_batch, high=10**9)
    checks.integer("scaleup_domain", scaleup_domain, high=10**5)
    for r in recomputes:
        checks.choice("recomputes", r, RECOMPUTE)
    mbs = np.asarray(micro_batches if micro_batches is not None else 2 ** np.arange(7))
    checks.integer("micro_batches", mbs, high=10**6)
    divs = _divisors(n)
    eps = divs[experts % divs == 0] if experts > 1 else np.array([1])
    codes = np.array([RECOMPUTE.index(r) for r in recomputes])
    tp, pp, mb, st, rc, ep = (a.ravel() for a in np.meshgrid(divs, divs, mbs, np.asarray(stages), codes, eps,
                                                             indexing="ij"))
    dp = n // (tp * pp)
    ok = ((n % (tp * pp)) == 0) & (heads % tp == 0) & (tp <= scaleup_domain) & (layers % pp == 0)
    ok &= (global_batch % (mb * np.maximum(dp, 1)) == 0) & (dp % ep == 0)
    return {"tp": tp[ok], "pp": pp[ok], "dp": dp[ok], "ep": ep[ok], "micro_batch": mb[ok],
            "zero_stage": st[ok], "recompute": rc[ok]}


def evaluate_layouts(grid: dict, *, inputs: dict, seq_len, global_batch, precision, optimizer, framework,
                     active_params, total_params, routed_params, experts_per_token, peak, up_bw, out_bw,
                     domain, sequence_parallel=True, compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY,
                     dp_overlap=DEFAULT_DP_OVERLAP, link_efficiency=DEFAULT_EFFICIENCY):
    """Memory breakdown and step time of every layout in ``grid`` (vectorized cores).

    ``inputs`` comes from :func:`aisize.memory.training.transformer_memory_inputs`.
    Returns (:class:`TrainingMemory`, :class:`StepTime`) whose fields are arrays.

    References
    ----------
    .. [1] :func:`aisize.memory.training.training_memory`, :func:`aisize.step_time.step_time`.
    """
    p = training_precision(precision)
    unit = per_param_bytes(precision, optimizer, framework)
    tp, pp, dp, ep = grid["tp"], grid["pp"], grid["dp"], grid["ep"]
    mb, st, code = grid["micro_batch"], grid["zero_stage"], grid["recompute"]
    m = global_batch // (mb * dp)
    in_flight = np.minimum(pp, m)
    consts: ActivationConstants = inputs["constants"]
    mem = _memory(layer_params=inputs["layer_params"], expert_params=inputs["expert_params"],
                  embed_params=inputs["embed_params"], output_params=inputs["output_params"], layers=inputs["layers"],
                  hidden=inputs["hidden"], heads=inputs["heads"], vocab=inputs["vocab"], seq_len=seq_len,
                  micro_batch=mb, tp=tp, pp=pp, dp=dp, ep=ep, sp=sequence_parallel, code=code, stage=st,
                  in_flight=in_flight, interleave=1.0, consts=consts, act_scale=p.activation_scale,
                  dropout=1.0 if inputs["dropout"] else 0.0, unit=unit, framework=framework,
                  weight_bytes=p.weight_bytes, trainable_share=inputs.get("trainable_share", 1.0),
                  frozen_dtype_bytes=inputs.get("frozen_dtype_bytes", 0.0))
    grad_bytes = unit["grad32"] if framework in ("megatron", "fsdp") else unit["grad"]
    step = _step(active_params=active_params, dense_params=total_params - routed_params,
                 routed_params=routed_params, experts_per_token=experts_per_token, layers=inputs["layers"],
                 hidden=inputs["hidden"], attention_dim=inputs.get("attention_dim", inputs["hidden"]),
                 seq_len=seq_len, global_batch=global_batch, micro_batch=mb, tp=tp,
                 pp=pp, dp=dp, ep=ep, virtual_stages=1, code=code, sp=sequence_parallel, stage=st,
                 grad_bytes=grad_bytes, peak=peak, efficiency=compute_efficiency, up_bw=up_bw, out_bw=out_bw,
                 domain=domain, dp_overlap=dp_overlap, link_efficiency=link_efficiency)
    return mem, step


def search_layouts(model, accelerator, gpus: int, *, global_batch: int, seq_len: int,
                   scaleout_bytes_per_s, precision="bf16", optimizer="adamw", framework="zero",
                   sequence_parallel=True, flash_attention=True, dropout=False, micro_batches=None,
                   stages=None, recomputes=RECOMPUTE, headroom=0.05, top=10,
                   compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY, scaleup_bytes_per_s=None,
                   scaleup_domain=None, lora_rank=None, qlora=False):
    """The fastest layouts that fit, with their memory breakdowns, as a pandas DataFrame.

    Parameters
    ----------
    model : catalog Transformer; accelerator : catalog Accelerator (memory, peaks, NVLink)
    gpus : GPUs [count]; global_batch : sequences per step; seq_len : tokens per sequence
    scaleout_bytes_per_s : network rate per GPU per direction [B/s] (NIC rate x NICs / GPUs)
    precision, optimizer, framework : see :func:`aisize.memory.states.model_states`
    sequence_parallel, flash_attention, dropout : model/kernel options for every layout
    micro_batches, stages, recomputes : values to try (default: 1-64, the framework's stages, all)
    headroom : share of GPU memory kept free
    top : rows returned
    scaleup_bytes_per_s, scaleup_domain : override the accelerator's NVLink rate (per
        direction) and domain size
    lora_rank : LoRA rank on all linear layers (None: full training); memory counts the
        frozen base at bf16 (nf4 with ``qlora``) and the adapters' full training states.
        The step time still books full-training FLOPs and gradient traffic (conservative).

    Returns
    -------
    DataFrame sorted by ``step_seconds``: layout columns, step-time parts, ``mfu``,
    ``tokens_per_s`` and every memory line item [B]; empty if nothing fits.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473 (layout guidelines, sec. 3).
    """
    import pandas as pd

    from aisize.models import attention_dim, transformer_params

    usable = accelerator.memory_visible_bytes or accelerator.memory_bytes
    room = checks.number("headroom", headroom, low=0.0, high=1.0, high_inclusive=False)
    top = checks.integer("top", top, high=10**6)
    peak = peak_flops_per_s(accelerator, training_precision(precision).compute_dtype)
    domain = scaleup_domain or accelerator.scaleup_domain
    up = scaleup_bytes_per_s
    if up is None:
        if not accelerator.scaleup_bidirectional_bytes_per_s:
            raise ValueError(f"scaleup_bytes_per_s=None is not allowed: accelerator {accelerator.id!r} "
                             "has no scale-up link in the catalog; pass the rate")
        up = bidirectional_to_per_direction(accelerator.scaleup_bidirectional_bytes_per_s)
    out = checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s)
    grid = layout_grid(gpus, heads=model.heads, layers=model.layers, global_batch=global_batch,
                       scaleup_domain=domain, stages=stages or FRAMEWORK_STAGES[framework],
                       recomputes=recomputes, micro_batches=micro_batches, experts=model.experts)
    if grid["tp"].size == 0:
        raise ValueError(f"global_batch={global_batch!r} is not allowed for gpus={gpus!r}: no TP x PP x DP "
                         f"layout splits it into whole micro-batches (DP must divide the global batch; "
                         f"TP must divide heads={model.heads}, PP the layers={model.layers})")
    pc = transformer_params(model)
    if qlora and lora_rank is None:
        raise ValueError("qlora=True is not allowed without lora_rank: QLoRA trains LoRA adapters")
    inputs = transformer_memory_inputs(model, pp=grid["pp"], dropout=dropout, flash_attention=flash_attention,
                                       lora_rank=lora_rank)
    inputs["attention_dim"] = attention_dim(model)
    if lora_rank is not None:
        inputs["frozen_dtype_bytes"] = bytes_per_element("nf4" if qlora else "bf16")
    mem, step = evaluate_layouts(grid, inputs=inputs, seq_len=checks.positive("seq_len", seq_len),
                                 global_batch=global_batch, precision=precision, optimizer=optimizer,
                                 framework=framework, active_params=pc.active, total_params=pc.total,
                                 routed_params=inputs["expert_params"] * model.layers,
                                 experts_per_token=model.experts_per_token, peak=peak, up_bw=up, out_bw=out,
                                 domain=domain, sequence_parallel=sequence_parallel,
                                 compute_efficiency=compute_efficiency)
    return layout_frame(grid, mem, step, usable * (1.0 - room), global_batch * seq_len, top=top, pd=pd)


def layout_frame(grid: dict, mem: TrainingMemory, step: StepTime, usable_bytes, tokens_per_step, *, top, pd):
    """Rank the layouts that fit by step time and return the best ``top`` as a DataFrame."""
    seconds = np.broadcast_to(step.step_seconds, grid["tp"].shape)
    total = np.broadcast_to(mem.total_bytes, grid["tp"].shape)
    keep = np.flatnonzero(total <= usable_bytes)
    best = keep[np.argsort(seconds[keep], kind="stable")[:top]]
    cols = {k: v[best] for k, v in grid.items()}
    cols["recompute"] = np.asarray(RECOMPUTE)[cols["recompute"]]
    cols["step_seconds"] = seconds[best]
    cols["mfu"] = np.broadcast_to(step.mfu, grid["tp"].shape)[best]
    cols["tokens_per_s"] = np.broadcast_to(tokens_per_step, grid["tp"].shape)[best] / seconds[best]
    for name in ("compute_seconds", "tp_comm_seconds", "pp_bubble_seconds", "pp_comm_seconds",
                 "dp_comm_exposed_seconds", "ep_comm_seconds"):
        cols[name] = np.broadcast_to(getattr(step, name), grid["tp"].shape)[best]
    for name, value in mem.as_dict().items():
        cols[name] = np.broadcast_to(value, grid["tp"].shape)[best]
    return pd.DataFrame(cols).reset_index(drop=True)
