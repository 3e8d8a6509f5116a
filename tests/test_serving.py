"""Serving roofline against measured decode throughput and first-token latency.

Published figures: lmdeploy v0.1.0a1 static inference benchmark on A100-80G,
fp16 weights (InternLM/lmdeploy docs/en/benchmark/a100_fp16.md, commit 3e391df).
Its "throughput (out tok/s)" with batch b is b / time-per-output-token.
"""

import numpy as np
import pytest

from aisize import catalog, serving
from aisize.models import transformer_params
from aisize.memory import transformer_kv_bytes_per_token, weight_bytes

A100 = catalog.accelerators["a100-sxm-80gb"]


def _decode_tokens_per_s(model_id, batch, prompt, output, tp=1):
    model = catalog.transformers[model_id]
    n = transformer_params(model).total
    ctx = prompt + output / 2
    step = serving.decode_step_seconds(batch, ctx, weight_bytes(n, "fp16"),
                                       transformer_kv_bytes_per_token(model, "fp16"), n, tp,
                                       A100.memory_bandwidth_bytes_per_s, A100.fp16_flops_per_s)
    return batch / step


# (model, batch, prompt, output, tp, published out tok/s, tolerance)
CASES = [
    ("llama-2-7b", 1, 128, 128, 1, 102.21, 0.10),
    ("llama-2-13b", 1, 128, 128, 1, 56.58, 0.10),
    ("llama-2-7b", 16, 128, 2048, 1, 1010.62, 0.10),
    ("llama-2-7b", 64, 128, 2048, 1, 1852.06, 0.10),
    # TP=4: the roofline ignores the per-layer all-reduces of decode, so it is
    # optimistic by about a fifth here; the tolerance states that known gap.
    ("llama-2-70b", 1, 128, 128, 4, 33.63, 0.25),
]


@pytest.mark.parametrize("model_id,batch,prompt,output,tp,published,tol", CASES)
def test_decode_throughput_matches_lmdeploy_a100(model_id, batch, prompt, output, tp, published, tol):
    predicted = _decode_tokens_per_s(model_id, batch, prompt, output, tp)
    assert predicted == pytest.approx(published, rel=tol)


def test_first_token_latency_llama2_7b_prompt_2048():
    # lmdeploy: batch 1, 2048-token prompt, mean first-token latency 0.139 s. The
    # roofline at the assumed 50 % prefill efficiency gives 0.184 s: pessimistic
    # by a third, so TTFT targets are met with margin. Checked within 40 %.
    model = catalog.transformers["llama-2-7b"]
    n = transformer_params(model).total
    flops = serving.prefill_flops(n, 2048, model.layers, model.hidden)
    ttft = serving.prefill_seconds(flops, 1, A100.fp16_flops_per_s)
    assert ttft == pytest.approx(0.139, rel=0.40)
    assert ttft > 0.139  # the assumption errs on the safe side


def test_batch_limited_by_tpot_then_by_kv_capacity():
    model = catalog.transformers["llama-2-7b"]
    n = transformer_params(model).total
    w, kv = weight_bytes(n, "fp16"), transformer_kv_bytes_per_token(model, "fp16")
    args = (1152, w, kv, n, 1, A100.memory_bandwidth_bytes_per_s, A100.fp16_flops_per_s)
    tight = serving.max_batch(0.05, *args, kv_capacity_bytes=1e12)
    step = serving.decode_step_seconds(tight, *args)
    assert step <= 0.05 < serving.decode_step_seconds(tight + 1, *args)
    small_cache = serving.max_batch(0.05, *args, kv_capacity_bytes=10 * 1152 * kv)
    assert small_cache == 10
    assert serving.max_batch(0.001, *args, kv_capacity_bytes=1e12) == 0  # target below the weights' read time


def test_vectorized_over_batch():
    out = serving.decode_step_seconds(np.array([1, 8, 64]), 1000, 1e10, 5e5, 5e9, 1, 2e12, 3e14)
    assert out.shape == (3,) and np.all(np.diff(out) > 0)


@pytest.mark.parametrize("kwargs,name", [
    (dict(batch=0), "batch"), (dict(tp=1.5), "tp"), (dict(memory_bytes_per_s=-1), "memory_bytes_per_s"),
    (dict(weights_bytes=float("nan")), "weights_bytes"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    args = dict(batch=1, context_tokens=100, weights_bytes=1e10, kv_bytes_per_token=5e5, active_params=5e9,
                tp=1, memory_bytes_per_s=2e12, peak_flops_per_s=3e14) | kwargs
    with pytest.raises(ValueError, match=name):
        serving.decode_step_seconds(**args)
