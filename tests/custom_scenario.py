"""A site's own hardware rows (accelerator, server, storage system, each with its source) and a
scenario whose workloads run Hugging Face config.json models on them: the data the scenario,
report and browser tests share.

The workloads are sized loosely (GPUs fixed for training; one request per second with relaxed
latency targets for serving) so the scenario plans whatever the serving and training engines'
numbers are: tests assert on provenance, round trips and the absence of errors, not on throughput.
"""

from __future__ import annotations

import copy

from hf_configs import QWEN2_5_7B, QWEN3_8B

GPU = dict(id="site-gpu", name="Site GPU", vendor="ACME", form_factor="SXM", memory_type="HBM3",
           memory_label="100 GB", memory=100, memory_bandwidth=4, bf16=1000, fp16=1000, scaleup_link="nvlink-4",
           scaleup_bidirectional=900, scaleup_domain=8, pcie_gen=5, tdp=500, source="ACME datasheet rev 2")
SERVER = dict(id="site-server", name="Site server", vendor="ACME", accelerator="site-gpu", gpus=8, host_memory=2,
              host_memory_unit="TiB", cpu="2x x86", cpu_cores=128, compute_nics=8, compute_nic_link="ib-ndr",
              storage_nics=2, storage_nic_link="eth-100g", power=8, source="ACME quote 2026-01")
STORE = dict(id="site-store", name="Site flash", kind="shared-fs", scope="system", read_bandwidth=50,
             write_bandwidth=20, source="vendor datasheet")

NAME = "Site cluster with config.json models"


def scenario_data() -> dict:
    """The scenario as a dict: models given as config.json content (what a saved file holds)."""
    return copy.deepcopy({
        "name": NAME,
        "hardware": {"server": "site-server", "storage": "site-store", "accelerators": [GPU], "servers": [SERVER],
                     "storage_systems": [STORE]},
        "workloads": [
            {"kind": "training", "name": "Fine-tune Qwen2.5", "tokens_billion": 1, "gpus": 16,
             "model": {"hf_config": "Qwen2.5-7B/config.json", "config": QWEN2_5_7B}},
            {"kind": "inference", "name": "Serve Qwen3", "requests_per_s": 1, "ttft_target_ms": 10_000,
             "tpot_target_ms": 200, "model": {"hf_config": "Qwen3-8B/config.json", "config": QWEN3_8B}}]})
