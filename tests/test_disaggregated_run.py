"""A benchmark run on disaggregated pools (aisize.serving.pools_run): 10·C prompts sent at once, C in flight.

The published disaggregated runs keep 82 to 95 % of their decode slots decoding where C fills them (InferenceX's
TensorRT-LLM rows, docs/calibration-disagg.md, "The decode pool's batch at high concurrency"): the run starts with
every prompt queued at the prefill pool and ends draining. ``prompts`` gives that run; without it the steady state.
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize import serving
from aisize.serving.pools_run import output_lengths

POOLS = dict(prefill=dict(replicas=1, tensor_parallel=4, expert_parallel=4, attention_dp=4),
             decode=dict(replicas=1, tensor_parallel=16, expert_parallel=16, attention_dp=16))
# DeepSeek-R1 NVFP4 on GB200 under TensorRT-LLM, 1k/1k, 64 sequences a decode rank: 1,024 slots
KW = dict(weight_precision="nvfp4", kv_precision="fp8", input_tokens=922, output_tokens=922, engine="trtllm",
          max_batch_size=64)


def _pair(concurrency, prompts=None, **extra):
    steady = serving.estimate_disaggregated("deepseek-r1", "gb200", concurrency=concurrency, **POOLS, **KW)
    run = serving.estimate_disaggregated("deepseek-r1", "gb200", concurrency=concurrency, prompts=prompts,
                                         **POOLS, **KW, **extra)
    return steady, run


def test_a_long_run_reads_the_steady_state():
    # 40 prompts a client: the start and the end are a small share of the run
    steady, run = _pair(256, prompts=40 * 256)
    assert run.output_tokens_per_s == pytest.approx(steady.output_tokens_per_s, rel=0.05)
    assert run.tpot_s == pytest.approx(steady.tpot_s, rel=0.02)
    assert run.decode_batch == pytest.approx(steady.decode_batch, rel=0.05)
    assert run.output_tokens_per_s < steady.output_tokens_per_s  # a run never beats its steady state
    assert any("benchmark run of 10240 prompts" in n for n in run.notes)


def test_a_ten_c_run_at_the_slots_keeps_some_idle_and_queues_its_start():
    steady, run = _pair(1024, prompts=10 * 1024)
    assert steady.decode_slots == 1024 and steady.decode_batch > 0.95 * 1024
    # the decode pool fills at the prefill pool's pace and drains at the end: fewer decode on average ...
    assert run.decode_batch < 0.94 * steady.decode_batch
    assert run.output_tokens_per_s < 0.95 * steady.output_tokens_per_s
    # ... and the first prompts queue at the prefill pool: the mean TTFT and its tail carry that queue
    assert run.ttft_s > 1.5 * steady.ttft_s and run.ttft_p99_s > run.ttft_p95_s > run.ttft_s
    # more prompts a client, closer to the steady state
    longer = serving.estimate_disaggregated("deepseek-r1", "gb200", concurrency=1024, prompts=40 * 1024,
                                            **POOLS, **KW)
    assert run.output_tokens_per_s < longer.output_tokens_per_s < steady.output_tokens_per_s
    # the same run every call
    again = serving.estimate_disaggregated("deepseek-r1", "gb200", concurrency=1024, prompts=10 * 1024,
                                           **POOLS, **KW)
    assert again.output_tokens_per_s == run.output_tokens_per_s and again.ttft_s == run.ttft_s


def test_spread_output_lengths_keep_their_mean():
    lengths = output_lengths(922.0, 10_000, 0.8)
    assert lengths.mean() == pytest.approx(922.0, rel=1e-3)
    top = 922.0 / 0.9
    assert lengths.min() >= np.floor(0.8 * top) and lengths.max() <= np.ceil(top)
    assert np.all(output_lengths(922.0, 50, 1.0) == 922.0)
    _, spread = _pair(1024, prompts=10 * 1024, output_range_ratio=0.8)
    _, fixed = _pair(1024, prompts=10 * 1024)
    assert spread.output_tokens_per_s != fixed.output_tokens_per_s  # the ratio reaches the run


@pytest.mark.parametrize("extra, match", [
    (dict(requests_per_s=10.0, prompts=1000), "without concurrency"),
    (dict(concurrency=64, prompts=0), "prompts"),
    (dict(concurrency=64, prompts=640, output_range_ratio=1.5), "output_range_ratio"),
    (dict(concurrency=64, output_range_ratio=0.8), "without prompts"),
    (dict(concurrency=64, output_range_ratio=[0.5, 0.8]), "single number"),  # checked before it is compared
])
def test_a_run_needs_a_closed_loop_and_sound_arguments(extra, match):
    with pytest.raises(ValueError, match=match):
        serving.estimate_disaggregated("deepseek-r1", "gb200", **POOLS, **KW, **extra)
