"""Step time of a parallel training layout from first principles, and the MFU it implies.

step = compute + exposed TP communication + pipeline bubble + pipeline sends
       + exposed data-parallel gradient traffic + MoE all-to-all

* compute: hardware FLOPs (recompute included) / (GPUs x peak x efficiency);
* TP (Megatron): per layer and micro-batch two all-reduces forward and two
  backward of the s·b·h 16-bit activations (two more with full recompute; with
  sequence parallelism all-gather + reduce-scatter move the same bytes), not overlapped;
* bubble: (p - 1)/(v·m) of the pipelined work (Narayanan et al. 2021, sec. 2.2);
* PP: one activation send forward and one gradient send backward per micro-batch;
* DP: gradient all-reduce (stages 0-2; reduce-scatter + all-gather is the same
  traffic) or 1.5x that with ZeRO-3's parameter gathers (ZeRO sec. 7.2.2), hidden
  under the backward pass up to :data:`DEFAULT_DP_OVERLAP` of it;
* EP: dispatch and combine all-to-alls of the routed tokens, forward and backward.

Ranks are placed TP fastest, then DP (and EP inside DP), then PP (Megatron's
default order), so a group of n ranks with stride g spans gcd(n, domain/g) GPUs
of one scale-up domain and the rest over the scale-out network.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.compute import RECOMPUTE, flops_per_token
from aisize.memory.states import tidy
from aisize.network.collectives import DEFAULT_EFFICIENCY, transfer_seconds, two_tier_collective_seconds

# Assumption: share of dense peak that transformer-layer kernels sustain (large
# bf16 GEMMs reach 70-80 %, attention and elementwise kernels less); calibrate
# against gpu_throughput.csv / Megatron-LM's published MFU.
DEFAULT_COMPUTE_EFFICIENCY = 0.6
# Assumption: share of the backward pass the gradient reduction can hide under
# (DDP buckets / Megatron overlap_grad_reduce start before backward ends).
DEFAULT_DP_OVERLAP = 0.8
ACTIVATION_BYTES = 2.0  # 16-bit activations and activation gradients on the wire
SCALEUP_LATENCY_SECONDS = 1e-6  # NVLink step, as in aisize.network.collectives
SCALEOUT_LATENCY_SECONDS = 5e-6  # network hop, as in aisize.network.collectives


@dataclass(frozen=True)
class StepTime:
    """One optimizer step of one layout [s], and its model FLOPs utilization."""

    compute_seconds: float
    tp_comm_seconds: float
    pp_bubble_seconds: float
    pp_comm_seconds: float
    dp_comm_exposed_seconds: float
    ep_comm_seconds: float
    model_flops: float  # per step, all GPUs [FLOP]
    gpus: float
    peak_flops_per_s: float

    def __post_init__(self):
        tidy(self)

    @property
    def step_seconds(self):
        return (self.compute_seconds + self.tp_comm_seconds + self.pp_bubble_seconds + self.pp_comm_seconds
                + self.dp_comm_exposed_seconds + self.ep_comm_seconds)

    @property
    def mfu(self):
        """Model FLOPs / (step time x GPUs x peak)."""
        return self.model_flops / (self.step_seconds * self.gpus * self.peak_flops_per_s)


def _span(n, stride, domain):
    """(ranks inside one scale-up domain, domains) for a group of n ranks at a stride."""
    per_domain = np.maximum(domain // stride, 1)
    inner = np.gcd(n.astype(np.int64), per_domain.astype(np.int64))
    return inner, n // inner


def _collective(op, payload, n_in, n_out, up_bw, out_bw, **kw):
    """Two-tier collective time, evaluated once per distinct (payload, n_in, n_out): a layout
    grid holds millions of rows but only thousands of distinct collectives."""
    payload, n_in, n_out = np.broadcast_arrays(payload, n_in, n_out)
    if payload.size < 4096:
        return two_tier_collective_seconds(op, payload, n_in, n_out, up_bw, out_bw, **kw)
    _, p_idx = np.unique(payload, return_inverse=True)
    key = (p_idx.reshape(payload.shape).astype(np.int64) << 40) + (n_in.astype(np.int64) << 20) + n_out
    _, inv = np.unique(key.ravel(), return_inverse=True)
    first = np.empty(inv.max() + 1, dtype=np.int64)
    first[inv] = np.arange(inv.size)
    p, i, o = (a.ravel()[first] for a in (payload, n_in, n_out))
    return two_tier_collective_seconds(op, p, i, o, up_bw, out_bw, **kw)[inv].reshape(payload.shape)


def _step(*, active_params, dense_params, routed_params, experts_per_token, layers, hidden, attention_dim, seq_len,
          global_batch, micro_batch, tp, pp, dp, ep, virtual_stages, code, sp, stage, grad_bytes,
          peak, efficiency, up_bw, out_bw, domain, dp_overlap, link_efficiency):
    """Vectorized core (inputs checked by the caller; arrays broadcast)."""
    gpus = tp * pp * dp
    tokens = global_batch * seq_len
    per_token = [flops_per_token(active_params, layers=layers, attention_dim=attention_dim, seq_len=seq_len, recompute=r)
                 for r in RECOMPUTE]
    hw_flops = np.choose(code, per_token) * tokens
    compute = hw_flops / (gpus * peak * efficiency)
    m = global_batch / (micro_batch * dp)
    kw = dict(inner_latency_seconds=SCALEUP_LATENCY_SECONDS, outer_latency_seconds=SCALEOUT_LATENCY_SECONDS,
              efficiency=link_efficiency)

    act = ACTIVATION_BYTES * seq_len * micro_batch * hidden
    t_in, t_out = _span(tp, np.ones_like(tp), domain)
    per_layer = _collective("all-reduce", act, t_in, t_out, up_bw, out_bw, **kw)
    tp_time = np.where(tp > 1, (4.0 + 2.0 * (code == 2)) * layers / pp * m * per_layer, 0.0)

    bubble = (compute + tp_time) * (pp - 1) / (virtual_stages * m)

    send = act / np.where(sp, tp, 1)
    pp_bw = np.where(tp * dp >= domain, out_bw, up_bw)
    pp_lat = np.where(tp * dp >= domain, SCALEOUT_LATENCY_SECONDS, SCALEUP_LATENCY_SECONDS)
    pp_time = np.where(pp > 1, 2.0 * m * virtual_stages * transfer_seconds(
        send, pp_bw, latency_seconds=pp_lat, efficiency=link_efficiency), 0.0)

    grads = (dense_params + routed_params / ep) / (tp * pp) * grad_bytes
    d_in, d_out = _span(dp, tp, domain)
    dp_time = _collective("all-reduce", grads, d_in, d_out, up_bw, out_bw, **kw)
    dp_time = np.where(dp > 1, dp_time * np.where(stage >= 3, 1.5, 1.0), 0.0)
    backward = compute * 2.0 / 3.0
    dp_exposed = np.maximum(dp_time - dp_overlap * backward, 0.0)

    routed = ACTIVATION_BYTES * seq_len * micro_batch * hidden * experts_per_token / np.where(sp, tp, 1)
    e_in, e_out = _span(ep, tp, domain)
    a2a = _collective("all-to-all", routed, e_in, e_out, up_bw, out_bw, **kw)
    moe_layers = np.where(routed_params > 0, layers / pp, 0.0)
    ep_time = np.where(ep > 1, (4.0 + 2.0 * (code == 2)) * moe_layers * m * a2a, 0.0)

    model_flops = per_token[0] * tokens
    return StepTime(compute, tp_time, bubble, pp_time, dp_exposed, ep_time, model_flops, gpus * 1.0, peak)


def step_time(*, active_params, layers, hidden, seq_len, global_batch, micro_batch, peak_flops_per_s,
              attention_dim=None,
              scaleup_bytes_per_s, scaleout_bytes_per_s, scaleup_domain=8, total_params=None,
              routed_params=0.0, experts_per_token=1, tp=1, pp=1, dp=1, ep=1, virtual_stages=1,
              recompute="none", sequence_parallel=False, zero_stage=0, grad_bytes=2.0,
              compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY, dp_overlap=DEFAULT_DP_OVERLAP,
              link_efficiency=DEFAULT_EFFICIENCY) -> StepTime:
    """Predicted step time and MFU of a TP x PP x DP (x EP) layout.

    Parameters
    ----------
    active_params : parameters per token (MoE: active) [count]
    total_params : all parameters (default: active_params) [count]; routed_params :
        routed-expert parameters within total [count]; experts_per_token : k
    layers, hidden, seq_len : L, h, s; global_batch : sequences per step; micro_batch : b
    attention_dim : H·Q for the attention FLOPs (default: hidden; see
        :func:`aisize.compute.flops_per_token`)
    peak_flops_per_s : dense peak per GPU at the training precision [FLOP/s]
    scaleup_bytes_per_s : NVLink-class rate per GPU per direction [B/s]
    scaleout_bytes_per_s : network rate per GPU per direction [B/s]
    scaleup_domain : GPUs per scale-up domain [count]
    tp, pp, dp, ep, virtual_stages : degrees (global_batch divisible by micro_batch x dp)
    recompute : none | selective | full; sequence_parallel; zero_stage : 0-3
    grad_bytes : bytes per gradient element on the wire (2 bf16, 4 fp32)
    compute_efficiency : share of peak the layer kernels reach, (0, 1]
    dp_overlap : share of the backward pass that hides DP traffic, [0, 1]
    link_efficiency : achieved share of link rates, (0, 1]

    Returns
    -------
    :class:`StepTime` (``step_seconds``, ``mfu`` properties)

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2 and 3 (bubble, TP/PP traffic).
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4.2.2 (SP communication).
    .. [3] Rajbhandari et al. 2020, arXiv:1910.02054, sec. 7 (ZeRO communication volume).
    .. [4] Lepikhin et al. 2020, "GShard", arXiv:2006.16668 (MoE all-to-all dispatch/combine).
    """
    na = checks.positive("active_params", active_params)
    nt = na if total_params is None else checks.positive("total_params", total_params)
    routed = checks.non_negative("routed_params", routed_params)
    L = checks.integer("layers", layers, high=10**5)
    t = checks.integer("tp", tp, high=10**4)
    p = checks.integer("pp", pp, high=10**4)
    d = checks.integer("dp", dp, high=10**7)
    e = checks.integer("ep", ep, high=10**5)
    gb = checks.integer("global_batch", global_batch, high=10**9)
    b = checks.integer("micro_batch", micro_batch, high=10**6)
    if np.any(p > L):
        raise ValueError(f"pp={pp!r} is not allowed: must be at most layers={layers!r}")
    if np.any(np.asarray(gb) % (np.asarray(b) * d)):
        raise ValueError(f"global_batch={global_batch!r} is not allowed: must be a multiple of "
                         f"micro_batch x dp = {np.asarray(b) * d!r}")
    if np.any(np.asarray(d) % e):
        raise ValueError(f"ep={ep!r} is not allowed: must divide dp={dp!r}")
    as_arr = np.asarray
    return _step(active_params=na, dense_params=nt - routed, routed_params=routed,
                 experts_per_token=checks.integer("experts_per_token", experts_per_token),
                 layers=L, hidden=checks.positive("hidden", hidden),
                 attention_dim=hidden if attention_dim is None else checks.positive("attention_dim", attention_dim),
                 seq_len=checks.positive("seq_len", seq_len),
                 global_batch=gb, micro_batch=b, tp=as_arr(t), pp=as_arr(p), dp=as_arr(d), ep=as_arr(e),
                 virtual_stages=checks.integer("virtual_stages", virtual_stages, high=10**3),
                 code=as_arr(RECOMPUTE.index(checks.choice("recompute", recompute, RECOMPUTE))),
                 sp=checks.flag("sequence_parallel", sequence_parallel),
                 stage=checks.integer("zero_stage", zero_stage, low=0, high=3),
                 grad_bytes=checks.positive("grad_bytes", grad_bytes),
                 peak=checks.positive("peak_flops_per_s", peak_flops_per_s),
                 efficiency=checks.fraction("compute_efficiency", compute_efficiency),
                 up_bw=checks.positive("scaleup_bytes_per_s", scaleup_bytes_per_s),
                 out_bw=checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s),
                 domain=as_arr(checks.integer("scaleup_domain", scaleup_domain, high=10**5)),
                 dp_overlap=checks.fraction("dp_overlap", dp_overlap, allow_zero=True),
                 link_efficiency=checks.fraction("link_efficiency", link_efficiency))
