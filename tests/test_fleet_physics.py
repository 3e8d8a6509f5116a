"""Failures, power, LoRA adapters and heterogeneous pools: published counts and hand-worked examples."""

import math

import pytest

from aisize import catalog, models, serving
from aisize.cost import load_prices
from aisize.fleet.cost import server_usd_per_gpu_hour
from aisize.fleet.failures import failure_rates, spares_for, training_goodput
from aisize.fleet.hetero import heterogeneous
from aisize.fleet.lora import (adapter_params, adapters_that_fit, distinct_adapters, lora_serving, lru_hit_rate,
                               popularity)
from aisize.fleet.power import cooling_load, cooling_of, efficiency, envelope

# --- failures -------------------------------------------------------------------------------------


def test_llama3_interruptions_reproduced_from_the_per_gpu_and_per_server_rates():
    # Llama 3 (arXiv:2407.21783) sec. 3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100
    # (2,048 servers of 8); the rates are per GPU-hour (GPU faults) and per server-hour (the rest)
    r = failure_rates("llama3-405b-h100")
    assert r.per_gpu_hour == pytest.approx(268 / (16384 * 54 * 24))
    assert r.expected(16384, 2048, 54) == pytest.approx(419, rel=0.10)
    # "about one interruption every three hours"
    assert r.mtbf_seconds(16384, 2048) / 3600 == pytest.approx(3.09, abs=0.01)
    # the paper's 58.7 % GPU-related share; the table's counts give 64.0 % (within 10 %)
    assert r.gpu_share == pytest.approx(0.587, rel=0.10)


def test_rates_scale_with_gpus_and_servers():
    r = failure_rates()
    # the same 16,384 GPUs in 72-GPU racks meet fewer host faults than in 8-GPU servers
    assert r.expected(16384, 16384 // 72, 54) < r.expected(16384, 2048, 54)
    assert r.expected(8192, 1024, 54) == pytest.approx(419 / 2, rel=1e-9)


def test_training_goodput_from_the_failure_rate_by_hand():
    r = failure_rates()
    g = training_goodput(r, gpus=16384, servers=2048, checkpoint_write_seconds=30.0, restart_seconds=600.0)
    mtbf = 54 * 86400 / 419
    tau = math.sqrt(2 * mtbf * 30.0)
    assert g.interval_seconds == pytest.approx(tau)
    assert g.goodput == pytest.approx(1 - 30.0 / tau - (tau / 2 + 600.0) / mtbf)
    small = training_goodput(r, gpus=1024, servers=128, checkpoint_write_seconds=30.0, restart_seconds=600.0)
    assert small.goodput > g.goodput  # fewer GPUs, rarer interruptions


def test_spares_for_an_availability_target_by_hand():
    r = failure_rates()
    # 8-GPU replicas on one server each: λ = 8 x 1.2621e-5 + 5.6891e-5 = 1.5786e-4 per hour;
    # down for 6 h per failure: p = λT/(1 + λT) = 9.4634e-4. 50 replicas: P(all up) = (1-p)^50 = 0.9538
    s = spares_for(r, replicas=50, gpus_per_replica=8, servers_per_replica=1, recovery_seconds=6 * 3600,
                   availability_target=0.9999)
    lam = 8 * r.per_gpu_hour + r.per_server_hour
    p = lam * 6 / (1 + lam * 6)
    assert s.replica_unavailability == pytest.approx(p)
    assert s.availability_without_spares == pytest.approx((1 - p) ** 50)
    # one spare: P(at most 1 of 51 down) = (1-p)^51 + 51 p (1-p)^50 = 0.99888 < 0.9999; two reach it
    one = (1 - p) ** 51 + 51 * p * (1 - p) ** 50
    assert one < 0.9999 and s.spares == 2 and s.availability >= 0.9999


def test_failure_inputs_are_checked():
    with pytest.raises(ValueError, match="failure_rates"):
        failure_rates("no-such-fleet")
    with pytest.raises(ValueError, match="availability_target"):
        spares_for(failure_rates(), replicas=4, gpus_per_replica=8, servers_per_replica=1, recovery_seconds=60,
                   availability_target=1.0)

# --- power ----------------------------------------------------------------------------------------


def test_power_envelope_by_hand():
    # 2 MW at PUE 1.25 feeds 1.6 MW of IT; a DGX H100 draws 10.2 kW at most (datasheet), with 10 %
    # more for fabric and storage 11.22 kW: floor(1,600 / 11.22) = 142 servers, 1,136 GPUs
    h100 = catalog.servers["dgx-h100"]
    e = envelope(2.0, 1.25, server_power_watts=h100.power_watts, gpus_per_server=h100.gpus, other_it_share=0.10)
    assert e.it_watts == pytest.approx(1.6e6)
    assert (e.servers_fit, e.gpus_fit) == (142, 1136)
    # tokens per MW and energy per million tokens: 10 servers at 80 % of 10.2 kW, PUE 1.25: 102 kW;
    # at 20,000 tokens/s: 196,078 tokens/s per MW; 5.1 J/token = 1.4167 kWh per million tokens
    f = efficiency(servers=10, server_power_watts=10.2e3, average_power_share=0.8, pue=1.25,
                   output_tokens_per_s=20_000)
    assert f.facility_watts == pytest.approx(102e3)
    assert f.tokens_per_s_per_mw == pytest.approx(20_000 / 0.102)
    assert f.kwh_per_million_tokens == pytest.approx(5.1 * 1e6 / 3.6e6)


def test_power_budget_below_one_server_names_the_field():
    with pytest.raises(ValueError, match=r"site.power_mw=0.1 is not allowed: .* less than one server's 120.0 kW"):
        envelope(0.1, 1.2, server_power_watts=120e3, gpus_per_server=72)


def test_cooling_per_server_type_is_sourced():
    assert cooling_of("gb200-nvl72") == "liquid" and cooling_of("dgx-h100") == "air"
    c = cooling_load("dgx-b200", 4, catalog.servers["dgx-b200"].power_watts)
    assert c.it_watts == pytest.approx(4 * 14.3e3) and "B200" in c.source
    assert cooling_of("no-such-server") == "not stated"

# --- LoRA adapters --------------------------------------------------------------------------------


def test_lora_adapter_memory_budget_by_hand():
    # Llama 3 8B (32 layers, hidden 4096, 8 KV heads of 128, MLP 14,336), rank 16 on every linear layer:
    # per layer r x [(4096+4096) + 2 x (4096+1024) + (4096+4096) + 2 x (4096+14336) + (14336+4096)]
    # = 16 x 81,920 = 1,310,720; x 32 layers = 41,943,040 parameters = 83.9 MB in bf16
    assert adapter_params("llama-3-8b", 16) == 41_943_040
    assert adapter_params("llama-3-8b", 16, "attention") == 16 * 32 * (8192 + 5120 + 5120 + 8192)
    # a budget of 4 GiB per GPU on a TP=2 replica holds floor(4 GiB / (83.886 MB / 2)) = 102 adapters
    assert adapters_that_fit(4 * 2**30, 41_943_040 * 2, tensor_parallel=2) == 102


def test_distinct_adapters_and_lru_hit_rate_by_hand():
    uniform = popularity(10, 0.0)
    # 4 requests over 10 equally popular adapters: 10 x (1 - 0.9^4) = 3.439 distinct
    assert float(distinct_adapters(uniform, 4)) == pytest.approx(10 * (1 - 0.9**4))
    # an LRU cache of k of n equally popular adapters hits k/n
    assert lru_hit_rate(uniform, 3) == pytest.approx(0.3, abs=1e-9)
    skewed = popularity(1000, 1.0)
    # skewed popularity: LRU of 100 hits more than 100/1000 but less than the 100 most popular's share
    assert 0.1 < lru_hit_rate(skewed, 100) < skewed[:100].sum()


def test_batched_lora_cost_is_within_punicas_reported_overhead():
    # Punica (arXiv:2310.18547): batching distinct LoRA adapters adds about 2 ms per token on A100
    # for Llama 2 7B at rank 16. 32 requests, each its own adapter (all linear layers, bf16, 80 MB):
    # 32 x 80 MB read per iteration at 2.039 TB/s x 0.8 = 1.6 ms
    r = lora_serving("llama-2-7b", "a100-sxm-80gb", adapters=1000, rank=16, zipf_exponent=0.0, hbm_adapters=32,
                     host_adapters=1000, batch=32, iteration_seconds=0.02, pcie_bytes_per_s=25e9,
                     storage_bytes_per_s=2e9, memory_efficiency=0.8)
    assert 0.5e-3 < r.added_iteration_seconds <= 2e-3
    assert r.capacity_factor == pytest.approx(0.02 / (0.02 + r.added_iteration_seconds))
    # nothing is read from storage when the host holds every adapter; a miss costs a PCIe copy
    assert r.storage_share == 0.0
    assert r.load_from_host_seconds == pytest.approx(r.adapter_bytes / 25e9)

# --- heterogeneous pools --------------------------------------------------------------------------


def test_heterogeneous_pools_and_cost_by_hand():
    # 10 requests/s of Llama 3.3 70B, 4,096 in / 512 out, prefill on H200 at $3/GPU-h, decode on B200 at $5/GPU-h:
    # each pool is cheapest_pool's (the estimate's pair and queues) at most 80 % busy; the cost is each pool's GPUs
    # at its price, $/M tokens = $/h / (10 x 512 x 3,600) x 10^6
    usd = {"dgx-h200": 3.0, "dgx-b200": 5.0}
    t = heterogeneous("llama-3.3-70b", prefill_servers=["dgx-h200"], decode_servers=["dgx-b200"], requests_per_s=10,
                      input_tokens=4096, output_tokens=512, ttft_target_s=1.5, tpot_target_s=0.04, usd_per_gpu_hour=usd)
    row = t.iloc[0]
    assert row.feasible
    assert row.prefill_gpus == row.prefill_replicas * row.prefill_gpus_per_replica
    assert row.decode_gpus == row.decode_replicas * row.decode_gpus_per_replica
    assert row.usd_per_hour == pytest.approx(row.prefill_gpus * 3.0 + row.decode_gpus * 5.0)
    assert row.usd_per_million_tokens == pytest.approx(row.usd_per_hour / (10 * 512 * 3600) * 1e6)
    # the pools at their counts: busy at most 80 % (a replica's capacity: full prefill iterations; decode slots full)
    from aisize.fleet import hetero
    from aisize.serving.disaggregated import _decode_capacity, _prefill_capacity
    common = ("p95", 0.8, min(hetero.nic_bytes_per_s_per_gpu("dgx-h200"), hetero.nic_bytes_per_s_per_gpu("dgx-b200")),
              "fp8", "fp8", 4096, 512, serving.CALIBRATION)
    arch = models.resolve("llama-3.3-70b")
    pre = hetero._side(arch, "dgx-h200", "prefill", 10.0, 1.5, *common)
    dec = hetero._side(arch, "dgx-b200", "decode", 10.0, 0.04, *common)
    assert (pre.replicas, dec.replicas) == (row.prefill_replicas, row.decode_replicas)
    assert 10.0 / (pre.replicas * _prefill_capacity(pre.pair)) <= 0.8
    assert 10.0 / (dec.replicas * _decode_capacity(dec.pair)) <= 0.8
    assert pre.figure_s == row.ttft_s <= 1.5 and dec.figure_s == row.tpot_s <= 0.04


def test_heterogeneous_choice_is_the_cheapest_feasible_pair():
    prices = load_prices()
    servers = ["dgx-b200", "dgx-h200"]
    usd = {s: server_usd_per_gpu_hour(s, prices, life_years=4, average_power_share=0.8) for s in servers}
    t = heterogeneous("llama-3.3-70b", prefill_servers=servers, decode_servers=servers, requests_per_s=20,
                      input_tokens=4096, output_tokens=512, ttft_target_s=1.5, tpot_target_s=0.04,
                      usd_per_gpu_hour=usd)
    assert len(t) == 4 and t.feasible.any()
    best = t.iloc[0]
    assert best.usd_per_million_tokens == t[t.feasible].usd_per_million_tokens.min()
    assert best.ttft_s <= 1.5 and best.tpot_s <= 0.04
    # the KV transfer: 4,096 tokens x 160 KiB (fp8, 80 layers x 8 heads x 128 x 2 x 1 B) over the slower side's NICs
    assert best.kv_transfer_s > 0


def test_heterogeneous_pairs_that_cannot_run_say_why():
    prices = load_prices()
    usd = {s: server_usd_per_gpu_hour(s, prices, life_years=4, average_power_share=0.8) for s in ["dgx-h100"]}
    t = heterogeneous("llama-3.3-70b", prefill_servers=["dgx-h100"], decode_servers=["dgx-h100"], requests_per_s=5,
                      input_tokens=4096, output_tokens=512, ttft_target_s=0.001, tpot_target_s=0.04,
                      usd_per_gpu_hour=usd)
    assert not t.feasible.any() and "TTFT" in t.why[0]
