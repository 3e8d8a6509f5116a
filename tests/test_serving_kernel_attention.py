"""Attention from the engine's attention and MLA kernels measured on the GPU (aisize.serving.kernel_attention)."""

import numpy as np
import pytest

from aisize import kernels, models, serving
from aisize.serving import kernel_attention as KA
from aisize.serving.calibration import from_dict
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

KERNELS = serving.CALIBRATION.with_(attention_source="kernels")
# (model, GPU, engine, attention TP): GQA on each engine, MLA on the two engines that measure it
CASES = [("llama-3.3-70b", "h200-sxm", "trtllm", 4), ("llama-3.1-8b", "h100-sxm", "vllm", 1),
         ("qwen3-30b-a3b", "b200", "sglang", 1), ("deepseek-r1", "b200", "sglang", 8),
         ("deepseek-r1", "h200-sxm", "trtllm", 8)]
PHASES = ("context", "generation")


def _costs(model):
    return model_costs(models.resolve(model), weight_formats("fp8"), "fp8")


def _measured(case, phase):
    """The package's own measurements behind a case's grid (its variant, its heads): a DataFrame."""
    from aisize.kernels import importer

    model, gpu, engine, tp = case
    key = KA._heads_key(models.resolve(model), float(tp))
    form = "mla" if key[0] == "mla" else "attention"
    df = importer.source_points(kernels.table(gpu, engine, f"{phase}_{form}").meta)
    sel = df.num_heads == key[1]
    if form == "attention":
        sel &= (df.num_kv_heads == key[2]) & (df.head_dim == key[3])
    for k, v in KA.grid(gpu, engine, phase, key, "fp8")[3].items():
        sel &= df[k].astype(str) == v
    return df[sel]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[1]}/{c[2]}/tp{c[3]}")
def test_the_grid_reproduces_the_measured_points(case, phase):
    # every batch and length the package measured at the case's heads, not only the grid's nodes
    pytest.importorskip("aiconfigurator_core")
    model, gpu, engine, tp = case
    df = _measured(case, phase)
    assert len(df) >= 20
    g = KA.grid(gpu, engine, phase, KA._heads_key(models.resolve(model), float(tp)), "fp8")
    got, ok = KA.interpolate(g, df.batch.to_numpy(), df.seq.to_numpy())
    assert ok.all()
    err = np.abs(got / df.seconds.to_numpy() - 1.0)
    assert np.median(err) <= 0.05, f"median {np.median(err):.1%}, p90 {np.quantile(err, 0.9):.1%} of {len(df)}"


@pytest.mark.parametrize("case", CASES[:3], ids=lambda c: f"{c[0]}/{c[1]}/{c[2]}")
def test_the_grid_is_the_surface_at_its_nodes_and_between_them(case):
    model, gpu, engine, tp = case
    key = KA._heads_key(models.resolve(model), float(tp))
    g = KA.grid(gpu, engine, "generation", key, "fp8")
    table = kernels.table(gpu, engine, "generation_attention")
    variant = g[3]
    batch, seq = np.array([1, 3, 16, 48, 128]), np.array([100, 1000, 2048, 3000, 1500])
    surface = table.lookup(variant, head_dim=key[3], num_kv_heads=key[2], num_heads=key[1], batch=batch, seq=seq)
    got, ok = KA.interpolate(g, batch, seq)
    assert ok.all() and surface.all_in_range
    np.testing.assert_allclose(got, surface.seconds, rtol=0.03)


def test_one_length_reads_the_same_as_many():
    # a search's batches at one context take a one-dimensional path: it must agree with the bilinear one
    key = KA._heads_key(models.resolve("llama-3.3-70b"), 4.0)
    g = KA.grid("h200-sxm", "trtllm", "generation", key, "fp8")
    batch = np.array([0.3, 1.0, 5.0, 100.0, 300.0, 2048.0, 5000.0])
    one, ok1 = KA.interpolate(g, batch, 3000.0)
    many, ok2 = KA.interpolate(g, np.r_[batch, batch], np.r_[np.full(7, 3000.0), np.full(7, 50000.0)])
    assert ok1.all() and (ok1 == ok2[:7]).all()
    np.testing.assert_allclose(one, many[:7], rtol=1e-12)


def test_flashattention3_prefill_on_h100_matches_its_published_speed():
    # vLLM's context kernel is FlashAttention-3. FA3's benchmark (Shah et al. 2024, arXiv:2407.08608, fig.
    # "Attention forward speed, head dim 128 (H100 80GB SXM5)"): batch x length = 16k tokens, 16 heads of 128,
    # 648 TFLOP/s at 16k; pytorch/benchmark PR 2391 measures flash_v3 at (1, 16, 16384, 128): 620.7 TFLOP/s.
    # Causal FLOPs counted as FA3 does (half of 4 s^2 d h).
    g = KA.grid("h100-sxm", "vllm", "context", ("gqa", 16.0, 16.0, 128), "bf16")
    seconds, ok = KA.interpolate(g, 1.0, 16384.0)
    assert ok
    tflops = 4.0 * 16384.0**2 * 128 * 16 / 2.0 / seconds / 1e12
    for published in (648.0, 620.7):
        assert abs(tflops / published - 1.0) <= 0.10, f"{tflops:.0f} TFLOP/s against {published}"


def test_decode_scales_with_the_batch_past_the_sweep():
    # the sweeps stop at a token budget; at 131,072 keys the measured batches end at 8 (Llama 70B TP 4, H200)
    key = KA._heads_key(models.resolve("llama-3.3-70b"), 4.0)
    g = KA.grid("h200-sxm", "trtllm", "generation", key, "fp8")
    t, ok = KA.interpolate(g, np.array([8.0, 64.0, 4096.0]), 131072.0)
    assert ok.all()
    np.testing.assert_allclose(t[1:] / t[0], [8.0, 512.0], rtol=1e-9)
    half, _ = KA.interpolate(g, 0.5, 4096.0)
    one, _ = KA.interpolate(g, 1.0, 4096.0)
    assert half == pytest.approx(0.5 * one)


def test_uncovered_cases_keep_the_roofline_and_say_so():
    c = _costs("llama-3.3-70b")
    roof = np.array([1.0, 2.0, 3.0])
    sec, ok = KA.prefill_seconds(c, "h200-sxm", "trtllm", np.array([1.0, 2.0, 1.0]),
                                 np.array([4096.0, 4096.0, 65536.0]), 4, roof)
    assert list(ok) == [True, True, False] and sec[2] == 3.0 and sec[0] != 1.0
    sec, ok = KA.decode_seconds(c, "mi300x", "vllm", 8.0, 4096.0, 4, 7.0)
    assert not ok and sec == 7.0
    assert "roofline" in KA.coverage(c, "mi300x", "vllm", 4)
    assert "measured" in KA.coverage(c, "h200-sxm", "trtllm", 4)


def _iteration(calib, model="llama-3.3-70b", gpu="h200-sxm", engine="trtllm", tp=4):
    rates = achieved_rates(device(gpu, "fp8", "fp8"), calib, engine)
    return iteration_time(_costs(model), rates, calib, decode_sequences=np.array([16.0, 128.0]),
                          decode_context=np.array([2048.0, 8192.0]), prefill_tokens=np.array([2048.0, 0.0]),
                          prefill_prompts=np.array([1.0, 0.0]), prompt_tokens=2048.0, gpus=tp)


def test_the_switch_reads_the_tables_and_reports_their_share():
    roof, kern = _iteration(serving.CALIBRATION), _iteration(KERNELS)
    assert roof.attention_table_share is None
    np.testing.assert_allclose(kern.attention_table_share, 1.0)
    assert not np.allclose(kern.decode_attention_seconds, roof.decode_attention_seconds)
    # everything but attention is unchanged
    np.testing.assert_array_equal(kern.linear_seconds, roof.linear_seconds)
    # decode of 128 sequences at 8,192 keys: 80 layers of the measured kernel (2 KV heads of 128 per GPU, fp8 KV)
    layer = kernels.attention_seconds("h200-sxm", "trtllm", "generation", 128, 8192, 16, 2, 128, kv_dtype="fp8")
    assert kern.decode_attention_seconds[1] == pytest.approx(80 * layer, rel=0.02)
    # an MLA model under an engine with MLA tables is covered too
    mla = _iteration(KERNELS, "deepseek-r1", "b200", "sglang", 8)
    np.testing.assert_allclose(mla.attention_table_share, 1.0)


def test_the_switch_is_validated():
    assert from_dict({"attention_source": "kernels"}).attention_source == "kernels"
    with pytest.raises(ValueError, match="attention_source='tables' is not allowed: one of roofline, kernels"):
        from_dict({"attention_source": "tables"})
