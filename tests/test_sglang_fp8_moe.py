"""SGLang's FP8 routed experts under expert parallelism from its own measured MoE operator (issue 48).

The catalog's ``measured_ep_moe_formats`` column (data/engines.csv; empty in every row: SGLang's "fp8" lost
cross-validation) names the expert formats an engine times from its own measured MoE operator where EP > 1
(aisize.serving.kernel_moe.engine_experts_seconds); docs/calibration-sglang-fp8.md has the measurements."""

import numpy as np
import pytest

from aisize import kernels, models
from aisize.serving import kernel_moe as KM
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.engine import ENGINES

R1_FP8 = model_costs(models.resolve("deepseek-r1"), weight_formats("fp8"), "fp8")
R1_FP4 = model_costs(models.resolve("deepseek-r1"), weight_formats("nvfp4"), "fp8")
R1_MOE = dict(hidden=7168, inter=2048, topk=8, num_experts=256)  # DeepSeek-R1 config.json
MOE_LAYERS = 58  # 61 layers, the first 3 dense
TOKENS = np.array([1024.0, 4096.0, 16384.0])


def _moe_ms(engine, kernel, tokens, tp, ep, distribution="power_law_1.01"):
    return 1e3 * kernels.moe_seconds("b200", engine, "fp8_block", tokens, R1_MOE["hidden"], R1_MOE["inter"],
                                     R1_MOE["topk"], R1_MOE["num_experts"], tp, ep, distribution=distribution,
                                     kernel=kernel)


def test_sglangs_measured_fp8_moe_at_ep8_against_tensorrt_llms():
    # measured points (aiconfigurator-core 0.12.0, B200): one MoE layer at 16,384 tokens, TP 1 x EP 8
    sglang = _moe_ms("sglang", "sglang_flashinfer_trtllm_moe", 16384.0, 1, 8)
    trtllm = _moe_ms("trtllm", "deepgemm", 16384.0, 1, 8)
    assert sglang == pytest.approx(5.007, rel=0.02)
    assert trtllm == pytest.approx(1.380, rel=0.02)
    # at prefill token counts SGLang's takes 2.7 to 9.2 times TensorRT-LLM's time at EP 8 ...
    for dist in ("balanced", "power_law_1.01"):
        ratio = (_moe_ms("sglang", "sglang_flashinfer_trtllm_moe", TOKENS[1:], 1, 8, dist)
                 / _moe_ms("trtllm", "deepgemm", TOKENS[1:], 1, 8, dist))
        assert np.all(ratio > 2.6) and np.all(ratio < 9.5)
    # ... and runs 10 to 27 % faster than it at EP 1 (experts split TP 8)
    for dist in ("balanced", "power_law_1.01"):
        ratio = (_moe_ms("sglang", "sglang_flashinfer_trtllm_moe", TOKENS, 8, 1, dist)
                 / _moe_ms("trtllm", "deepgemm", TOKENS, 8, 1, dist))
        assert np.all(ratio > 0.72) and np.all(ratio < 0.91)


def test_the_catalog_ships_no_engine_scoped_moe_operator_and_a_deployment_may_name_one():
    # SGLang's fp8 lost cross-validation (docs/calibration-sglang-fp8.md): every catalog row leaves the column empty
    for key in ("sglang", "trtllm", "trtllm-bench", "vllm"):
        assert ENGINES[key].measured_ep_moe_formats == ()
    assert ENGINES["sglang"].with_(measured_ep_moe_formats=("fp8",)).measured_ep_moe_formats == ("fp8",)


def _roofline():
    return np.full(3, -1.0)  # a marker: where the roofline would serve


def test_under_ep8_the_step_reads_sglangs_table_for_every_moe_layer():
    got = KM.engine_experts_seconds(R1_FP8, "b200", "sglang", ("fp8",), TOKENS, 8.0, 8.0, _roofline)
    table = MOE_LAYERS * _moe_ms("sglang", "sglang_flashinfer_trtllm_moe", TOKENS, 1, 8) / 1e3
    np.testing.assert_allclose(got, table, rtol=0.02)  # the curve interpolates the table on powers of two
    assert "measured MoE kernels" in KM.engine_coverage(R1_FP8, "b200", "sglang", ("fp8",), 8, 8)


def test_ep1_other_formats_and_other_engines_keep_the_roofline():
    np.testing.assert_array_equal(
        KM.engine_experts_seconds(R1_FP8, "b200", "sglang", ("fp8",), TOKENS, 8.0, 1.0, _roofline), _roofline())
    np.testing.assert_array_equal(
        KM.engine_experts_seconds(R1_FP4, "b200", "sglang", ("fp8",), TOKENS, 8.0, 8.0, _roofline), _roofline())
    np.testing.assert_array_equal(
        KM.engine_experts_seconds(R1_FP8, "b200", "trtllm", (), TOKENS, 8.0, 8.0, _roofline), _roofline())
    assert KM.engine_coverage(R1_FP8, "b200", "sglang", ("fp8",), 8, 1).startswith("roofline (experts not spread")
    assert KM.engine_coverage(R1_FP4, "b200", "sglang", ("fp8",), 8, 8).startswith("roofline (sglang times only fp8")


def test_mixed_splits_take_the_table_only_where_ep_exceeds_one():
    ep = np.array([8.0, 1.0, 8.0])
    got = KM.engine_experts_seconds(R1_FP8, "b200", "sglang", ("fp8",), TOKENS, 8.0, ep, _roofline)
    assert got[1] == -1.0 and got[0] > 0 and got[2] > 0


def test_an_engine_that_names_fp8_times_its_ep8_prefill_from_its_table_and_only_then():
    """The step reads the column (iteration.achieved_rates -> Rates.kernel_moe_engine): a DeepSeek-R1 FP8 replica
    on B200 under SGLang at EP 8 takes its MoE at prefill sizes from SGLang's measured operator, 2.0 to 2.3 times
    aisize's roofline there (docs/calibration-sglang-fp8.md), so its max throughput falls; at EP 1 nothing moves."""
    from aisize import serving

    named = ENGINES["sglang"].with_(measured_ep_moe_formats=("fp8",))

    def tokens_per_s(engine, ep):
        return serving.estimate("deepseek-r1", "b200", tensor_parallel=8, expert_parallel=ep, weight_precision="fp8",
                                kv_precision="fp8", input_tokens=7373, output_tokens=922,
                                engine=engine).output_tokens_per_s

    assert tokens_per_s(named, 8) < 0.97 * tokens_per_s(ENGINES["sglang"], 8)
    assert tokens_per_s(named, 1) == tokens_per_s(ENGINES["sglang"], 1)


@pytest.mark.parametrize("formats", [("fp9",), "fp8"])
def test_a_misspelt_or_bare_format_is_refused_where_the_engine_is_made(formats):
    with pytest.raises(ValueError, match="measured_ep_moe_formats"):
        ENGINES["sglang"].with_(measured_ep_moe_formats=formats)
