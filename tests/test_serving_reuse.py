"""Prefix reuse, sessions and KV-cache tiers (aisize.serving.prefix, .tiers, .reuse): worked numbers and bad input.

The simulation grids that check these closed forms are in tests/test_serving_reuse_simulation.py.
"""

import math

import numpy as np
import pytest

from aisize import models, serving
from aisize.serving.costs import model_costs
from aisize.serving.prefix import CacheLoad, Reuse, cache_load, prefill_work, session_tokens, zipf_popularity
from aisize.serving.simulate_reuse import simulate_cache
from aisize.serving.tiers import KVTier, bandwidth_for_budget, capacity_for_hit_rate, check_tiers, reuse_tiers

KV_PER_TOKEN = 100e3  # a round 100 kB of KV per token for the hand-worked examples


def kv(tokens):
    return KV_PER_TOKEN * np.asarray(tokens, dtype=float)


def test_new_tokens_per_turn_follow_from_the_mean_prompt():
    # I = S + U + (N-1)/2 (U + O): 8,000 = 1,000 + U + 3.5 (U + 300) -> U = (14,000 - 2,100) / 9
    t = session_tokens(Reuse(shared_tokens=1000, turns=8, think_time_s=30), 8000, 300)
    assert t.new_tokens_per_turn == pytest.approx(11900 / 9)
    assert float(t.history_tokens(8)) == pytest.approx(7 * (11900 / 9 + 300))
    prompts = [1000 + float(t.history_tokens(k)) + t.new_tokens_per_turn for k in range(1, 9)]
    assert np.mean(prompts) == pytest.approx(8000)


def test_a_prompt_too_short_for_its_history_is_refused():
    with pytest.raises(ValueError, match="input_tokens=2000 is too short for prefix turns=20"):
        session_tokens(Reuse(turns=20, think_time_s=5), 2000, 500)


@pytest.mark.parametrize("kw, name", [(dict(turns=0), "turns"), (dict(think_time_s=-1), "think_time_s"),
                                      (dict(shared_tokens=-5), "shared_tokens"), (dict(rag_zipf=-1), "rag_zipf"),
                                      (dict(rag_chunks=2), "rag_chunks=2 needs"),
                                      (dict(rag_chunks=5, rag_chunk_tokens=10, rag_corpus_chunks=3), "rag_chunks=5")])
def test_bad_reuse_names_the_field(kw, name):
    with pytest.raises(ValueError, match=name):
        Reuse(**kw)


def test_cached_prefix_attention_equals_a_shorter_fresh_prompt():
    # 100 new tokens after 900 cached ones: 100 x (1,000 - 49.5) = 95,050 (query, key) pairs, the same
    # as a fresh prompt of p tokens with p(p + 1)/2 pairs: p = (sqrt(1 + 8 x 95,050) - 1) / 2 = 435.505
    new, p = prefill_work(1000, 900)
    assert float(new) == 100 and float(p) == pytest.approx(435.50487, rel=1e-6)
    costs = model_costs(models.resolve("llama-3.1-8b"), "fp8", "fp8")
    assert float(costs.attention_flops(p, p)) == pytest.approx(float(costs.attention_flops(100, 1000)), rel=1e-9)
    assert prefill_work(1000, 0) == (1000, 1000)  # nothing cached: unchanged
    assert float(prefill_work(1000, 1000)[0]) == 1.0  # the last token is always computed


def test_lru_hit_rate_of_uniform_chunks_is_capacity_over_corpus():
    # Independent requests over N equally popular objects: an LRU cache of C objects hits C / N
    # (King 1971; Che's approximation is exact here: N (1 - e^(-λT/N)) = C).
    load = CacheLoad(3.0, 1, 0.0, 0.0, np.zeros(1), float(kv(10)), 3.0 * zipf_popularity(1000, 0.0))
    t = load.characteristic_seconds(250 * float(kv(10)))
    assert float(load.chunk_hit(t)) == pytest.approx(0.25, abs=1e-4)


def test_zipf_popularity_sums_to_one_and_falls_with_rank():
    p = zipf_popularity(100, 1.0)
    assert p.sum() == pytest.approx(1.0) and p[0] / p[9] == pytest.approx(10.0)


def test_tier_sizing_by_hand():
    """The worked example: 2 requests/s in sessions of 4 turns, 60 s mean think time, histories growing by
    1,000 tokens of 100 kB a turn; a tier that finds 90 % of the histories.

    Sessions arrive at 2/4 = 0.5/s. P(Z < T) = 0.9 needs T = 60 ln 10 = 138.155 s. A history waits
    E[min(Z, T)] = 60 x 0.9 = 54 s after turns 1-3 (100, 200, 300 MB) and T after the last (400 MB):
    0.5 x (600 MB x 54 s + 400 MB x 138.155 s) = 0.5 x (32.4 + 55.262) GB = 43.831 GB.
    Sessions kept (Little): 0.5/s x (3 x 54 + 138.155) s = 150.08, plus those running.
    """
    r = Reuse(turns=4, think_time_s=60)
    tokens = session_tokens(r, 3250, 500)  # U = (2 x 3,250 - 3 x 500) / 5 = 1,000: histories grow 1,000 + 500
    assert tokens.new_tokens_per_turn == pytest.approx(1000)
    per_turn = 1000 + 500
    load = cache_load(r, tokens, 2.0, lambda t: 1e8 / per_turn * np.asarray(t, dtype=float))
    t = 60 * math.log(10)
    by_hand = 0.5 * ((1 + 2 + 3) * 1e8 * 54 + 4e8 * t)
    assert float(capacity_for_hit_rate(load, 0.9)) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(43.831e9, rel=1e-4)
    assert float(load.characteristic_seconds(by_hand)) == pytest.approx(t, rel=1e-6)
    assert float(load.history_hit(load.characteristic_seconds(by_hand))) == pytest.approx(0.9, rel=1e-6)
    assert float(load.resident_sessions(t, 0.0)) == pytest.approx(0.5 * (3 * 54 + t), rel=1e-9)


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, -0.1])
def test_target_hit_rate_outside_0_to_1_is_refused(bad):
    load = cache_load(Reuse(turns=4, think_time_s=60), session_tokens(Reuse(turns=4, think_time_s=60), 3250, 500),
                      2.0, kv)
    with pytest.raises(ValueError, match="target_hit_rate"):
        capacity_for_hit_rate(load, bad)


def test_inclusive_tiers_serve_each_hit_from_the_fastest_that_holds_it():
    r = Reuse(turns=4, think_time_s=60)
    tokens = session_tokens(r, 3250, 500)
    load = cache_load(r, tokens, 2.0, kv)
    hbm, dram = 10e9, 40e9
    rt = reuse_tiers(load, tokens, (KVTier("hbm", hbm, 3e12), KVTier("dram", dram, 50e9)), kv_bytes=kv,
                     kv_bytes_per_token=KV_PER_TOKEN, recompute_seconds=lambda h: 1e-4 * h, blend_recompute_share=0.15)
    h_hbm = float(load.history_hit(load.characteristic_seconds(hbm)))
    h_dram = float(load.history_hit(load.characteristic_seconds(dram)))
    served = {u.name: u.history_served for u in rt.tiers}
    assert served["hbm"] == pytest.approx(h_hbm) and served["dram"] == pytest.approx(h_dram - h_hbm)
    assert rt.history_hit == pytest.approx(h_dram)
    # a request finds 3/4 x hit x mean history (turns 2-4: 1, 2, 3 x 1,500 tokens) of its 3,250 prompt tokens
    assert rt.cached_tokens == pytest.approx(0.75 * h_dram * 3000)
    assert rt.hit_new_tokens == pytest.approx(1000)  # a found history leaves the turn's 1,000 new tokens
    dram_use = rt.tiers[1]
    assert dram_use.history_reload_s == pytest.approx(3000 * KV_PER_TOKEN / 50e9)
    # reads: 2/s x 3/4 x the DRAM share x 300 MB; writes: every computed token's KV (new prompt tokens + output)
    assert dram_use.read_bytes_per_s == pytest.approx(2 * 0.75 * served["dram"] * 3000 * KV_PER_TOKEN)
    assert dram_use.write_bytes_per_s == pytest.approx(2 * (rt.new_tokens + 500) * KV_PER_TOKEN)


def test_a_tier_slower_than_recomputing_is_not_used():
    r = Reuse(turns=4, think_time_s=60)
    tokens = session_tokens(r, 3250, 500)
    load = cache_load(r, tokens, 2.0, kv)
    # reloading 3,000 tokens x 100 kB = 300 MB at 1 GB/s takes 0.3 s; recomputing them 0.03 s
    rt = reuse_tiers(load, tokens, (KVTier("hbm", 1e9, 3e12), KVTier("storage", 1e12, 1e9)), kv_bytes=kv,
                     kv_bytes_per_token=KV_PER_TOKEN, recompute_seconds=lambda h: 1e-5 * h, blend_recompute_share=0.15)
    storage = rt.tiers[1]
    assert not storage.used and storage.history_served == 0.0 and storage.read_bytes_per_s == 0.0


def test_bandwidth_to_reload_within_a_ttft_budget():
    # 2.6 GB back within 100 ms after a 10 ms round trip: 2.6e9 / 0.09 = 28.9 GB/s
    assert float(bandwidth_for_budget(2.6e9, 0.1, latency_s=0.01)) == pytest.approx(28.889e9, rel=1e-4)
    with pytest.raises(ValueError, match="budget_seconds"):
        bandwidth_for_budget(1e9, 0.005, latency_s=0.01)


def test_bad_tiers_name_the_parameter():
    with pytest.raises(ValueError, match=r"kv_tiers\[dram\].capacity_bytes=.*smaller than one session"):
        check_tiers([KVTier("dram", 1e6, 50e9)], session_bytes=5e8)
    with pytest.raises(ValueError, match="hbm is not allowed"):
        check_tiers([KVTier("hbm", 1e12, 50e9)], session_bytes=5e8)
    with pytest.raises(ValueError, match="given twice"):
        check_tiers([KVTier("dram", 1e12, 50e9), KVTier("dram", 1e12, 50e9)], session_bytes=5e8)
    with pytest.raises(ValueError, match=r"kv_tiers\[nvme\].read_bytes_per_s"):
        KVTier("nvme", 1e12, 0.0)
    with pytest.raises(ValueError, match="kv_tiers name"):
        KVTier("tape", 1e12, 1e9)


ESTIMATE = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", input_tokens=8000, output_tokens=300,
                engine="vllm")


def test_estimate_without_the_new_arguments_is_unchanged():
    a = serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, **ESTIMATE)
    b = serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, prefix=None, kv_tiers=None,
                         length_distribution=None, **ESTIMATE)
    assert a == b and a.kv_reuse is None and a.lengths is None


def test_reused_prompts_save_prefill_and_raise_capacity():
    base = serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, **ESTIMATE)
    reuse = Reuse(shared_tokens=1000, turns=8, think_time_s=30)
    e = serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, prefix=reuse, **ESTIMATE)
    k = e.kv_reuse
    # every history found in HBM: 7/8 of requests reuse 1,000 + 4 x 1,622 tokens, the first turns 1,000
    assert k.tiers.history_hit > 0.99
    expected = (1000 + 7 / 8 * float(session_tokens(reuse, 8000, 300).history_tokens(5))) / 8000
    assert k.prefill_saved_share == pytest.approx(expected, rel=0.01)
    assert e.max_requests_per_s > 1.5 * base.max_requests_per_s
    assert e.ttft_s < base.ttft_s and k.ttft_hit_s > 0 and k.ttft_miss_s > 0
    assert e.kv_bytes_per_token == base.kv_bytes_per_token  # found tokens are still read as KV


def test_a_host_tier_catches_what_hbm_cannot_hold():
    reuse = Reuse(shared_tokens=1000, turns=8, think_time_s=90)
    kw = dict(ESTIMATE, requests_per_s=4.0, prefix=reuse)
    hbm_only = serving.estimate("llama-3.1-8b", "h100-sxm", **kw)
    with_dram = serving.estimate("llama-3.1-8b", "h100-sxm", kv_tiers=[KVTier("dram", 200e9, 50e9)], **kw)
    assert hbm_only.kv_reuse.tiers.history_hit < 0.6 < with_dram.kv_reuse.tiers.history_hit
    dram = with_dram.kv_reuse.tiers.tiers[1]
    assert dram.name == "dram" and dram.history_served > 0.3 and dram.read_bytes_per_s > 0
    assert with_dram.kv_reuse.ttft_by_tier_s["dram"] > with_dram.kv_reuse.ttft_by_tier_s["hbm"]


def test_estimate_refuses_inconsistent_reuse_arguments():
    with pytest.raises(ValueError, match="kv_tiers is given without prefix"):
        serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, kv_tiers=[KVTier("dram", 1e12, 5e10)],
                         **ESTIMATE)
    with pytest.raises(ValueError, match="prefix needs requests_per_s"):
        serving.estimate("llama-3.1-8b", "h100-sxm", concurrency=8, prefix=Reuse(turns=2, think_time_s=5), **ESTIMATE)
    with pytest.raises(ValueError, match="prefix=.*not allowed"):
        serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, prefix={"turns": 3}, **ESTIMATE)
    with pytest.raises(ValueError, match=r"kv_tiers\[dram\].capacity_bytes"):
        serving.estimate("llama-3.1-8b", "h100-sxm", requests_per_s=2.0, prefix=Reuse(turns=8, think_time_s=30),
                         kv_tiers=[KVTier("dram", 1e8, 5e10)], **ESTIMATE)


def test_che_matches_the_lru_simulation_at_one_point():
    """A quick point of the grid in test_serving_reuse_simulation.py: HBM and DRAM tiers, 8-turn sessions."""
    r = Reuse(shared_tokens=1000, turns=8, think_time_s=30)
    tokens = session_tokens(r, 6000, 300)
    load = cache_load(r, tokens, 2.0, kv)
    tiers = [("hbm", 15e9), ("dram", 60e9)]
    sim = simulate_cache(r, tokens, requests_per_s=2.0, kv_bytes=kv, tiers=tiers, sessions=1500, seed=3)
    hits = [float(load.history_hit(load.characteristic_seconds(c))) for _, c in tiers]
    assert sim.history_served["hbm"] == pytest.approx(hits[0], rel=0.10)
    assert sim.history_hit == pytest.approx(hits[1], rel=0.10)
