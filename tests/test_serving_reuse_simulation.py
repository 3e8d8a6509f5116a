"""Prefix reuse, KV-cache tiers and length distributions: closed forms against simpy simulations.

Tolerance 10 % (the serving issue's bar), on these stated grids (seeds fixed, runs repeat exactly):

1. Tiers alone (aisize.serving.simulate_reuse.simulate_cache: sessions through per-tier LRU caches of
   whole objects, 100 kB of KV per token): the share of histories found in each tier or a faster one
   (the tier's hit rate, inclusive tiers) and of chunk retrievals, against Che's approximation
   (aisize.serving.prefix, aisize.serving.tiers). Sessions: 6,000-token mean prompts, 300-token outputs, a 1,000-token shared
   prefix; (8 turns, 30 s think, 2 requests/s) and (4 turns, 60 s, 5/s); RAG: single-turn, 4 chunks of
   500 tokens from 2,000 (Zipf 0.9), 5 requests/s; mixed: 6 turns, 20 s, 3/s with 2 chunks each.
   HBM/DRAM capacities 5/20, 15/60 and 50/200 GB. Hit rates below 5 % are compared within 0.5 points
   (their sampling noise is that large).
2. Tiers inside the scheduler (aisize.serving.simulate_reuse.simulate_reuse_estimate: the HBM tier is
   the KV pool the running requests leave free, reloads at the tier's bandwidth, found tokens not
   prefilled), against serving.estimate(prefix=..., kv_tiers=...): mean TTFT, mean TPOT, prefill saved,
   the share of histories found, and the mean TTFT of each class holding at least 20 % of requests.
   Llama 3.1 70B FP8 on H200 (vLLM), 8,000/300 tokens, 1 request/s, 8 turns, 90 s think, a 200 GB DRAM
   tier at 50 GB/s; Llama 3.1 8B FP8 on H100 (vLLM), 16,000/300, 2/s, 6 turns, 30 s, the same DRAM tier;
   Llama 3.1 8B, 8,000/300, 2/s, 8 turns, 10 s, HBM only. TTFTs leave out the calibration's fixed time
   outside the GPU (request_seconds), which the scheduler simulation does not model.
3. Length distributions (aisize.serving.simulate.simulate_estimate with lengths=...), Llama 3.1 8B FP8 on
   H100 (vLLM) at half its capacity: lognormal 1,024/256 tokens with CVs 1/1; lognormal 2,048/512 with
   CVs 0.5/1.5; an empirical table (prompts 256/1,024/4,096 at 0.5/0.3/0.2, outputs 64/256/1,024 at
   0.3/0.5/0.2): p95 TTFT and p95 TPOT.
"""

import numpy as np
import pytest

from aisize import serving
from aisize.serving.lengths import Lengths, empirical
from aisize.serving.prefix import Reuse, cache_load, session_tokens
from aisize.serving.simulate import simulate_estimate
from aisize.serving.simulate_reuse import simulate_cache, simulate_reuse_estimate
from aisize.serving.tiers import KVTier

pytestmark = pytest.mark.slow
TOLERANCE = 0.10


def _close(measured, predicted, floor=0.05):
    if max(measured, predicted) < floor:
        return abs(measured - predicted) <= 0.005
    return abs(measured - predicted) <= TOLERANCE * measured


def kv(tokens):
    return 100e3 * np.asarray(tokens, dtype=float)


CACHE_CASES = {
    "sessions-8x30s": (Reuse(shared_tokens=1000, turns=8, think_time_s=30), 6000, 2.0, 3000),
    "sessions-4x60s": (Reuse(shared_tokens=1000, turns=4, think_time_s=60), 6000, 5.0, 3000),
    "rag": (Reuse(shared_tokens=1000, rag_chunks=4, rag_chunk_tokens=500, rag_corpus_chunks=2000, rag_zipf=0.9),
            4000, 5.0, 12000),
    "sessions-rag": (Reuse(shared_tokens=1000, turns=6, think_time_s=20, rag_chunks=2, rag_chunk_tokens=500,
                           rag_corpus_chunks=2000, rag_zipf=0.9), 6000, 3.0, 3000),
}


@pytest.mark.parametrize("gb", [(5, 20), (15, 60), (50, 200)])
@pytest.mark.parametrize("case", sorted(CACHE_CASES))
def test_tier_hit_rates_match_an_lru_simulation(case, gb):
    reuse, prompt, rate, sessions = CACHE_CASES[case]
    tokens = session_tokens(reuse, prompt, 300)
    load = cache_load(reuse, tokens, rate, kv)
    tiers = [("hbm", gb[0] * 1e9), ("dram", gb[1] * 1e9)]
    sim = simulate_cache(reuse, tokens, requests_per_s=rate, kv_bytes=kv, tiers=tiers, sessions=sessions, seed=3)
    ts = [float(load.characteristic_seconds(c)) for _, c in tiers]
    if reuse.turns > 1:
        hits = np.maximum.accumulate([float(load.history_hit(t)) for t in ts])
        assert _close(sim.history_served["hbm"], hits[0])
        assert _close(sim.history_hit, hits[1])
    if reuse.rag_chunks:
        chunks = np.maximum.accumulate([float(load.chunk_hit(t)) for t in ts])
        assert _close(sim.chunk_served["hbm"], chunks[0])
        assert _close(sim.chunk_hit, chunks[1])


SCHEDULER_CASES = {
    "70b-dram": ("llama-3.1-70b", "h200-sxm", 8000, 1.0, Reuse(shared_tokens=1000, turns=8, think_time_s=90),
                 (KVTier("dram", 200e9, 50e9),), 2300),
    "8b-dram": ("llama-3.1-8b", "h100-sxm", 16000, 2.0, Reuse(shared_tokens=1000, turns=6, think_time_s=30),
                (KVTier("dram", 200e9, 50e9),), 2000),
    "8b-hbm": ("llama-3.1-8b", "h100-sxm", 8000, 2.0, Reuse(shared_tokens=1000, turns=8, think_time_s=10), (), 1200),
}


@pytest.mark.parametrize("case", sorted(SCHEDULER_CASES))
def test_reuse_inside_the_scheduler_matches_the_estimate(case):
    model, gpu, prompt, rate, reuse, tiers, requests = SCHEDULER_CASES[case]
    est = serving.estimate(model, gpu, tensor_parallel=1, weight_precision="fp8", kv_precision="fp8",
                           input_tokens=prompt, output_tokens=300, requests_per_s=rate, engine="vllm", prefix=reuse,
                           kv_tiers=tiers or None)
    sim, cache = simulate_reuse_estimate(est, reuse, kv_tiers=tiers, requests=requests, seed=3)
    outside = serving.CALIBRATION.request_seconds
    k = est.kv_reuse
    assert sim.ttft_seconds == pytest.approx(est.ttft_s - outside, rel=TOLERANCE)
    assert sim.tpot_seconds == pytest.approx(est.tpot_s, rel=TOLERANCE)
    assert cache.prefill_saved_share == pytest.approx(k.prefill_saved_share, rel=TOLERANCE)
    assert cache.history_hit == pytest.approx(k.tiers.history_hit, rel=TOLERANCE)
    later = (reuse.turns - 1) / reuse.turns
    for u in k.tiers.tiers:
        if later * u.history_served >= 0.2:
            assert sim.ttft_by_tag[u.name] == pytest.approx(k.ttft_by_tier_s[u.name] - outside, rel=TOLERANCE)
    if 1.0 - k.tiers.hit_share >= 0.2:
        assert sim.ttft_by_tag["miss"] == pytest.approx(k.ttft_miss_s - outside, rel=TOLERANCE)


LENGTH_CASES = {
    "lognormal-1024x256-cv1": (Lengths.lognormal(1024, 256, 1.0, 1.0), 3000),
    "lognormal-2048x512-cv0.5x1.5": (Lengths.lognormal(2048, 512, 0.5, 1.5), 3000),
    "empirical": (Lengths(empirical([256, 1024, 4096], [0.5, 0.3, 0.2]), empirical([64, 256, 1024], [0.3, 0.5, 0.2])),
                  3000),
}


@pytest.mark.parametrize("case", sorted(LENGTH_CASES))
def test_length_distribution_tails_match_the_simulation(case):
    lengths, requests = LENGTH_CASES[case]
    kw = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", engine="vllm",
              input_tokens=int(round(lengths.input.mean_tokens)), output_tokens=int(round(lengths.output.mean_tokens)))
    rate = 0.5 * serving.estimate("llama-3.1-8b", "h100-sxm", **kw).max_requests_per_s
    est = serving.estimate("llama-3.1-8b", "h100-sxm", **kw, requests_per_s=rate, length_distribution=lengths)
    sim = simulate_estimate(est, requests_per_s=rate, requests=requests, seed=5, lengths=lengths, cooldown_share=0.1)
    outside = serving.CALIBRATION.request_seconds
    assert sim.ttft_p95_seconds == pytest.approx(est.ttft_p95_s - outside, rel=TOLERANCE)
    assert sim.tpot_p95_seconds == pytest.approx(est.tpot_p95_s, rel=TOLERANCE)
