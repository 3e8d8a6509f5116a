"""The drafter's passes of a speculative step: the first runs over the tokens the target just verified.

SGLang's EAGLE worker runs ``forward_draft_extend_after_decode`` over ``num_draft_tokens`` a sequence after
the verify pass; TensorRT-LLM's one-model MTP Eagle feeds ``accepted_tokens[:, :draft_len + 1]`` to its
first draft forward and gathers one token a sequence for the head (``aisize/serving/speculative.py`` [5, 6]).
"""

import pytest

from aisize import serving
from aisize.serving.estimate import replica_of
from aisize.serving.iteration import iteration_time
from aisize.serving.speculative import draft_seconds

DSR1 = dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8", input_tokens=922, output_tokens=922)


@pytest.fixture(scope="module")
def replica():
    est = serving.estimate("deepseek-r1", "b200", concurrency=8, engine="trtllm", speculative_method="mtp",
                           speculative_tokens=3, **DSR1)
    return replica_of(est)


def _pass(rep, spec, seqs, speculation=None):
    return iteration_time(spec.draft_costs, rep.rates, rep.calibration, decode_sequences=seqs, decode_context=1383.0,
                          prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=1.0, speculation=speculation,
                          **rep.shape.kwargs())


def test_the_first_draft_pass_carries_the_verified_tokens(replica):
    spec, calib = replica.speculation, replica.calibration
    assert spec.first_pass.verify_tokens == 4 and spec.first_pass.draft_costs is None
    kw = {k: v for k, v in replica.shape.kwargs().items() if k != "pipeline_parallel"}
    drafts = float(draft_seconds(spec, replica.rates, calib, decode_sequences=8.0, decode_context=1383.0,
                                 shape_kwargs=kw))
    one = _pass(replica, spec, 8.0)
    first = _pass(replica, spec, 8.0, speculation=spec.first_pass)
    # 32 tokens through the MTP block's experts reach more of them than 8 do: the first pass costs more
    assert first.experts_seconds > one.experts_seconds
    assert first.head_seconds >= one.head_seconds  # (its head takes one token a sequence, as the others do)
    expected = (first.gpu_seconds - first.head_seconds + one.head_seconds + 2 * one.gpu_seconds
                + 3 * calib.draft_step_seconds)
    assert drafts == pytest.approx(expected)
    assert drafts > 3 * (one.gpu_seconds + calib.draft_step_seconds)  # k one-token passes: the old count
    assert float(draft_seconds(spec, replica.rates, calib, decode_sequences=0.0, decode_context=1383.0,
                               shape_kwargs=kw)) == 0.0
