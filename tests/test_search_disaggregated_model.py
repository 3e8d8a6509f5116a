"""The configuration search's disaggregated rows are the pools' own model (issue 47, one truth).

For a sample of the search's disaggregated rows, the pair :func:`aisize.serving.estimate_disaggregated` builds for
that row's prefill and decode shapes, token budget and KV link (:class:`~aisize.serving.pool_pair.PoolPair`, the
one the planner's sizing reads) is evaluated with :func:`~aisize.serving.pool_pair.pools_state` at a vanishing
prefill rate, its decode replica at the row's batch. Its TTFT and TPOT (mean, p95, p99), KV transfer, slots and
GPU-seconds per request must be the row's. The search used to give TTFT = request + 1.5 full prefill
iterations + the transfer over every prefill GPU, at p95 1.95 of them: 2 to 4x the pair's at zero load."""

from __future__ import annotations

import numpy as np
import pytest

from aisize import models, serving
from aisize.serving.disaggregated import pool_spec
from aisize.serving.pool_pair import pools_state
from aisize.serving.shapes import ReplicaShape

NIC = 50e9  # B/s per GPU, the KV link and, with stages, the stage link
VANISHING = 1e-9  # requests/s reaching the prefill pool

CASES = [  # dense with stages on TensorRT-LLM; MoE with attention DP on SGLang (limits shared by the DP ranks)
    dict(model="llama-3.1-70b", accelerator="h100-sxm", weight_precisions=("fp8",), kv_precisions=("fp8",),
         pipeline_parallels=(1, 2), engine="trtllm", input_tokens=2048, output_tokens=512),
    dict(model="qwen3-30b-a3b", accelerator="h200-sxm", weight_precisions=("fp8",), kv_precisions=("bf16",),
         engine="sglang", input_tokens=6000, output_tokens=300),
]


def _rows(kw, count=10):
    r = serving.search(modes=("disaggregated",), scaleout_bytes_per_s=NIC, **kw)
    frame = r.feasible
    assert len(frame) > count
    # rows spread over the frame, and the frontier's (what the report charts)
    picked = frame.iloc[np.linspace(0, len(frame) - 1, count).astype(int)]
    return [row for _, row in picked.iterrows()] + [row for _, row in r.frontier.head(4).iterrows()]


def _pair(kw, row):
    m = models.resolve(kw["model"])
    link = NIC if max(kw.get("pipeline_parallels", (1,))) > 1 else None

    def spec(prefix):
        return pool_spec(m, ReplicaShape(int(row[f"{prefix}tensor_parallel"]), int(row[f"{prefix}attention_dp"]),
                                         int(row[f"{prefix}pipeline_parallel"]), link))
    est = serving.estimate_disaggregated(
        m, kw["accelerator"], prefill=spec("prefill_"), decode=spec(""), requests_per_s=VANISHING,
        weight_precision=row["weight_precision"], kv_precision=row["kv_precision"], engine=kw["engine"],
        input_tokens=kw["input_tokens"], output_tokens=kw["output_tokens"], max_num_tokens=row["budget"],
        kv_link_bytes_per_s=NIC, if_infeasible="result")
    assert est.pair is not None, est.reason  # a row the search keeps fits the pair's memory
    return est.pair


@pytest.mark.parametrize("kw", CASES, ids=[c["model"] for c in CASES])
def test_search_rows_are_the_pool_pairs_figures_at_zero_prefill_load(kw):
    through_state = 0
    for row in _rows(kw):
        pair = _pair(kw, row)
        b = float(row["batch"])
        assert b <= pair.decode_slots  # the row fits the decode replica the pair holds
        # a decode rate per replica whose Little's-law batch is the row's (a fractional replica count), a hair
        # below it: beyond a CUDA-graph limit the iteration steps up and the batch may settle at a higher root
        decode_replicas = VANISHING * (pair.decode_steps - 1.0) * float(pair.decode_seconds(b)) / b / (1 - 1e-9)
        # a row is a decode replica holding its batch (no random arrivals queueing for its slots)
        s = {k: float(np.ravel(v)[0])
             for k, v in pools_state(pair, 1, decode_replicas, VANISHING, slot_wait=False).items()}
        for stat in ("", "_p95", "_p99"):
            key = stat.replace("_p", "")
            assert row[f"ttft{stat}_s"] == pytest.approx(s[f"ttft{key}"], rel=1e-6), (stat, row.to_dict())
        if s["batch"] == pytest.approx(b, rel=1e-6):
            through_state += 1
            for stat in ("", "_p95", "_p99"):
                key = stat.replace("_p", "")
                assert row[f"tpot{stat}_s"] == pytest.approx(s[f"tpot{key}"], rel=1e-5), (stat, row.to_dict())
        else:  # where a replica's throughput no longer rises with its batch, Little's law settles at the slots:
            # the pair's TPOT at the row's batch, mean and the Poisson batch's p95/p99 (as pools_state takes them)
            for stat, z in (("", 0.0), ("_p95", 1.6448536269514722), ("_p99", 2.3263478740408408)):
                b_q = min(b + z * np.sqrt(b), pair.decode_slots)
                assert row[f"tpot{stat}_s"] == pytest.approx(float(pair.decode_seconds(b_q)) / pair.tokens_per_step,
                                                             rel=1e-9), (stat, row.to_dict())
        s["tpot"] = float(pair.decode_seconds(b)) / pair.tokens_per_step
        assert row["kv_transfer_s"] == pytest.approx(pair.kv_transfer_seconds, rel=1e-12)
        # tokens/s per GPU: a full prefill iteration's GPU-seconds per prompt and o - 1 decode steps at the batch
        o = kw["output_tokens"]
        prefill_gpu_s = pair.prefill_seconds / pair.prefill_prompts * row["prefill_gpus"]
        decode_gpu_s = (pair.decode_steps - 1.0) * s["tpot"] / b * row["decode_gpus"]
        assert row["tokens_per_s_per_gpu"] == pytest.approx(o / (prefill_gpu_s + decode_gpu_s), rel=1e-5)
    assert through_state >= 8  # most rows sit where the batch is the rate's steady state


def test_a_row_at_zero_load_by_hand():
    # Llama 3.1 70B fp8 on H100, 2,048 in / 512 out, a TP 2 prefill replica at TensorRT-LLM's 8,192 tokens: the KV
    # cache is 2,048 tokens x 160 KiB (80 layers x 8 KV heads x 128 x 2 x 1 B) = 335.5 MB, its 8 heads split over
    # both GPUs, each shipping half at 50 GB/s x 0.8 link efficiency: 4.19 ms. The former screen's TTFT was
    # request + 1.5 x a 4-prompt iteration + the transfer; the pair's at zero load one lone-prompt iteration, the
    # same at every statistic
    kw = CASES[0]
    rows = [r for r in _rows(kw, 200) if (r["prefill_tensor_parallel"], r["prefill_pipeline_parallel"]) == (2, 1)
            and r["budget"] == 8192]
    assert rows, "a TP 2 prefill row at 8,192 tokens"
    row = rows[0]
    pair = _pair(kw, row)
    assert pair.prefill_prompts == 4 and pair.kv_bytes_per_request == 2048 * 80 * 8 * 128 * 2
    assert row["kv_transfer_s"] == pytest.approx(2048 * 163_840 / (2 * NIC * 0.8))
    assert row["ttft_s"] == row["ttft_p95_s"] == row["ttft_p99_s"]
    lone = pair.lone_prefill_seconds
    assert lone < pair.prefill_seconds / 2  # one prompt's iteration, not four prompts'
    assert row["ttft_s"] == pytest.approx(pair.calibration.request_seconds + lone + pair.kv_transfer_seconds)
    former = pair.calibration.request_seconds + 1.5 * pair.prefill_seconds + pair.kv_transfer_seconds
    assert row["ttft_s"] < 0.5 * former
