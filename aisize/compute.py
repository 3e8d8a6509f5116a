"""Training compute: FLOPs, time at an MFU, GPUs for a deadline, GPU-hours, energy.

Model FLOPs per token are 6N (2 forward, 4 backward per parameter) plus
12·L·H·Q·s for attention scores (PaLM appendix B); MFU counts these. Hardware
FLOPs add recomputation: full recompute runs the forward twice (8N + 16·L·H·Q·s),
selective recompute re-runs the attention scores (+4·L·H·Q·s). MoE models use
active parameters here and all parameters for memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks

RECOMPUTE = ("none", "selective", "full")
METHODS = ("full", "lora")  # lora: frozen base weights (LoRA, QLoRA) need no weight gradients
DEFAULT_MFU = 0.4  # assumption: large published runs land at 35-50 % (reference/training_runs.csv)
CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022, arXiv:2203.15556, Table 3 (~20 tokens/param)
CHINCHILLA_FAR_FACTOR = 2.0  # assumption: warn when D/N is over 2x or under 1/2 of 20


def flops_per_token(params, *, layers=0, attention_dim=0, seq_len=0, recompute: str = "none",
                    method: str = "full"):
    """Training FLOPs per token [FLOP]: 6N + 12·L·H·Q·s, plus recomputation.

    Parameters
    ----------
    params : N, parameters a token passes through (MoE: active) [count]
    layers, seq_len : L, s for the attention term (0 omits it)
    attention_dim : H·Q, attention heads x head dimension (PaLM appendix B); the
        hidden size for most models, not for PaLM (12,288 vs 18,432) or MLA models;
        :func:`aisize.models.attention_dim` gives it for a catalog model
    recompute : none | selective (+4·L·H·Q·s) | full (+2N + 4·L·H·Q·s: one more forward)
    method : "full" trains every weight; "lora" freezes the base (LoRA/QLoRA): the
        backward pass still propagates activation gradients (2N) but computes no
        weight gradients (the other 2N), so 4N + 12·L·H·Q·s (adapter FLOPs are
        negligible at small rank)

    Returns
    -------
    FLOP per training token; with recompute "none" these are model FLOPs (MFU).

    References
    ----------
    .. [1] Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (C = 6N per token).
    .. [2] Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, appendix B (6N + 12LHQT).
    .. [3] Korthikanti et al. 2022, arXiv:2205.05198, sec. 5 (recompute overheads).
    .. [4] Hu et al. 2021, "LoRA", arXiv:2106.09685, sec. 4 ("we do not need to
       calculate the gradients ... for most parameters": frozen weights get none).
    """
    n = checks.positive("params", params)
    L = checks.non_negative("layers", layers)
    h = checks.non_negative("attention_dim", attention_dim)
    s = checks.non_negative("seq_len", seq_len)
    mode = checks.choice("recompute", recompute, RECOMPUTE)
    weight_grads = 2.0 * n if checks.choice("method", method, METHODS) == "full" else 0.0
    attention_fwd = 4.0 * L * h * s
    model = 4.0 * n + weight_grads + 3.0 * attention_fwd
    extra = {"none": 0.0, "selective": attention_fwd, "full": 2.0 * n + attention_fwd}[mode]
    return model + extra


def training_flops(params, tokens, **kwargs):
    """Training FLOPs of a run [FLOP] = :func:`flops_per_token` x tokens.

    GPT-3: 6 x 174.6e9 x 300e9 = 3.14e23 (Brown et al. 2020, Table D.1).

    References
    ----------
    .. [1] Brown et al. 2020, arXiv:2005.14165, Table D.1; PaLM appendix B.
    """
    d = checks.positive("tokens", tokens)
    return flops_per_token(params, **kwargs) * d


def training_seconds(flops, gpus, peak_flops_per_s, *, mfu=DEFAULT_MFU, goodput=1.0):
    """Wall time = FLOPs / (GPUs x peak x MFU) / goodput [s].

    Parameters
    ----------
    flops : model FLOPs [FLOP]; gpus : [count]; peak_flops_per_s : dense peak per GPU [FLOP/s]
    mfu : model FLOPs utilization, (0, 1]
    goodput : share of wall time that makes progress (restarts, checkpoints), (0, 1]

    References
    ----------
    .. [1] Chowdhery et al. 2022, arXiv:2204.02311, appendix B (MFU).
    """
    f = checks.non_negative("flops", flops)
    g = checks.positive("gpus", gpus)
    peak = checks.positive("peak_flops_per_s", peak_flops_per_s)
    u = checks.fraction("mfu", mfu)
    gp = checks.fraction("goodput", goodput)
    return f / (g * peak * u) / gp


def gpus_needed(flops, target_seconds, peak_flops_per_s, *, mfu=DEFAULT_MFU, goodput=1.0):
    """GPUs to finish ``flops`` within ``target_seconds`` [count], rounded up.

    References
    ----------
    .. [1] inverse of :func:`training_seconds`.
    """
    f = checks.positive("flops", flops)
    t = checks.positive("target_seconds", target_seconds)
    peak = checks.positive("peak_flops_per_s", peak_flops_per_s)
    u = checks.fraction("mfu", mfu)
    gp = checks.fraction("goodput", goodput)
    n = np.ceil(f / (t * peak * u * gp) * (1 - 1e-12))
    return int(n) if np.ndim(n) == 0 else n.astype(np.int64)


def gpu_hours(gpus, seconds):
    """GPU-hours [GPU·h] = GPUs x seconds / 3600."""
    return checks.positive("gpus", gpus) * checks.non_negative("seconds", seconds) / 3600.0


def energy_joules(gpus, seconds, watts):
    """Energy at a per-GPU power (TDP for an upper bound) [J] = GPUs x W x s.

    References
    ----------
    .. [1] Patterson et al. 2021, arXiv:2104.10350, sec. 2 (energy = power x time;
       multiply by the facility PUE for the site figure).
    """
    return (checks.positive("gpus", gpus) * checks.positive("watts", watts)
            * checks.non_negative("seconds", seconds))


def seconds_from_throughput(params, tokens, per_gpu_flops_per_s, gpus=1):
    """Compute-only wall time from a reported per-GPU model throughput [s]: 6ND / (GPUs x rate)."""
    rate = checks.positive("per_gpu_flops_per_s", per_gpu_flops_per_s)
    return training_flops(params, tokens) / (checks.positive("gpus", gpus) * rate)


@dataclass(frozen=True)
class Chinchilla:
    """Tokens against the compute-optimal ~20 tokens per parameter."""

    optimal_tokens: float
    tokens_per_param: float
    ratio: float  # tokens / optimal tokens
    note: str  # empty when within CHINCHILLA_FAR_FACTOR


def chinchilla(params, tokens) -> Chinchilla:
    """Compare tokens with Chinchilla's compute-optimal D ~ 20 N; a note when far off.

    References
    ----------
    .. [1] Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models",
       arXiv:2203.15556, Table 3 (e.g. 70B params -> 1.4T tokens).
    """
    n = checks.scalar("params", checks.positive("params", params))
    d = checks.scalar("tokens", checks.positive("tokens", tokens))
    optimal = CHINCHILLA_TOKENS_PER_PARAM * n
    ratio = d / optimal
    note = ""
    if ratio > CHINCHILLA_FAR_FACTOR:
        note = (f"{d / n:.0f} tokens per parameter is {ratio:.1f}x Chinchilla's ~20: over-trained for "
                "its compute (usual when inference cost matters), not compute-optimal")
    elif ratio < 1.0 / CHINCHILLA_FAR_FACTOR:
        note = (f"{d / n:.1f} tokens per parameter is {ratio:.2f}x Chinchilla's ~20: a smaller model "
                "trained on more tokens would reach a lower loss for the same compute")
    return Chinchilla(optimal, d / n, ratio, note)
