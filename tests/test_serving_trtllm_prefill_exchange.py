"""TensorRT-LLM's attention-DP exchange by per-rank sizes (issue 48): a prompt on one rank crosses the links once.

Under attention DP, TensorRT-LLM's fused MoE (``fused_moe_cutlass.py`` ``forward_chunk``) quantizes NVFP4 inputs
and all-gathers every rank's own tokens by ``sizes=all_rank_num_tokens`` (values, scale factors, expert ids and
weights), then reduce-scatters the 16-bit output by the same sizes. A rank therefore receives every token but its
own. The roofline exchange moves attention_dp - 1 shares of the busiest rank's tokens each way, as if every rank
held as many. Worked by hand for DeepSeek-R1 NVFP4 (7,168 hidden, top-8, 58 MoE layers) on 4 x B200 (900 GB/s a
direction at the 0.8 link share: 720 GB/s, 10 µs a collective), one 7,373-token prompt on one rank and 64
decoding sequences on each:

- roofline: 2 x (3 x 7,437 tokens x 7,168 x 2 B / 720 GB/s + 10 µs) = 2 x (444 + 10) µs = 908 µs a MoE layer;
- by sizes: the other ranks hold 64 tokens, so a rank receives 7,629 - 64 = 7,565 tokens of
  7,168 x (0.5625 + 2) B + 8 x 8 B = 18,432 B: 7,565 x 18,432 B / 720 GB/s + 2 x 10 µs = 213.7 µs a MoE layer;
- over 58 MoE layers the iteration that carries the prompt is 40.3 ms shorter.
"""

import numpy as np
import pytest

from aisize import serving
from aisize.serving.engine import ENGINES
from aisize.serving.iteration import iteration_time
from aisize.serving.iteration_comm import dp_gather_bytes, exchange_by_sizes_seconds

HIDDEN, TOPK, MOE_LAYERS = 7168, 8, 58
LINK = 0.8 * 900e9  # B200's NVLink per direction at the calibration's link share
LATENCY = 10e-6
# the link's roofline, not NCCL's measured tables (the shipped rows read them: tests/test_serving_trtllm_nccl_exchange.py)
BY_SIZES = ENGINES["trtllm"].with_(dp_exchange_by_sizes=True, dp_gather_nccl=False)
ROOFLINE = ENGINES["trtllm"].with_(dp_exchange_by_sizes=False, dp_gather_nccl=False)  # (dp - 1) x the busiest's, each way


def _replica(engine, weight="nvfp4", dp=4, tp=4):
    return serving.replica("deepseek-r1", "b200", tensor_parallel=tp, weight_precision=weight, kv_precision="fp8",
                           input_tokens=7373, output_tokens=922, concurrency=256, engine=engine,
                           attention_dp=dp, expert_parallel=tp)


def _prefill_step(engine, dp=4, decoding=256.0, weight="nvfp4"):
    rep = _replica(engine, weight, dp)
    return iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=decoding, decode_context=7834.0,
                          prefill_tokens=7373.0, prefill_prompts=1.0, prompt_tokens=7373.0, **rep.shape.kwargs())


def test_hand_worked_prompt_on_one_rank():
    roofline_layer = 2 * (3 * 7437 * HIDDEN * 2.0 / LINK + LATENCY)
    by_sizes_layer = 7565 * (HIDDEN * 2.5625 + 8 * TOPK) / LINK + 2 * LATENCY
    assert roofline_layer == pytest.approx(908.5e-6, rel=1e-3)
    assert by_sizes_layer == pytest.approx(213.7e-6, rel=1e-3)
    rep = _replica(BY_SIZES)
    assert rep.rates.link_bytes_per_s == pytest.approx(LINK) and rep.calibration.collective_seconds == LATENCY
    got = exchange_by_sizes_seconds(rep.costs, 7629.0, 7437.0, 4.0, rep.rates.link_bytes_per_s, LATENCY)
    assert float(got) == pytest.approx(by_sizes_layer, rel=1e-9)
    roof, sized = _prefill_step(ROOFLINE), _prefill_step(BY_SIZES)
    saved = float(roof.communication_seconds - sized.communication_seconds)
    assert saved == pytest.approx(MOE_LAYERS * (roofline_layer - by_sizes_layer), rel=1e-6)
    assert saved == pytest.approx(40.3e-3, rel=1e-2)
    for part in ("linear_seconds", "experts_seconds", "prefill_attention_seconds", "elementwise_seconds"):
        assert float(getattr(sized, part)) == float(getattr(roof, part))  # only the exchange changes


def test_equal_shares_move_what_the_roofline_moves_but_the_quantized_gather():
    rep = _replica(BY_SIZES)
    b, dp = 64.0, 4.0
    got = float(exchange_by_sizes_seconds(rep.costs, dp * b, b, dp, LINK, LATENCY))
    assert got == pytest.approx((dp - 1) * b * (HIDDEN * 2.5625 + 8 * TOPK) / LINK + 2 * LATENCY, rel=1e-9)
    roofline = 2 * ((dp - 1) * b * HIDDEN * 2.0 / LINK + LATENCY)
    assert got < roofline  # 4-bit values and scales out, 16-bit back: (0.5625 + 2) / 4 of the bytes, + routing
    # a 16-bit gather (DeepSeek's block-scaled FP8 keeps its inputs in 16 bits) moves what the roofline moves
    fp8 = _replica(BY_SIZES, "fp8")
    assert dp_gather_bytes("fp8") == 2.0 and dp_gather_bytes("nvfp4") == 0.5625
    got16 = float(exchange_by_sizes_seconds(fp8.costs, dp * b, b, dp, LINK, LATENCY))
    assert got16 == pytest.approx(roofline + (dp - 1) * b * 8 * TOPK / LINK, rel=1e-9)


def test_no_attention_dp_no_change_and_the_catalog_states_it():
    from aisize import catalog

    for engine in ("trtllm", "trtllm-bench"):  # the catalog's column where its table has one (docs/calibration.md)
        # shipped on, read from NCCL's tables (docs/calibration.md, "TensorRT-LLM's exchange as NCCL measures it")
        assert ENGINES[engine].dp_exchange_by_sizes is catalog.engines[engine].dp_exchange_by_sizes is True
    assert not ENGINES["vllm"].dp_exchange_by_sizes and not ENGINES["sglang"].dp_exchange_by_sizes
    one, two = (_prefill_step(e, dp=1) for e in (ROOFLINE, BY_SIZES))
    assert float(one.seconds) == float(two.seconds)
    assert _replica(BY_SIZES).rates.dp_exchange_by_sizes
    assert not _replica(ROOFLINE).rates.dp_exchange_by_sizes


def test_the_stall_of_one_ranks_prompt_shrinks_with_the_ranks():
    # the roofline's exchange of a prompt grows with dp - 1; by sizes it is the prompt once, whatever dp
    saved = []
    for dp in (2.0, 4.0, 8.0):
        rep = _replica(BY_SIZES, dp=int(dp), tp=8) if dp == 8 else _replica(BY_SIZES, dp=int(dp))
        n_group = 7373.0 + 64.0
        sized = exchange_by_sizes_seconds(rep.costs, 7373.0 + 64.0 * dp, n_group, dp, LINK, LATENCY)
        roof = 2 * ((dp - 1) * n_group * HIDDEN * 2.0 / LINK + LATENCY)
        saved.append(roof / float(sized))
    assert np.all(np.diff(saved) > 0) and saved[0] > 1.5
