"""Heterogeneous disaggregation: prefill and decode pools on different accelerators, chosen by cost per token.

Disaggregated serving [1, 2] runs prompts on a prefill pool and generation on a decode pool, the
KV cache of the prompt shipped between them. The two phases want different hardware: prefill is
compute-bound, decode memory-bound [2]. For each candidate server type of each phase:

1. the phase's best configuration on that accelerator, from the serving search
   (:func:`aisize.serving.search`, disaggregated rows): the fewest GPU-seconds per request whose
   unloaded latency meets the target (prefill: TTFT less its own KV transfer, plus this pair's;
   decode: TPOT), on a replica shape that holds the model (:func:`aisize.serving.estimate`);
2. the pools for the rate at a target utilisation:
   replicas = ceil(λ x GPU-seconds per request / (utilisation x GPUs per replica));
3. the KV transfer: I tokens of KV cache per request, over the slower side's NICs at the
   link efficiency: time = bytes / (min(prefill replica NICs, decode replica NICs) x efficiency),
   link load = λ x bytes / the prefill pool's NIC rate;
4. cost: each pool's GPUs at its server's $/GPU-hour; $/M tokens = $/h / (λ x O x 3,600) x 10^6.

The pair with the lowest $/M tokens that meets both targets wins. Both engines are assumed to
share one KV layout and a transfer library that moves it (NIXL, Mooncake); across vendors that
is an assumption to check.

References
----------
.. [1] Zhong et al. 2024, "DistServe", OSDI'24, arXiv:2401.09670.
.. [2] Patel et al. 2024, "Splitwise: Efficient generative LLM inference using phase splitting",
   ISCA'24, arXiv:2311.18677 (prefill and decode on different GPU generations, chosen by cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from aisize import catalog, checks, models, serving
from aisize.cost import per_million_tokens
from aisize.serving.tails import STATISTIC_SUFFIX

DEFAULT_UTILISATION = 0.8  # assumption: each pool's GPUs busy at most 80 % of the time
COLUMNS = ["prefill_server", "decode_server", "prefill_accelerator", "decode_accelerator", "prefill_gpus_per_replica",
           "decode_gpus_per_replica", "prefill_replicas", "decode_replicas", "prefill_gpus", "decode_gpus", "ttft_s",
           "tpot_s", "kv_transfer_s", "kv_link_utilisation", "usd_per_hour", "usd_per_million_tokens", "feasible",
           "why"]


@dataclass(frozen=True)
class PairSizing:
    """Prefill and decode pools for a rate (hand-checkable arithmetic) [count, $, s]."""

    prefill_replicas: int
    decode_replicas: int
    prefill_gpus: int
    decode_gpus: int
    usd_per_hour: float
    output_tokens_per_s: float
    usd_per_million_tokens: float
    prefill_utilisation: float
    decode_utilisation: float


def size_pair(requests_per_s, *, output_tokens, prefill_gpu_seconds, prefill_gpus_per_replica, decode_gpu_seconds,
              decode_gpus_per_replica, prefill_usd_per_gpu_hour, decode_usd_per_gpu_hour,
              target_utilisation=DEFAULT_UTILISATION) -> PairSizing:
    """Pools for ``requests_per_s`` from each phase's GPU-seconds per request, and their cost."""
    lam = checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9))
    o = checks.scalar("output_tokens", checks.positive("output_tokens", output_tokens))
    u = checks.scalar("target_utilisation", checks.fraction("target_utilisation", target_utilisation))
    p_s = checks.scalar("prefill_gpu_seconds", checks.positive("prefill_gpu_seconds", prefill_gpu_seconds))
    d_s = checks.scalar("decode_gpu_seconds", checks.positive("decode_gpu_seconds", decode_gpu_seconds))
    p_g = int(checks.scalar("prefill_gpus_per_replica", checks.integer("prefill_gpus_per_replica",
                                                                       prefill_gpus_per_replica, high=4096)))
    d_g = int(checks.scalar("decode_gpus_per_replica", checks.integer("decode_gpus_per_replica",
                                                                      decode_gpus_per_replica, high=4096)))
    p_usd = checks.scalar("prefill_usd_per_gpu_hour", checks.non_negative("prefill_usd_per_gpu_hour",
                                                                          prefill_usd_per_gpu_hour))
    d_usd = checks.scalar("decode_usd_per_gpu_hour", checks.non_negative("decode_usd_per_gpu_hour",
                                                                         decode_usd_per_gpu_hour))
    n_p = max(math.ceil(lam * p_s / (u * p_g) - 1e-9), 1)
    n_d = max(math.ceil(lam * d_s / (u * d_g) - 1e-9), 1)
    cost = n_p * p_g * p_usd + n_d * d_g * d_usd
    tokens = lam * o
    return PairSizing(n_p, n_d, n_p * p_g, n_d * d_g, cost, tokens, float(per_million_tokens(cost, tokens)),
                      lam * p_s / (n_p * p_g), lam * d_s / (n_d * d_g))


def nic_bytes_per_s_per_gpu(server_id: str) -> float:
    """A server's compute-fabric NIC rate per GPU, per direction [B/s] (catalog)."""
    s = catalog.servers[server_id]
    return s.compute_nics * catalog.links[s.compute_nic_link].bandwidth_per_direction_bytes_per_s / s.gpus


@lru_cache(maxsize=64)
def _phases(model, accelerator, input_tokens, output_tokens, weight_precision, kv_precision, calibration):
    """Per configuration of the disaggregated search: each phase's GPU-seconds per request and latencies."""
    r = serving.search(model, accelerator, input_tokens=input_tokens, output_tokens=output_tokens,
                       weight_precisions=(weight_precision,), kv_precisions=(kv_precision,), modes=("disaggregated",),
                       calibration=calibration)
    f = r.feasible
    per_gpu = f.tokens_per_s_per_gpu
    out = pd.DataFrame({
        "prefill_gpus": f.prefill_gpus.astype(int), "decode_gpus": f.decode_gpus.astype(int),
        "prefill_gpu_seconds": f.prefill_share_of_gpus * output_tokens / per_gpu,
        "decode_gpu_seconds": (1.0 - f.prefill_share_of_gpus) * output_tokens / per_gpu,
        "ttft_s": f.ttft_s - f.kv_transfer_s, "ttft_p95_s": f.ttft_p95_s - f.kv_transfer_s,
        "ttft_p99_s": f.ttft_p99_s - f.kv_transfer_s,
        "tpot_s": f.tpot_s, "tpot_p95_s": f.tpot_p95_s, "tpot_p99_s": f.tpot_p99_s})
    holds = {g: bool(serving.estimate(model, accelerator, tensor_parallel=int(g), weight_precision=weight_precision,
                                      kv_precision=kv_precision, input_tokens=input_tokens,
                                      output_tokens=1, calibration=calibration).feasible)
             for g in out.prefill_gpus.unique()}
    return out[out.prefill_gpus.map(holds)]


def _best(frame, cost_col, lat_col, limit):
    ok = frame[frame[lat_col] <= limit]
    return None if ok.empty else ok.loc[ok[cost_col].idxmin()]


def heterogeneous(model, *, prefill_servers, decode_servers, requests_per_s, input_tokens, output_tokens,
                  ttft_target_s, tpot_target_s, usd_per_gpu_hour: dict, statistic="p95", weight_precision="fp8",
                  kv_precision="fp8", target_utilisation=DEFAULT_UTILISATION, calibration=None) -> pd.DataFrame:
    """Every (prefill server, decode server) pair sized for the rate, cheapest feasible first.

    ``calibration``: the serving constants (a :class:`aisize.serving.Calibration`; None: the default).
    ``statistic``: what the targets bound, "mean", "p95" or "p99" (each phase's latency at that statistic from
    the serving search's disaggregated rows).

    Columns: prefill_server, decode_server, prefill/decode accelerators, GPUs per replica, replicas,
    GPUs, ttft_s and tpot_s (unloaded, at ``statistic``; TTFT with the KV transfer), kv_transfer_s,
    kv_link_utilisation, usd_per_hour, usd_per_million_tokens, feasible, why.
    """
    arch = models.resolve(model)
    checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))
    ttft_t = checks.positive("ttft_target_s", ttft_target_s)
    tpot_t = checks.positive("tpot_target_s", tpot_target_s)
    i, o = int(checks.integer("input_tokens", input_tokens)), int(checks.integer("output_tokens", output_tokens))
    kv_request = float(models.kv_bytes_per_token(arch, kv_precision)) * i
    cal = serving.CALIBRATION if calibration is None else calibration
    if not isinstance(cal, serving.Calibration):
        raise ValueError(f"calibration={str(calibration)[:60]!r} is not allowed: a Calibration or None")
    eff = cal.link_efficiency
    suffix = STATISTIC_SUFFIX[statistic] + "_s"  # the search's columns at the statistic the targets bound
    rows = []
    for ps in prefill_servers:
        for ds in decode_servers:
            row = {"prefill_server": ps, "decode_server": ds, "feasible": False, "why": ""}
            p_acc, d_acc = catalog.servers[ps].accelerator, catalog.servers[ds].accelerator
            row.update(prefill_accelerator=p_acc, decode_accelerator=d_acc)
            try:
                dec_all = _phases(arch, d_acc, i, o, weight_precision, kv_precision, cal)
                pre_all = _phases(arch, p_acc, i, o, weight_precision, kv_precision, cal).copy()
            except ValueError as error:  # a precision one of the accelerators does not run
                row["why"] = str(error)
                rows.append(row)
                continue
            dec = _best(dec_all, "decode_gpu_seconds", "tpot" + suffix, tpot_t)
            if dec is None:
                row["why"] = f"no decode configuration on {d_acc} meets TPOT {tpot_t * 1e3:,.4g} ms"
                rows.append(row)
                continue
            # the slower side's NICs carry the KV: vectorized over the prefill candidates (a per-row map
            # cost ~36 ms a slider move on fleet-over-the-day)
            link = np.minimum(nic_bytes_per_s_per_gpu(ps) * pre_all.prefill_gpus.to_numpy(dtype=float),
                              nic_bytes_per_s_per_gpu(ds) * dec.decode_gpus) * eff
            pre_all["transfer_s"] = kv_request / link
            pre_all["ttft_total"] = pre_all["ttft" + suffix] + pre_all.transfer_s
            pre = _best(pre_all, "prefill_gpu_seconds", "ttft_total", ttft_t)
            if pre is None:
                row["why"] = f"no prefill configuration on {p_acc} meets TTFT {ttft_t * 1e3:,.4g} ms"
                rows.append(row)
                continue
            sz = size_pair(requests_per_s, output_tokens=o, prefill_gpu_seconds=pre.prefill_gpu_seconds,
                           prefill_gpus_per_replica=int(pre.prefill_gpus), decode_gpu_seconds=dec.decode_gpu_seconds,
                           decode_gpus_per_replica=int(dec.decode_gpus), prefill_usd_per_gpu_hour=usd_per_gpu_hour[ps],
                           decode_usd_per_gpu_hour=usd_per_gpu_hour[ds], target_utilisation=target_utilisation)
            nic_pool = sz.prefill_gpus * nic_bytes_per_s_per_gpu(ps)
            row.update(prefill_gpus_per_replica=int(pre.prefill_gpus), decode_gpus_per_replica=int(dec.decode_gpus),
                       prefill_replicas=sz.prefill_replicas, decode_replicas=sz.decode_replicas,
                       prefill_gpus=sz.prefill_gpus, decode_gpus=sz.decode_gpus, ttft_s=float(pre.ttft_total),
                       tpot_s=float(dec["tpot" + suffix]), kv_transfer_s=float(pre.transfer_s),
                       kv_link_utilisation=requests_per_s * kv_request / nic_pool, usd_per_hour=sz.usd_per_hour,
                       usd_per_million_tokens=sz.usd_per_million_tokens, feasible=True)
            rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["feasible", "usd_per_million_tokens"], ascending=[False, True],
                           na_position="last").reset_index(drop=True)
