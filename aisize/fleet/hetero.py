"""Heterogeneous disaggregation: prefill and decode pools on different accelerators, chosen by cost per token.

Disaggregated serving [1, 2] runs prompts on a prefill pool and generation on a decode pool, the
KV cache of the prompt shipped between them. The two phases want different hardware: prefill is
compute-bound, decode memory-bound [2]. For each candidate server type of each phase:

1. each phase's pool on each server type, sized at the rate with the model that evaluates given pools
   (:func:`aisize.serving.disaggregated.cheapest_pool`, :func:`aisize.serving.estimate_disaggregated`'s pair and
   queues): the fewest GPUs, over tensor-parallel replica shapes of one server, whose TTFT (prefill, with the KV
   transfer) or TPOT (decode) at the statistic meets the target, each pool busy at most ``target_utilisation``;
2. the KV transfer: I tokens of KV cache per request, each prefill GPU's shard over the slower of the two
   servers' NICs per GPU at the link efficiency; link load = λ x bytes / the prefill pool's NIC rate;
3. cost: each pool's GPUs at its server's $/GPU-hour; $/M tokens = $/h / (λ x O x 3,600) x 10^6.

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

from functools import lru_cache

import pandas as pd

from aisize import catalog, checks, models, serving
from aisize.cost import per_million_tokens
from aisize.serving.disaggregated import cheapest_pool
from aisize.serving.shapes import ReplicaShape
from aisize.serving.tails import STATISTIC_SUFFIX

DEFAULT_UTILISATION = 0.8  # assumption: each pool's GPUs busy at most 80 % of the time
COLUMNS = ["prefill_server", "decode_server", "prefill_accelerator", "decode_accelerator", "prefill_gpus_per_replica",
           "decode_gpus_per_replica", "prefill_replicas", "decode_replicas", "prefill_gpus", "decode_gpus", "ttft_s",
           "tpot_s", "kv_transfer_s", "kv_link_utilisation", "usd_per_hour", "usd_per_million_tokens", "feasible",
           "why"]


def nic_bytes_per_s_per_gpu(server_id: str) -> float:
    """A server's compute-fabric NIC rate per GPU, per direction [B/s] (catalog)."""
    s = catalog.servers[server_id]
    return s.compute_nics * catalog.links[s.compute_nic_link].bandwidth_per_direction_bytes_per_s / s.gpus


def server_shapes(server_id: str) -> tuple:
    """Replica shapes a server offers either pool: tensor parallel 1, 2, 4 ... up to its GPUs (one server a
    replica; shapes the model cannot split that way are refused by the estimate and skipped)."""
    gpus = catalog.servers[server_id].gpus
    return tuple(ReplicaShape(2 ** k, 1, 1) for k in range(gpus.bit_length()) if 2 ** k <= gpus)


@lru_cache(maxsize=256)
def _side(arch, server_id, side, requests_per_s, target_s, statistic, utilisation, link, weight_precision,
          kv_precision, input_tokens, output_tokens, calibration):
    """One side's pool on one server type (:func:`aisize.serving.disaggregated.cheapest_pool`), kept across calls
    (every pair that shares a server reads it)."""
    return cheapest_pool(arch, catalog.servers[server_id].accelerator, side, shapes=server_shapes(server_id),
                         requests_per_s=requests_per_s, target_s=target_s, statistic=statistic,
                         max_utilisation=utilisation, weight_precision=weight_precision, kv_precision=kv_precision,
                         input_tokens=input_tokens, output_tokens=output_tokens, kv_link_bytes_per_s=link,
                         calibration=calibration)


def heterogeneous(model, *, prefill_servers, decode_servers, requests_per_s, input_tokens, output_tokens,
                  ttft_target_s, tpot_target_s, usd_per_gpu_hour: dict, statistic="p95", weight_precision="fp8",
                  kv_precision="fp8", target_utilisation=DEFAULT_UTILISATION, calibration=None) -> pd.DataFrame:
    """Every (prefill server, decode server) pair sized for the rate, cheapest feasible first.

    ``calibration``: the serving constants (a :class:`aisize.serving.Calibration`; None: the default).
    ``statistic``: what the targets bound, "mean", "p95" or "p99" (each pool's latency at that statistic at the
    rate, :func:`aisize.serving.disaggregated.cheapest_pool`).
    ``target_utilisation``: the busiest share either pool may run at (a headroom; the targets may ask for more).

    Columns: prefill_server, decode_server, prefill/decode accelerators, GPUs per replica, replicas,
    GPUs, ttft_s and tpot_s (at the rate, at ``statistic``; TTFT with the KV transfer), kv_transfer_s,
    kv_link_utilisation, usd_per_hour, usd_per_million_tokens, feasible, why.
    """
    arch = models.resolve(model)
    checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))
    ttft_t = float(checks.scalar("ttft_target_s", checks.positive("ttft_target_s", ttft_target_s)))
    tpot_t = float(checks.scalar("tpot_target_s", checks.positive("tpot_target_s", tpot_target_s)))
    i, o = int(checks.integer("input_tokens", input_tokens)), int(checks.integer("output_tokens", output_tokens))
    kv_request = float(models.kv_bytes_per_token(arch, kv_precision)) * i
    cal = serving.CALIBRATION if calibration is None else calibration
    if not isinstance(cal, serving.Calibration):
        raise ValueError(f"calibration={str(calibration)[:60]!r} is not allowed: a Calibration or None")
    u = float(checks.scalar("target_utilisation", checks.fraction("target_utilisation", target_utilisation)))
    lam = float(checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9)))
    rows = []
    for ps in prefill_servers:
        for ds in decode_servers:
            row = {"prefill_server": ps, "decode_server": ds, "feasible": False, "why": ""}
            row.update(prefill_accelerator=catalog.servers[ps].accelerator,
                       decode_accelerator=catalog.servers[ds].accelerator)
            # each prefill GPU ships its shard of the KV cache to a decode GPU: the slower of the two NICs
            link = min(nic_bytes_per_s_per_gpu(ps), nic_bytes_per_s_per_gpu(ds))
            common = (statistic, u, link, weight_precision, kv_precision, i, o, cal)
            try:
                dec = _side(arch, ds, "decode", lam, tpot_t, *common)
                pre = _side(arch, ps, "prefill", lam, ttft_t, *common)
            except ValueError as error:  # a precision one of the accelerators does not run
                row["why"] = str(error)
                rows.append(row)
                continue
            if dec.shape is None or pre.shape is None:
                row["why"] = " and ".join(f"{c.reason} on {row[c.side + '_accelerator']}" for c in (pre, dec)
                                          if c.shape is None)
                rows.append(row)
                continue
            usd = pre.gpus * usd_per_gpu_hour[ps] + dec.gpus * usd_per_gpu_hour[ds]
            row.update(prefill_gpus_per_replica=pre.shape.gpus, decode_gpus_per_replica=dec.shape.gpus,
                       prefill_replicas=pre.replicas, decode_replicas=dec.replicas, prefill_gpus=pre.gpus,
                       decode_gpus=dec.gpus, ttft_s=pre.figure_s, tpot_s=dec.figure_s,
                       kv_transfer_s=pre.pair.kv_transfer_seconds,
                       kv_link_utilisation=lam * kv_request / (pre.gpus * nic_bytes_per_s_per_gpu(ps)),
                       usd_per_hour=usd, usd_per_million_tokens=float(per_million_tokens(usd, lam * o)),
                       feasible=True)
            rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values(["feasible", "usd_per_million_tokens"], ascending=[False, True],
                           na_position="last").reset_index(drop=True)
