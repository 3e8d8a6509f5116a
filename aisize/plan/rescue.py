"""Services the sizing screen judged out of reach, tried again with the estimate (split from
:mod:`aisize.plan.replica_count` to keep each file small): the screen leaves out speculation, the spread of lengths
and prompt reuse, so a service that has them may meet a target the screen's light-load latency misses."""

from __future__ import annotations

import math
from dataclasses import replace

from aisize import serving
from aisize.plan import context as C
from aisize.plan.replica_count import FALLBACK_UTILISATION, _evaluate, _fewest_replicas, _miss, _one, meets_targets

RESCUE_SHAPES = 2  # one-stage shapes, widest first, the estimate tries where the screen found none
RESCUE_DOUBLINGS = 3  # ... from 70 % busy to 1/8 of that


def _rescued(w, ctx, policies, arch, shapes, fleet, kw, engine, cal, ttft_t, tpot_t):
    """(fleet, KV tiers, estimate) meeting the targets that the screen judged out of reach, or None.

    The screen leaves out speculation, the spread of lengths and prompt reuse; a service that has them may meet a
    target the screen's light-load latency misses (agentic-coding's MTP: TPOT p95 5.3 ms at light load, the
    screen's best 6.8 ms). The widest one-stage shapes are estimated at 70 % busy, then at twice, four and eight
    times the replicas; the first count that meets the targets is bisected down (:func:`_fewest_replicas`)."""
    if fleet.shape is not None or not (w.speculative_method or w.output_cv or w.prompt_cv or w.prefix):
        return None
    one_stage = [s for s in shapes if s.pipeline_parallel == 1] or list(shapes)
    best = None
    for shape in sorted(one_stage, key=lambda s: -s.gpus)[:RESCUE_SHAPES]:
        one = _one(w, shape, kw, engine, cal)
        cap = serving.estimate(arch, ctx.accelerator, **one)
        if not cap.feasible:
            continue
        n = max(math.ceil(w.requests_per_s / (cap.max_requests_per_s * FALLBACK_UTILISATION)), 1)
        _, est = _evaluate(w, ctx, policies, arch, shape, n, one)
        for _ in range(RESCUE_DOUBLINGS):
            if est is None or not est.feasible or meets_targets(w, est, ttft_t, tpot_t):
                break
            _, more = _evaluate(w, ctx, policies, arch, shape, 2 * n, one)
            if more is None or not more.feasible or _miss(w, more, ttft_t, tpot_t) >= _miss(w, est, ttft_t, tpot_t):
                break
            n, est = 2 * n, more
        if est is None or not est.feasible or not meets_targets(w, est, ttft_t, tpot_t):
            continue
        got = _fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t,
                               best[0].replicas * best[0].shape.gpus if best else math.inf)
        if got is not None and got[3] and (best is None or got[0] * shape.gpus < best[0].replicas * best[0].shape.gpus):
            knee_rate = serving.curves.knee_requests_per_s(got[2], C.KNEE_FACTOR)
            best = (replace(fleet, shape=shape, replicas=got[0], feasible=True, reason="",
                            knee_requests_per_s=knee_rate), got[1], got[2])
    return best
