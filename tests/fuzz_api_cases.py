"""The table tests/test_fuzz_api.py runs: each public formula with a valid strategy per parameter.

Ranges keep the inputs physically sensible; cross-parameter rules (tp divides heads, pp <= layers,
offered load below the servers, ...) are met by construction.
"""

from __future__ import annotations

import importlib
import math

from hypothesis import strategies as st

from aisize import compute, host, serving
from aisize import training as training_pkg
from aisize.memory import activations, inference, states
from aisize.training import memory as training
from aisize.training import schedules, throughput
from aisize.network import collectives, fabric, links
from aisize.queueing import analytic, curves, sizing
from aisize.storage import blender, capacity, checkpoint
from aisize.storage import io as storage_io
from aisize.storage import sizing as storage_sizing

# aisize.queueing.little and aisize.storage.demand are shadowed by the functions the packages export.
little = importlib.import_module("aisize.queueing.little")
demand = importlib.import_module("aisize.storage.demand")

# ---- parameter kinds: (valid strategy of one element, may this parameter be an array?) ----

def pos(lo=1e-3, hi=1e6):
    """A positive float, spread over decades (log-uniform-ish) so magnitudes vary."""
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: float(10.0 ** e))


def nn(hi=1e6):
    return st.one_of(st.just(0.0), pos(1e-3, hi))


def ints(lo=1, hi=64):
    return st.integers(lo, hi)


def frac(lo=0.05):
    return st.floats(lo, 1.0)


class Choice:
    def __init__(self, *allowed):
        self.allowed = allowed


class Flag:
    pass


FLAG = Flag()
STORAGE_EFFICIENCY_LOW = 0.5  # see STORAGE_NETWORK_CORNER

# function, {parameter: strategy | Choice | Flag}; every name in the dict is fuzzed. Ranges keep
# the inputs physically sensible; cross-parameter rules (tp divides heads, ...) are met by construction.
CASES = {
    "flops_per_token": (compute.flops_per_token, dict(
        params=pos(1e6, 1e12), layers=ints(1, 128), attention_dim=ints(64, 16384), seq_len=ints(1, 32768),
        recompute=Choice(*compute.RECOMPUTE), method=Choice(*compute.METHODS))),
    "training_flops": (compute.training_flops, dict(params=pos(1e6, 1e12), tokens=pos(1e6, 1e13))),
    "training_seconds": (compute.training_seconds, dict(
        flops=pos(1e15, 1e25), gpus=ints(1, 100_000), peak_flops_per_s=pos(1e12, 1e16), mfu=frac(),
        goodput=frac(0.5))),
    "gpus_needed": (compute.gpus_needed, dict(
        flops=pos(1e15, 1e25), target_seconds=pos(3600, 1e8), peak_flops_per_s=pos(1e12, 1e16), mfu=frac(),
        goodput=frac(0.5))),
    "gpu_hours": (compute.gpu_hours, dict(gpus=ints(1, 100_000), seconds=pos(1, 1e8))),
    "energy_joules": (compute.energy_joules, dict(gpus=ints(1, 100_000), seconds=pos(1, 1e8), watts=pos(10, 2000))),
    "seconds_from_throughput": (compute.seconds_from_throughput, dict(
        params=pos(1e6, 1e12), tokens=pos(1e6, 1e13), per_gpu_flops_per_s=pos(1e12, 1e16), gpus=ints(1, 1000))),
    "chinchilla": (compute.chinchilla, dict(params=pos(1e6, 1e12), tokens=pos(1e6, 1e13))),
    "model_states": (states.model_states, dict(
        trainable_params=pos(1e6, 1e12), precision=Choice("bf16", "fp16", "fp32"),
        optimizer=Choice("adamw", "sgd"), framework=Choice("zero", "deepspeed"), zero_stage=ints(0, 3),
        dp=ints(1, 1024), frozen_params=nn(1e11), offload_optimizer=FLAG)),
    "lora_adapter_params": (states.lora_adapter_params, dict(rank=ints(1, 256), layers=ints(1, 128))),
    "layer_activation_bytes": (activations.layer_activation_bytes, dict(
        seq_len=ints(1, 8192), micro_batch=ints(1, 16), hidden=ints(64, 16384), heads=ints(1, 128),
        recompute=Choice(*activations.RECOMPUTE))),
    "pipeline_in_flight": (schedules.pipeline_in_flight, dict(
        pp=ints(1, 16), num_microbatches=ints(1, 256), virtual_stages=ints(1, 4))),
    "other_model_activation_bytes": (activations.other_model_activation_bytes, dict(
        forward_per_sample_flops=pos(1e6, 1e12), micro_batch=ints(1, 512), bytes_per_element=pos(0.5, 4))),
    "weight_bytes": (inference.weight_bytes, dict(
        params=pos(1e6, 1e12), dtype=Choice("fp32", "bf16", "fp16", "fp8", "int8", "int4"), tp=ints(1, 16))),
    "kv_bytes_per_token": (inference.kv_bytes_per_token, dict(
        layers=ints(1, 128), kv_heads=ints(1, 128), head_dim=ints(16, 256), kv_dtype=Choice("fp16", "bf16", "fp8"),
        tp=ints(1, 8))),
    "mla_kv_bytes_per_token": (inference.mla_kv_bytes_per_token, dict(
        layers=ints(1, 128), kv_lora_rank=ints(16, 1024), qk_rope_head_dim=ints(16, 128))),
    "training_memory": (training.training_memory, dict(
        layer_params=pos(1e6, 1e9), embed_params=pos(1e6, 1e9), output_params=pos(1e6, 1e9), layers=ints(1, 96),
        hidden=ints(64, 16384), heads=st.sampled_from([8, 16, 32, 64]), vocab=ints(1000, 256_000),
        seq_len=ints(1, 8192), micro_batch=ints(1, 8), tp=st.sampled_from([1, 2, 4, 8]), dp=ints(1, 64),
        recompute=Choice(*activations.RECOMPUTE), zero_stage=ints(0, 3), precision=Choice("bf16", "fp16"),
        optimizer=Choice("adamw", "sgd"), trainable_share=frac(0.01), sequence_parallel=FLAG,
        offload_optimizer=FLAG)),
    "serving.estimate": (serving.estimate, dict(
        model=Choice("llama-3-8b", "llama-3.1-70b", "qwen3-30b-a3b", "llama-4-scout"),
        accelerator=Choice("h100-sxm", "h200-sxm", "b200", "gb200", "a100-sxm-80gb"),
        tensor_parallel=st.sampled_from([1, 2, 4, 8]), weight_precision=Choice("bf16", "fp8", "nvfp4", "int4-g128"),
        kv_precision=Choice("fp8", "bf16"), input_tokens=ints(1, 32768), output_tokens=ints(1, 8192),
        requests_per_s=pos(1e-2, 1e3), length_cv=nn(3))),
    "serving.decode_step": (serving.decode_step, dict(
        model=Choice("llama-3-8b", "llama-3.1-70b", "qwen3-30b-a3b"), accelerator=Choice("h100-sxm", "b200"),
        batch=ints(1, 4096), context_tokens=ints(1, 32768), tensor_parallel=st.sampled_from([1, 2, 4, 8]),
        weight_precision=Choice("bf16", "fp8"), kv_precision=Choice("fp8", "bf16"))),
    "traffic_factor": (collectives.traffic_factor, dict(op=Choice(*collectives.OPS), n=ints(1, 4096))),
    "steps": (collectives.steps, dict(op=Choice(*collectives.OPS), n=ints(1, 4096),
                                      algorithm=Choice(*collectives.ALGORITHMS))),
    "transfer_seconds": (collectives.transfer_seconds, dict(
        payload_bytes=nn(1e12), bandwidth_bytes_per_s=pos(1e6, 1e12), latency_seconds=nn(1e-3),
        efficiency=frac(), messages=ints(1, 1000))),
    "collective_seconds": (collectives.collective_seconds, dict(
        op=Choice(*collectives.OPS), payload_bytes=nn(1e12), n=ints(1, 4096), bandwidth_bytes_per_s=pos(1e6, 1e12),
        latency_seconds=nn(1e-3), efficiency=frac(), algorithm=Choice(*collectives.ALGORITHMS))),
    "two_tier_collective_seconds": (collectives.two_tier_collective_seconds, dict(
        op=Choice(*collectives.OPS), payload_bytes=nn(1e12), n_inner=ints(1, 8), n_outer=ints(1, 1024),
        inner_bytes_per_s=pos(1e9, 1e12), outer_bytes_per_s=pos(1e8, 1e11), inner_latency_seconds=nn(1e-3),
        outer_latency_seconds=nn(1e-3), efficiency=frac())),
    "bus_bandwidth": (collectives.bus_bandwidth, dict(
        op=Choice(*collectives.OPS), algorithm_bytes_per_s=pos(1e6, 1e12), n=ints(1, 4096))),
    "link_feed": (links.link_feed, dict(
        epoch_bytes=pos(1e6, 1e15), sample_bytes=pos(1e2, 1e8), bandwidth_bytes_per_s=pos(1e6, 1e12),
        links=ints(1, 16), efficiency=frac())),
    "staging_seconds": (links.staging_seconds, dict(
        epoch_bytes_per_server=nn(1e15), storage_read_bytes_per_s=pos(1e6, 1e12), pcie_bytes_per_s=pos(1e9, 1e11),
        gpus_per_server=ints(1, 16), efficiency=frac(), pipelined=FLAG)),
    "gradient_sync": (links.gradient_sync, dict(
        gradient_bytes=nn(1e12), dp_per_domain=ints(1, 8), dp_domains=ints(1, 1024),
        scaleup_bytes_per_s=pos(1e9, 1e12), scaleout_bytes_per_s=pos(1e8, 1e11), backward_seconds=nn(100),
        overlappable_share=frac(0.0), efficiency=frac())),
    "tensor_parallel_traffic": (links.tensor_parallel_traffic, dict(
        tokens_per_microbatch=ints(1, 65536), hidden=ints(64, 16384), layers=ints(1, 128), tp=ints(1, 8),
        scaleup_bytes_per_s=pos(1e9, 1e12), microbatches=ints(1, 64), overlappable_seconds=nn(10),
        efficiency=frac())),
    "moe_all_to_all": (links.moe_all_to_all, dict(
        tokens_per_gpu=ints(1, 65536), hidden=ints(64, 16384), moe_layers=ints(1, 64), experts_per_token=ints(1, 8),
        ep_per_domain=ints(1, 8), ep_domains=ints(1, 64), scaleup_bytes_per_s=pos(1e9, 1e12),
        scaleout_bytes_per_s=pos(1e8, 1e11), overlappable_seconds=nn(10), efficiency=frac())),
    "compute_nics": (fabric.compute_nics, dict(
        gpus_per_server=ints(1, 16), nic_bytes_per_s=pos(1e9, 1e11), gpus_per_nic=st.sampled_from([1, 2, 4]),
        rail_optimized=FLAG)),
    "fat_tree": (fabric.fat_tree, dict(
        endpoints=ints(1, 60_000), radix=st.sampled_from([64, 128]), oversubscription=pos(1, 8),
        rails=ints(1, 8))),
    # Bounded so the fabric always fits a three-tier fat tree (see STORAGE_NETWORK_CORNER).
    "storage_network": (fabric.storage_network, dict(
        servers=ints(1, 1000), read_bytes_per_s_per_server=nn(1e11), nic_bytes_per_s=pos(1e10, 1e11),
        storage_ports=ints(1, 256), radix=st.sampled_from([64, 128]), min_nics_per_server=ints(1, 4),
        oversubscription=pos(1, 4), efficiency=frac(STORAGE_EFFICIENCY_LOW))),
    "io_profile": (storage_io.io_profile, dict(
        samples_per_s=nn(1e6), sample_bytes=pos(1, 1e9), samples_per_file=ints(1, 10_000), io_bytes=pos(512, 1e8),
        metadata_ops_per_file=ints(0, 10))),
    "compression_tradeoff": (storage_io.compression_tradeoff, dict(
        samples_per_s=nn(1e6), uncompressed_sample_bytes=pos(1, 1e9), compression_ratio=pos(1, 20),
        decode_core_seconds_per_sample=nn(1))),
    "capacity_plan": (capacity.capacity_plan, dict(
        dataset_bytes=nn(1e16), preprocessed_copies=ints(0, 4), preprocessed_ratio=pos(0.1, 10),
        checkpoint_bytes=nn(1e14), checkpoints_retained=ints(1, 10), scratch_bytes=nn(1e14),
        protection=frac(0.3), max_fill=frac(0.3))),
    "checkpoint_size": (checkpoint.checkpoint_size, dict(
        params=pos(1e6, 1e12), bytes_per_param=pos(1, 20), ranks=ints(1, 10_000))),
    "checkpoint_write": (checkpoint.checkpoint_write, dict(
        checkpoint_bytes=pos(1e6, 1e14), writer_bytes_per_s=pos(1e8, 1e11), storage_write_bytes_per_s=pos(1e8, 1e12),
        writers=ints(1, 1000), pattern=Choice(*checkpoint.PATTERNS))),
    "write_bandwidth_for_stall": (checkpoint.write_bandwidth_for_stall, dict(
        checkpoint_bytes=pos(1e6, 1e14), interval_seconds=pos(60, 1e5), max_stall_fraction=frac(0.001))),
    "cluster_mtbf": (checkpoint.cluster_mtbf, dict(node_mtbf_seconds=pos(3600, 1e9), nodes=ints(1, 10_000))),
    "young_daly_interval": (checkpoint.young_daly_interval, dict(
        mtbf_seconds=pos(3600, 1e9), write_seconds=pos(1, 3600))),
    "restore_seconds": (checkpoint.restore_seconds, dict(
        checkpoint_bytes=pos(1e6, 1e14), read_bytes_per_s=pos(1e8, 1e12), restart_seconds=nn(3600))),
    "read_bandwidth_for_rto": (checkpoint.read_bandwidth_for_rto, dict(
        checkpoint_bytes=pos(1e6, 1e14), rto_seconds=pos(4000, 1e5), restart_seconds=nn(3600))),
    "checkpoint_goodput": (checkpoint.goodput, dict(
        mtbf_seconds=pos(3600, 1e9), interval_seconds=pos(60, 1e5), write_seconds=pos(1, 600),
        restart_seconds=nn(3600))),
    "checkpoint_plan": (checkpoint.checkpoint_plan, dict(
        checkpoint_bytes=pos(1e6, 1e14), write_bytes_per_s=pos(1e8, 1e12), read_bytes_per_s=pos(1e8, 1e12),
        mtbf_seconds=pos(3600, 1e9), restart_seconds=nn(3600))),
    "storage_units": (storage_sizing.storage_units, dict(
        read_bytes_per_s=nn(1e12), write_bytes_per_s=nn(1e12), iops=nn(1e8), capacity_bytes=nn(1e16),
        unit_read_bytes_per_s=pos(1e9, 1e11), unit_write_bytes_per_s=pos(1e9, 1e11), unit_iops=pos(1e4, 1e7),
        unit_capacity_bytes=pos(1e12, 1e15))),
    "blender.workload": (blender.workload, dict(
        kind=Choice(*blender.KINDS), read_bytes_per_s=nn(1e11), write_bytes_per_s=nn(1e11),
        read_io_bytes=pos(512, 1e8), write_io_bytes=pos(512, 1e8), metadata_ops_per_s=nn(1e6))),
    "blender.mixed": (blender.mixed, dict(
        total_bytes_per_s=pos(1e6, 1e11), read_share=frac(0.0), read_io_bytes=pos(512, 1e8),
        write_io_bytes=pos(512, 1e8), peak_to_average=pos(1, 10), metadata_ops_per_s=nn(1e6))),
    "blender.inference_model_loading": (blender.inference_model_loading, dict(
        model_bytes=pos(1e8, 1e12), replicas=ints(1, 100), load_seconds=pos(1, 600),
        reload_interval_seconds=pos(600, 1e5))),
    "blender.checkpoint_bursts": (blender.checkpoint_bursts, dict(
        checkpoint_bytes=pos(1e8, 1e14), write_seconds=pos(1, 600), interval_seconds=pos(600, 1e5))),
    "demand.read_demand": (demand.read_demand, dict(
        samples_per_s_per_gpu=pos(1, 1e5), sample_bytes=pos(1, 1e8), gpus=ints(1, 10_000),
        target_utilisation=frac())),
    "demand.data_stall": (demand.data_stall, dict(
        supplied_bytes_per_s=pos(1e6, 1e11), demanded_bytes_per_s=pos(1e6, 1e11), compute_epoch_seconds=nn(1e5),
        loader=Choice(*demand.LOADERS))),
    "host_memory": (host.host_memory, dict(
        gpus_per_server=ints(1, 16), gpu_memory_bytes=pos(1e9, 3e11), ratio=nn(4),
        os_and_application_bytes=nn(1e11), loader_workers_per_gpu=ints(0, 32), batch_bytes_per_gpu=nn(1e9),
        prefetch_factor=ints(1, 8), worker_overhead_bytes=nn(1e9), pinned_bytes_per_gpu=nn(1e10),
        checkpoint_shard_bytes=nn(1e11), checkpoint_staging_copies=ints(0, 4), offloaded_optimizer_bytes=nn(1e12),
        dataset_cache_bytes=nn(1e13))),
    "cpu_cores": (host.cpu_cores, dict(
        samples_per_s_per_server=nn(1e5), core_seconds_per_sample=nn(0.1), gpus_per_server=ints(1, 16),
        core_utilisation=frac(), reserved_cores_per_gpu=nn(4))),
    "ggc": (analytic.ggc, dict(
        arrival_rate_per_s=pos(1e-3, 1e4), service_seconds=pos(1e-4, 10), servers=ints(1, 500),
        service_cv=nn(4), arrival_cv=nn(4))),
    "mmc": (analytic.mmc, dict(arrival_rate_per_s=pos(1e-3, 1e4), service_seconds=pos(1e-4, 10),
                               servers=ints(1, 500))),
    "mm1": (analytic.mm1, dict(arrival_rate_per_s=pos(1e-3, 1e4), service_seconds=pos(1e-4, 10))),
    "mg1": (analytic.mg1, dict(arrival_rate_per_s=pos(1e-3, 1e4), service_seconds=pos(1e-4, 10),
                               service_cv=nn(4))),
    "md1": (analytic.md1, dict(arrival_rate_per_s=pos(1e-3, 1e4), service_seconds=pos(1e-4, 10))),
    "erlang_b": (analytic.erlang_b, dict(servers=ints(1, 500), offered_erlangs=pos(1e-3, 1000))),
    "erlang_c": (analytic.erlang_c, dict(servers=ints(1, 500), offered_erlangs=pos(1e-3, 0.99))),
    "servers_for_target": (sizing.servers_for_target, dict(
        arrival_rate_per_s=pos(1e-2, 1e3), service_seconds=pos(1e-3, 1), target_seconds=pos(1e-3, 10),
        percentile=st.sampled_from([0.5, 0.9, 0.95, 0.99]), service_cv=nn(3), arrival_cv=nn(3))),
    "latency_vs_load": (lambda station_servers, station_seconds, arrival_rate_per_s:
                        curves.latency_vs_load(curves.Station(station_servers, station_seconds),
                                               arrival_rate_per_s),
                        dict(station_servers=ints(1, 100), station_seconds=pos(1e-4, 10),
                             arrival_rate_per_s=pos(1e-3, 1e4))),
    "storage_station": (curves.storage_station, dict(
        iops_max_per_s=pos(1e2, 1e7), base_latency_seconds=pos(1e-5, 1e-1), service_cv=nn(4))),
    "inference_station": (curves.inference_station, dict(
        replicas=ints(1, 100), slots_per_replica=ints(1, 256), request_seconds=pos(1e-2, 100), service_cv=nn(4))),
    "little.in_system": (lambda rate_per_s, time_seconds: little.little(rate_per_s=rate_per_s,
                                                                        time_seconds=time_seconds),
                         dict(rate_per_s=pos(1e-3, 1e6), time_seconds=pos(1e-6, 1e3))),
    "outstanding_ios": (little.outstanding_ios, dict(iops_per_s=pos(1e-3, 1e7), latency_seconds=pos(1e-6, 1))),
    "training.estimate": (training_pkg.estimate, dict(
        model=Choice("llama-3-8b", "llama-2-13b"), accelerator=Choice("h100-sxm", "a100-sxm-80gb"),
        gpus=st.sampled_from([8, 16, 32]), micro_batch=st.sampled_from([1, 2]), global_batch=st.sampled_from([128, 256]),
        seq_len=st.sampled_from([2048, 4096]), recompute=Choice("none", "selective", "full"),
        compiled=FLAG, dp_overlap=frac(0.0))),
    "fits": (training.fits, dict(memory=nn(1e11), capacity_bytes=pos(1e9, 3e11), headroom=st.floats(0.0, 0.5))),
    "io_profile_for_format": (storage_io.io_profile_for_format, dict(
        file_format=Choice(*storage_io.FORMATS), samples_per_s=nn(1e6), sample_bytes=pos(1, 1e9),
        io_bytes=pos(512, 1e8), shard_bytes=pos(1e6, 1e10), metadata_ops_per_file=ints(0, 10))),
    "protection_efficiency": (capacity.protection_efficiency, dict(replicas=ints(1, 5))),
    "erasure_efficiency": (lambda data_fragments, parity_fragments: capacity.protection_efficiency(
        data_fragments=data_fragments, parity_fragments=parity_fragments),
        dict(data_fragments=ints(1, 16), parity_fragments=ints(0, 4))),
    "host_verdict": (host.host_verdict, dict(server_memory_bytes=pos(1e10, 4e12), server_cpu_cores=ints(1, 256))),
    "latency_vs_concurrency": (lambda station_servers, station_seconds, concurrency: curves.latency_vs_concurrency(
        curves.Station(station_servers, station_seconds), concurrency),
        dict(station_servers=ints(1, 100), station_seconds=pos(1e-4, 10), concurrency=pos(1e-2, 1e4))),
    "knee_load": (lambda station_servers, station_seconds, station_cv, factor, statistic: curves.knee_load(
        curves.Station(station_servers, station_seconds, station_cv), factor, statistic),
        dict(station_servers=ints(1, 50), station_seconds=pos(1e-4, 10), station_cv=nn(3), factor=pos(1.1, 10),
             statistic=Choice("mean", "p50", "p95", "p99"))),
    "response_quantile": (analytic.response_quantile, dict(
        p=st.floats(0.01, 0.999), p_wait=frac(0.0), wait_mean=nn(10), service_seconds=pos(1e-4, 10),
        service_cv=nn(4))),
    "wait_quantile": (analytic.wait_quantile, dict(p=st.floats(0.01, 0.999), p_wait=frac(0.0), wait_mean=nn(10))),
    "demand.samples_per_s_from_batch": (demand.samples_per_s_from_batch, dict(
        batch=ints(1, 4096), compute_seconds=pos(1e-3, 10))),
    "samples_per_s_from_flops": (throughput.samples_per_s_from_flops, dict(
        training_flops_per_sample=pos(1e6, 1e15), peak_flops_per_s=pos(1e12, 1e16), efficiency=frac())),
}

# The largest storage fabric the storage_network strategy can draw: 1000 servers x ceil(1e11 / (1e10 x 0.5))
# = 20 NICs each + 256 storage ports = 20,256 endpoints, within the 65,536 a radix-64 three-tier fat tree
# holds at oversubscription 1. (With efficiency down to 0.05 the strategy drew 65,601 endpoints once: an
# invalid input the function rightly refused, failing the "valid inputs" test at random.)
STORAGE_NETWORK_CORNER = dict(servers=1000, read_bytes_per_s_per_server=1e11, nic_bytes_per_s=1e10,
                              storage_ports=256, radix=64, min_nics_per_server=4, oversubscription=1.0,
                              efficiency=STORAGE_EFFICIENCY_LOW)

# Valid inputs on which a fuzz run once failed: each is replayed as an explicit @example on every run.
FOUND: dict[str, list[dict]] = {
    "storage_network": [STORAGE_NETWORK_CORNER],
    # a replica that does not fit (70B at BF16 on one H100) once said NaN requests in flight (2026-12-06)
    "serving.estimate": [dict(model="llama-3.1-70b", accelerator="h100-sxm", tensor_parallel=1,
                              weight_precision="bf16", kv_precision="fp8", input_tokens=1, output_tokens=1,
                              requests_per_s=1.0, length_cv=0.0)],
}

# Parameters that must stay scalar (e.g. they pick a code path), and those whose arrays are not supported.
SCALAR_ONLY = {
    "chinchilla": {"params", "tokens"},
    "training.estimate": set(CASES["training.estimate"][1]),
    **{c: set(CASES[c][1]) for c in CASES if c.startswith("blender.")},
    "latency_vs_load": {"station_servers", "station_seconds"},
    "latency_vs_concurrency": {"station_servers", "station_seconds"},
    "knee_load": {"station_servers", "station_seconds", "station_cv", "factor"},
    "storage_station": {"iops_max_per_s", "base_latency_seconds", "service_cv"},
    "inference_station": {"replicas", "slots_per_replica", "request_seconds", "service_cv"},
    "serving.estimate": {"tensor_parallel", "input_tokens", "output_tokens", "requests_per_s", "length_cv"},
    "serving.decode_step": {"batch", "context_tokens", "tensor_parallel"},
}
# Result fields that may be negative (a shortfall) by design.
SIGNED_FIELDS = {"free_bytes", "memory_headroom_bytes", "cores_headroom"}
# Parameters where None is documented as meaning something (servers_for_target: hold the mean).
NONE_ALLOWED = {("servers_for_target", "percentile")}
# Fields that are inf by design where a divisor is zero: free decoding saves infinitely per core.
DOCUMENTED_INF = {"compression_tradeoff": {"bytes_saved_per_core"}}
# Positional extra arguments some functions need that are not fuzzed.
EXTRA = {
    "lora_adapter_params": dict(matrix_shapes=[(4096, 4096), (4096, 11008)]),
    "host_verdict": dict(memory=host.host_memory(8, 80e9), cores=host.cpu_cores(1000.0, 0.01, 8)),
    "blender.workload": dict(name="w"), "blender.mixed": dict(name="w"),
    "blender.inference_model_loading": dict(name="w"), "blender.checkpoint_bursts": dict(name="w"),
}
