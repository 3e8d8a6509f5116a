"""Prefix reuse, KV-cache tiers and length distributions: aisize's closed forms against its simpy simulations.

Three stated grids (seeds fixed, so the runs repeat exactly; grids 2 and 3 average the simulated
figures over :data:`SEEDS`, because one run's TTFT moves by up to 12 % with the seed: sessions and
long outputs arrive in bursts); each function returns one row per
compared figure: ``case``, ``figure``, ``closed_form``, ``simulation`` and ``error`` (closed form
over simulation, minus 1). Figures below ``floor`` carry an absolute error instead (their sampling
noise is that large): ``tests/test_serving_reuse_simulation.py`` holds them to 10 %, and
``benchmarks/sim_reuse.py`` prints them.

1. :func:`tier_rows` — tiers alone (:func:`aisize.serving.simulate_reuse.simulate_cache`: sessions through
   per-tier LRU caches of whole objects, 100 kB of KV per token) against Che's approximation over
   inclusive tiers: the share of histories found in HBM, and in HBM or DRAM; the same for chunk
   retrievals. Sessions: 6,000-token mean prompts, 300-token outputs, a 1,000-token shared prefix;
   8 turns, 30 s think, 2 requests/s; 4 turns, 60 s, 5/s; RAG: single-turn, 4 chunks of 500 tokens
   from 2,000 (Zipf 0.9), 5/s; mixed: 6 turns, 20 s, 3/s, 2 chunks. HBM/DRAM 5/20, 15/60, 50/200 GB.
2. :func:`scheduler_rows` — tiers inside the scheduler
   (:func:`aisize.serving.simulate_reuse.simulate_reuse_estimate`) against ``serving.estimate(prefix=...,
   kv_tiers=...)``: mean TTFT (less the calibration's fixed time outside the GPU, which the scheduler
   simulation does not model), mean TPOT, prefill saved, histories found, the TTFT of each class
   holding at least 20 % of requests. vLLM limits, FP8 weights and KV, 300-token outputs, a
   1,000-token shared prefix, 8 turns: Llama 3.1 70B on H200, 8,000-token prompts, 1 request/s and
   0.5/s, 90 s think, a 200 GB DRAM tier at 50 GB/s; Llama 3.1 8B on H100, 8,000 tokens, 2/s, 10 s, HBM only.
3. :func:`length_rows` — length distributions (:func:`aisize.serving.simulate.simulate_estimate` with
   ``lengths=``; the first 20 % and last 10 % of requests left out) against ``serving.estimate(
   length_distribution=...)``: p95 TTFT (less the fixed time) and p95 TPOT. Llama 3.1 8B FP8 on H100
   (vLLM) at half its capacity: lognormal 1,024/256 with CVs 1/1; lognormal 2,048/512 with CVs
   0.5/1.5; an empirical table (prompts 256/1,024/4,096 at 0.5/0.3/0.2, outputs 64/256/1,024 at
   0.3/0.5/0.2).
"""

from __future__ import annotations

import numpy as np

from aisize import serving
from aisize.serving.lengths import Lengths, empirical
from aisize.serving.prefix import Reuse, cache_load, session_tokens
from aisize.serving.simulate import simulate_estimate
from aisize.serving.simulate_reuse import simulate_cache, simulate_reuse_estimate
from aisize.serving.tiers import KVTier

FLOOR = 0.05  # hit rates below this are compared in absolute terms


def _row(case, figure, closed, sim, floor=0.0):
    absolute = max(closed, sim) < floor
    return {"case": case, "figure": figure, "closed_form": float(closed), "simulation": float(sim),
            "error": float(closed - sim) if absolute else float(closed / sim - 1.0), "absolute": absolute}


def _kv(tokens):
    return 100e3 * np.asarray(tokens, dtype=float)


TIER_CASES = {
    "sessions 8 x 30 s": (Reuse(shared_tokens=1000, turns=8, think_time_s=30), 6000, 2.0, 3000),
    "sessions 4 x 60 s": (Reuse(shared_tokens=1000, turns=4, think_time_s=60), 6000, 5.0, 3000),
    "rag": (Reuse(shared_tokens=1000, rag_chunks=4, rag_chunk_tokens=500, rag_corpus_chunks=2000, rag_zipf=0.9),
            4000, 5.0, 12000),
    "sessions + rag": (Reuse(shared_tokens=1000, turns=6, think_time_s=20, rag_chunks=2, rag_chunk_tokens=500,
                             rag_corpus_chunks=2000, rag_zipf=0.9), 6000, 3.0, 3000),
}
TIER_CAPACITIES_GB = ((5, 20), (15, 60), (50, 200))
SEEDS = (3, 4, 5, 6)  # the simulations of grids 2 and 3, averaged


class _Mean:
    """The mean over simulation runs of each figure (a number, or a dict of numbers by key)."""

    def __init__(self, runs):
        self.runs = runs

    def __getattr__(self, name):
        values = [getattr(r, name) for r in self.runs]
        if isinstance(values[0], dict):
            return {k: float(np.mean([v[k] for v in values if k in v])) for k in values[0]}
        return float(np.mean(values))


def tier_rows(case, capacities_gb):
    """Grid 1 at one case and one (HBM, DRAM) capacity pair [GB]."""
    reuse, prompt, rate, sessions = TIER_CASES[case]
    tokens = session_tokens(reuse, prompt, 300)
    load = cache_load(reuse, tokens, rate, _kv)
    tiers = [("hbm", capacities_gb[0] * 1e9), ("dram", capacities_gb[1] * 1e9)]
    sim = simulate_cache(reuse, tokens, requests_per_s=rate, kv_bytes=_kv, tiers=tiers, sessions=sessions, seed=3)
    ts = [float(load.characteristic_seconds(c)) for _, c in tiers]
    name = f"{case}, {capacities_gb[0]}/{capacities_gb[1]} GB"
    rows = []
    if reuse.turns > 1:
        hits = np.maximum.accumulate([float(load.history_hit(t)) for t in ts])
        rows += [_row(name, "histories found in HBM", hits[0], sim.history_served["hbm"], FLOOR),
                 _row(name, "histories found in HBM or DRAM", hits[1], sim.history_hit, FLOOR)]
    if reuse.rag_chunks:
        chunks = np.maximum.accumulate([float(load.chunk_hit(t)) for t in ts])
        rows += [_row(name, "chunks found in HBM", chunks[0], sim.chunk_served["hbm"], FLOOR),
                 _row(name, "chunks found in HBM or DRAM", chunks[1], sim.chunk_hit, FLOOR)]
    return rows


SCHEDULER_CASES = {
    "70B H200, 1/s, 90 s, DRAM": ("llama-3.1-70b", "h200-sxm", 8000, 1.0, 90.0, (KVTier("dram", 200e9, 50e9),),
                                  2300),
    "70B H200, 0.5/s, 90 s, DRAM": ("llama-3.1-70b", "h200-sxm", 8000, 0.5, 90.0, (KVTier("dram", 200e9, 50e9),),
                                    1500),
    "8B H100, 2/s, 10 s, HBM": ("llama-3.1-8b", "h100-sxm", 8000, 2.0, 10.0, (), 1200),
}


def scheduler_rows(case):
    """Grid 2 at one case."""
    model, gpu, prompt, rate, think, tiers, requests = SCHEDULER_CASES[case]
    reuse = Reuse(shared_tokens=1000, turns=8, think_time_s=think)
    est = serving.estimate(model, gpu, tensor_parallel=1, weight_precision="fp8", kv_precision="fp8",
                           input_tokens=prompt, output_tokens=300, requests_per_s=rate, engine="vllm", prefix=reuse,
                           kv_tiers=tiers or None)
    runs = [simulate_reuse_estimate(est, reuse, kv_tiers=tiers, requests=requests, seed=seed) for seed in SEEDS]
    sim, cache = _Mean([s for s, _ in runs]), _Mean([c for _, c in runs])
    outside = serving.CALIBRATION.request_seconds
    k = est.kv_reuse
    rows = [_row(case, "mean TTFT", est.ttft_s - outside, sim.ttft_seconds),
            _row(case, "mean TPOT", est.tpot_s, sim.tpot_seconds),
            _row(case, "prefill saved", k.prefill_saved_share, cache.prefill_saved_share),
            _row(case, "histories found", k.tiers.history_hit, cache.history_hit)]
    later = (reuse.turns - 1) / reuse.turns
    for u in k.tiers.tiers:
        if later * u.history_served >= 0.2:
            rows.append(_row(case, f"TTFT of a hit in {u.name}", k.ttft_by_tier_s[u.name] - outside,
                             sim.ttft_by_tag[u.name]))
    if 1.0 - k.tiers.hit_share >= 0.2:
        rows.append(_row(case, "TTFT of a miss", k.ttft_miss_s - outside, sim.ttft_by_tag["miss"]))
    return rows


LENGTH_CASES = {
    "lognormal 1,024/256, CV 1/1": Lengths.lognormal(1024, 256, 1.0, 1.0),
    "lognormal 2,048/512, CV 0.5/1.5": Lengths.lognormal(2048, 512, 0.5, 1.5),
    "empirical table": Lengths(empirical([256, 1024, 4096], [0.5, 0.3, 0.2]), empirical([64, 256, 1024],
                                                                                       [0.3, 0.5, 0.2])),
}


def length_rows(case, requests=2000):
    """Grid 3 at one case."""
    lengths = LENGTH_CASES[case]
    kw = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", engine="vllm",
              input_tokens=int(round(lengths.input.mean_tokens)), output_tokens=int(round(lengths.output.mean_tokens)))
    rate = 0.5 * serving.estimate("llama-3.1-8b", "h100-sxm", **kw).max_requests_per_s
    est = serving.estimate("llama-3.1-8b", "h100-sxm", **kw, requests_per_s=rate, length_distribution=lengths)
    sim = _Mean([simulate_estimate(est, requests_per_s=rate, requests=requests, seed=seed, lengths=lengths,
                                   cooldown_share=0.1) for seed in SEEDS])
    outside = serving.CALIBRATION.request_seconds
    # both sides without the request's fixed time (simulate_estimate adds it as the closed forms do)
    return [_row(case, "p95 TTFT", est.ttft_p95_s - outside, sim.ttft_p95_seconds - outside),
            _row(case, "p95 TPOT", est.tpot_p95_s, sim.tpot_p95_seconds),
            _row(case, "mean TTFT", est.ttft_s - outside, sim.ttft_seconds - outside),
            _row(case, "mean TPOT", est.tpot_s, sim.tpot_seconds)]
