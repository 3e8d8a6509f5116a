"""Training GEMMs from measured kernel tables (aisize.training.kernel_gemms; issue 50, item 1)."""

import math

import numpy as np
import pytest

from aisize import kernels, training
from aisize.training import kernel_gemms as K
from aisize.training.dims import model_dims
from aisize.training.recipes import RECIPES

KW = dict(gpus=8, micro_batch=1, global_batch=8, seq_len=8192)


def test_a_linear_layers_three_gemms_read_the_table_with_their_roles():
    """Llama 3 8B's MLP input (4,096 -> 14,336) for 8,192 tokens on H100, bf16 (TensorRT-LLM table).

    The committed surface at these points (docs/kernels.md): forward m=8192 n=14336 k=4096 1317 us
    (730 TFLOP/s), input gradient m=8192 n=4096 k=14336 1193 us, weight gradient m=4096 n=14336 k=8192
    1339 us: the same FLOPs, three different times.
    """
    fwd, dgrad, wgrad = K.gemm3_seconds("h100-sxm", "trtllm", "bfloat16", 8192.0, 4096.0, 14336.0)
    assert fwd == pytest.approx(1317.4e-6, rel=2e-3)
    assert dgrad == pytest.approx(1193.4e-6, rel=2e-3)
    assert wgrad == pytest.approx(1339.0e-6, rel=2e-3)
    # the roles: dgrad is (tokens x n_out)·(n_out x n_in), wgrad (n_in x tokens)·(tokens x n_out)
    assert dgrad == pytest.approx(kernels.gemm_seconds("h100-sxm", "trtllm", "bfloat16", 8192, 4096, 14336))
    assert wgrad == pytest.approx(kernels.gemm_seconds("h100-sxm", "trtllm", "bfloat16", 4096, 14336, 8192))
    assert len({fwd, dgrad, wgrad}) == 3


def test_forward_dgrad_and_wgrad_flops_are_three_forwards():
    shapes = K.gemm3_shapes(8192.0, 4096.0, 14336.0)
    flops = [2.0 * m * n * k for m, n, k in shapes]
    assert sum(flops) == pytest.approx(3.0 * 2.0 * 8192 * 4096 * 14336)
    assert flops[0] == flops[1] == flops[2]


def test_the_fused_and_separate_layer_shapes_hold_the_same_weights():
    d = model_dims(training.dims.resolve("llama-3-8b"))
    fused, separate = K.layer_shapes(d, 2, True), K.layer_shapes(d, 2, False)
    assert len(fused) == 4 and len(separate) == 7  # QKV, out, gate+up, down vs q, k, v, out, gate, up, down
    assert sum(i * o for _, i, o in fused) == pytest.approx(sum(i * o for _, i, o in separate))
    assert fused[0][2] == pytest.approx((4096 + 2 * 1024) / 2)


def test_coverage_says_where_each_gemm_comes_from():
    d = model_dims(training.dims.resolve("llama-3-8b"))
    kw = dict(high_peak=989e12, low_peak=1979e12, e_high=0.634, e_low=0.702, hbm_bytes_per_s=3.35e12)
    full = K.linear_times(d, gpu="h100-sxm", recipe=RECIPES["bf16"], tokens=8192.0, tp=1, fused=True, **kw)
    assert float(full.covered) == 1.0
    # A100's sweeps stop at m = 8,192: at 16,384 tokens only the weight gradients (k = tokens, m = n_in) of
    # the layers reading the 4,096 hidden width are measured (QKV 4096x6144, out 4096x4096, gate/up
    # 4096x28672), not the down projection's (m = 14,336): a third of their FLOPs
    part = K.linear_times(d, gpu="a100-sxm-80gb", recipe=RECIPES["bf16"], tokens=16384.0, tp=1, fused=True, **kw)
    read = 4096 * (6144 + 4096 + 28672)
    assert float(part.covered) == pytest.approx(read / (read + 14336 * 4096) / 3.0)
    assert "roofline" in K.coverage(d, "a100-sxm-80gb", RECIPES["bf16"], 16384.0, 1)
    # no table: the roofline, all of it, and the three passes equal
    none = K.linear_times(d, gpu="mi300x", recipe=RECIPES["bf16"], tokens=8192.0, tp=1, fused=True, **kw)
    assert float(none.covered) == 0.0
    assert float(none.dgrad) == pytest.approx(float(none.forward)) == pytest.approx(float(none.wgrad))
    assert "no measured bf16" in K.coverage(d, "mi300x", RECIPES["bf16"], 8192.0, 1)
    assert "no measured fp8" in K.coverage(d, "a100-sxm-80gb", RECIPES["fp8"], 8192.0, 1)


def test_the_switch_changes_the_step_and_says_so():
    off = training.estimate("llama-3-8b", "h100-sxm", gemm_source="roofline", **KW)
    on = training.estimate("llama-3-8b", "h100-sxm", gemm_source="kernels", **KW)
    assert off.gemm_source == "roofline" and on.gemm_source == "kernels"
    assert "measured GEMMs (h100-sxm" in on.gemm_coverage
    assert not math.isclose(on.step_seconds, off.step_seconds, rel_tol=1e-3)
    # the model FLOPs are the same: only the time changes
    assert on.step.model_flops == pytest.approx(off.step.model_flops)
    # a GPU without tables keeps the roofline: the same step either way
    a = training.estimate("llama-3-8b", "mi355x", gemm_source="roofline", **KW)
    b = training.estimate("llama-3-8b", "mi355x", gemm_source="kernels", **KW)
    assert b.step_seconds == pytest.approx(a.step_seconds, rel=1e-12)


def test_the_default_is_the_roofline_and_a_bad_source_is_refused():
    assert K.DEFAULT_GEMM_SOURCE == "roofline"
    assert training.estimate("llama-3-8b", "h100-sxm", **KW).gemm_source == "roofline"
    with pytest.raises(ValueError, match="gemm_source"):
        training.estimate("llama-3-8b", "h100-sxm", gemm_source="measured", **KW)
    assert K.active().source == "roofline"  # the context does not leak out of estimate()


def test_both_switches_follow_one_rule_inside_a_using_block():
    """None means the source of the `using` block around the call, for GEMMs as for routed experts; a
    keyword given wins over the block (issue 47: the two switches read None differently before)."""
    from aisize.training import kernel_moe as KM
    on = training.estimate("llama-3-8b", "h100-sxm", gemm_source="kernels", **KW)
    with K.using(None, "kernels"):
        inside = training.estimate("llama-3-8b", "h100-sxm", **KW)
        given = training.estimate("llama-3-8b", "h100-sxm", gemm_source="roofline", **KW)
    assert inside.gemm_source == "kernels" and inside.step_seconds == on.step_seconds
    assert given.gemm_source == "roofline"
    with KM.using("kernels"):
        assert training.estimate("llama-3-8b", "h100-sxm", **KW).moe_source == "kernels"
        assert training.estimate("llama-3-8b", "h100-sxm", moe_source="roofline", **KW).moe_source == "roofline"
    assert K.resolve_source(None) == K.DEFAULT_GEMM_SOURCE and KM.resolve_source(None) == KM.DEFAULT_MOE_SOURCE


def test_measured_backward_differs_from_twice_the_forward():
    """With tables, the backward's GEMMs are dgrad + wgrad as measured, not 2x the forward."""
    d = model_dims(training.dims.resolve("llama-3-8b"))
    kw = dict(high_peak=989e12, low_peak=1979e12, e_high=0.634, e_low=0.702, hbm_bytes_per_s=3.35e12)
    k = K.linear_times(d, gpu="h100-sxm", recipe=RECIPES["bf16"], tokens=np.array([4096.0, 8192.0]), tp=np.array([1, 2]),
                       fused=True, **kw)
    back = np.asarray(k.dgrad + k.wgrad)
    assert back.shape == (2,)
    assert not np.allclose(back, 2.0 * np.asarray(k.forward), rtol=1e-3)
    assert np.all(np.asarray(k.forward) > 0)


def test_the_inference_tables_activation_quantization_is_taken_out_of_low_precision_gemms():
    """TensorRT-LLM's fp8 timings on H100 at m = 8,192, k = 4,096 carry ~97 us that does not grow with n (the
    engine quantizing the activation each call: 144 us at n = 1,024, 284 us at n = 4,096, slower than bf16's
    89 us at n = 1,024). Training times its casts apart, so the GEMM is what is left: faster than bf16."""
    q = K.input_quantization_seconds("h100-sxm", "trtllm", "fp8", 8192.0, 4096.0)
    assert float(q) == pytest.approx((4.0 * 143.6e-6 - 284.3e-6) / 3.0, rel=0.01)
    fp8 = K.gemm3_seconds("h100-sxm", "trtllm", "fp8", 8192.0, 4096.0, 1024.0)[0]
    bf16 = K.gemm3_seconds("h100-sxm", "trtllm", "bfloat16", 8192.0, 4096.0, 1024.0)[0]
    assert fp8 == pytest.approx(143.6e-6 - float(q), rel=0.01)
    assert 1.5 < bf16 / fp8 < 2.0  # H100: fp8 peak 2x bf16, minus what the measured kernel leaves
    # never faster than the tensor cores' dense peak
    assert fp8 >= 2.0 * 8192 * 4096 * 1024 / 1979e12
