"""Long prompts under TensorRT-LLM's attention DP: balanced sets, an NCCL exchange, the closed loop (issue 48).

The MTP set's 7,373-token DeepSeek-R1 runs at 256 in flight under attention DP read TPOT 71 to 129 % high when
each prompt was an iteration of its own that stalled every rank (one rank prefills 7,373 tokens while the others
wait at the MoE exchange). Their scripts balance (InferenceX ``dsr1_fp4_b200_trt_mtp.sh``: ``attention_dp_config:
{enable_balance: true, batching_wait_iters: 0, timeout_iters: 60}``), so prompts wait until every rank has one and
prefill together, one stall a set (TensorRT-LLM ``py_executor.py`` ``_balance_adp_requests``). The ``trtllm`` row
balances as those deployments do. Three pieces, each from the engine's code:

- the exchange is NCCL's: one broadcast per rank in a group out (NVFP4 quantized first) and one reduce per rank
  back (``allgatherOp.cpp``, ``reducescatterOp.cpp``), read from NCCL's measured tables. Worked by hand for a decode
  step on 4 x B200, 64 sequences a rank verifying 2 tokens each (512 tokens): out 512 x (7,168 x 0.5625 + 8 x 8) B
  = 2,097,152 B, back 512 x 7,168 x 2 B = 7,340,032 B; NCCL's all-gather of the first 19.8 µs and reduce-scatter
  of the second 41.5 µs, 61.3 µs a MoE layer against the link roofline's 29.8 µs: 1.83 ms more a step (58 layers);
- in a closed loop the ranks hold equal shares, so a new request goes to the rank whose request ended (only a
  rank below ``expected_num_active_requests`` takes one, ``executor_request_queue.py``), batch limit or not;
- the published runs: MTP set row 19 (InferenceX run 21759505598, TensorRT-LLM 1.2.0rc6.post3) 1,167.5 output
  tokens/s per GPU at TPOT 49.67 ms, row 21 (run 26016880548, 1.3.0rc14) 1,190.2 and 48.60 ms.
"""

import pytest

from aisize import kernels, serving
from aisize.serving.engine import ENGINES
from aisize.serving.iteration import iteration_time
from aisize.serving.iteration_comm import exchange_by_sizes_bytes, exchange_by_sizes_seconds

MOE_LAYERS = 58
# the MTP set's rows 19 and 21 as the check passes them: no batch or token limit, no balancing flag
ROW19 = dict(tensor_parallel=4, expert_parallel=4, attention_dp=4, weight_precision="nvfp4", kv_precision="fp8",
             input_tokens=7373, output_tokens=922, speculative_method="mtp", speculative_tokens=1)


def _decode_step(gather_source):
    rep = serving.replica("deepseek-r1", "b200", engine="trtllm", **ROW19,
                          calibration=serving.CALIBRATION.with_(gather_source=gather_source))
    return rep, iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=256.0, decode_context=7834.0,
                               prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=7373.0,
                               speculation=rep.speculation, **rep.shape.kwargs())


def test_hand_worked_decode_exchange_from_nccl_tables():
    rep, measured = _decode_step("kernels")
    out, back = exchange_by_sizes_bytes(rep.costs, 512.0)
    assert (out, back) == (512 * (7168 * 0.5625 + 8 * 8), 512 * 7168 * 2.0) == (2_097_152, 7_340_032)
    ag = float(kernels.collective_seconds("b200", "all_gather", out, 4))
    rs = float(kernels.collective_seconds("b200", "reduce_scatter", back, 4))
    assert ag == pytest.approx(19.8e-6, rel=0.02) and rs == pytest.approx(41.5e-6, rel=0.02)
    roof = float(exchange_by_sizes_seconds(rep.costs, 512.0, 128.0, 4.0, rep.rates.link_bytes_per_s, 10e-6))
    assert roof == pytest.approx(29.8e-6, rel=0.01)
    _, roofline = _decode_step("roofline")
    extra = float(measured.communication_seconds - roofline.communication_seconds)
    assert extra == pytest.approx(MOE_LAYERS * (ag + rs - roof), rel=0.02)
    assert extra == pytest.approx(1.83e-3, rel=0.03)
    for part in ("linear_seconds", "experts_seconds", "decode_attention_seconds", "elementwise_seconds"):
        assert float(getattr(measured, part)) == float(getattr(roofline, part))  # only the exchange changes


def test_the_trtllm_rows_exchange_by_sizes_with_nccl_and_serve_balances():
    for key in ("trtllm", "trtllm-bench"):
        assert ENGINES[key].dp_gather_nccl and ENGINES[key].dp_exchange_by_sizes
    assert ENGINES["trtllm"].attention_dp_balance_iters == 60 and ENGINES["trtllm-bench"].attention_dp_balance_iters == 0
    # a group NCCL's tables do not cover keeps the link's roofline by sizes (GB200's sweeps stop at 4 GPUs)
    rep = serving.replica("deepseek-r1", "gb200", engine="trtllm", **dict(ROW19, tensor_parallel=8, expert_parallel=8,
                                                                           attention_dp=8))
    step = iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=512.0, decode_context=7834.0,
                          prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=7373.0, speculation=rep.speculation,
                          **rep.shape.kwargs())
    roofless = serving.replica("deepseek-r1", "gb200", engine="trtllm", calibration=serving.CALIBRATION.with_(
        gather_source="roofline"), **dict(ROW19, tensor_parallel=8, expert_parallel=8, attention_dp=8))
    same = iteration_time(roofless.costs, roofless.rates, roofless.calibration, decode_sequences=512.0,
                          decode_context=7834.0, prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=7373.0,
                          speculation=roofless.speculation, **roofless.shape.kwargs())
    assert float(step.seconds) == float(same.seconds)


def test_a_closed_loop_hands_each_prompt_to_the_rank_that_freed_a_slot_batch_limit_or_not():
    free = serving.estimate("deepseek-r1", "b200", engine="trtllm", concurrency=256, **ROW19)
    limited = serving.estimate("deepseek-r1", "b200", engine="trtllm", concurrency=256, max_batch_size=64,
                               max_num_tokens=8384, **ROW19)  # the script's C / 4 a rank
    assert free.ttft_s == pytest.approx(limited.ttft_s, rel=1e-6) and free.tpot_s == pytest.approx(limited.tpot_s)
    assert free.ttft_s > 2.0  # seconds of waiting for the last rank to free a slot (published: 3.66 s)


@pytest.mark.parametrize("published_tokens_per_s, published_tpot_s", [(1167.5, 49.67e-3), (1190.2, 48.60e-3)])
def test_published_long_prompt_rows_at_256_in_flight(published_tokens_per_s, published_tpot_s):
    est = serving.estimate("deepseek-r1", "b200", engine="trtllm", concurrency=256, **ROW19)
    assert est.output_tokens_per_s_per_gpu == pytest.approx(published_tokens_per_s, rel=0.15)
    assert est.tpot_s == pytest.approx(published_tpot_s, rel=0.15)
    # each prompt stalling every rank alone (balancing off): TPOT +56 and +60 % (+71 and +75 % with the link
    # roofline's exchange of equal shares, as shipped before)
    alone = serving.estimate("deepseek-r1", "b200", engine=ENGINES["trtllm"].with_(attention_dp_balance_iters=0),
                             concurrency=256, **ROW19)
    assert alone.tpot_s > 1.5 * published_tpot_s
