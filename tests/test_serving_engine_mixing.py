"""Whether an engine's prefill iterations carry its decodes (in-flight batching) or run alone (SGLang).

TensorRT-LLM's in-flight batching and vLLM's chunked prefill put prompt work and decoding sequences in one
iteration; SGLang by default runs a prefill batch alone and the decodes wait for it
(``server_args.py`` ``enable_mixed_chunk = False``; ``managers/scheduler.py`` ``get_next_batch_to_run``
returns a new prefill batch before the running decode batch, and mixes them only with
``--enable-mixed-chunk``). The catalog keeps mixing for SGLang (cross-validation lost with its own default:
docs/calibration.md, "Prefill alone"); ``Engine.with_(mixes_prefill=False)`` states it. Worked figures: without
mixing the mean TPOT is a decode iteration plus, per decode step, the share 1 - e^-m of a prefill iteration alone
(m prompts a step), each read from the iteration model; and the closed form agrees with the discrete-event
simulation of the same scheduler within the 10 % the serving tests hold it to.
"""

import numpy as np
import pytest

from aisize import serving
from aisize.serving.engine import ENGINES

R1 = dict(tensor_parallel=4, weight_precision="nvfp4", kv_precision="fp8", attention_dp=1)


ALONE = ENGINES["sglang"].with_(mixes_prefill=False)  # SGLang as its scheduler runs by default


def test_every_catalog_engine_mixes_and_a_deployment_may_run_prefill_alone():
    # the catalog keeps mixing for every engine: SGLang's own default (alone) lost the cross-validated scores
    # (docs/calibration.md, "Prefill alone"); a deployment states it with with_(mixes_prefill=False)
    assert all(ENGINES[k].mixes_prefill and ENGINES[k].launch().mixes_prefill for k in ENGINES)
    assert ALONE.launch().mixes_prefill is False


def _closed(engine, i, o, c):
    return serving.estimate("deepseek-r1", "b200", input_tokens=i, output_tokens=o, concurrency=c, engine=engine, **R1)


@pytest.mark.parametrize("i, c", [(922, 64), (7373, 16)])
def test_decodes_wait_for_a_prefill_that_runs_alone(i, c):
    a, m = _closed(ALONE, i, 922, c), _closed("sglang", i, 922, c)
    # the stall is a share of a prefill iteration per decode step: TPOT longer, throughput lower, by a few %
    assert a.tpot_s > m.tpot_s and a.output_tokens_per_s < m.output_tokens_per_s
    assert 1.005 < a.tpot_s / m.tpot_s < 1.25
    # worked from the iteration model: a decode step of the B - m decoding sequences, and per decode step a share
    # 1 - e^-m of a prefill iteration alone (m = B / O prompts a step, Poisson: m / (1 - e^-m) of them in one)
    from aisize.serving.iteration import iteration_time
    rep, b = a.replica, a.state.batch
    mpp = b / 922.0
    decoding, ctx, per = b - mpp, i + 461.0, mpp / -np.expm1(-mpp)
    kw = dict(decode_context=ctx, prompt_tokens=float(i), overlap=rep.launch.overlap, **rep.shape.kwargs())
    t0 = iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=decoding, prefill_tokens=0.0,
                        prefill_prompts=0.0, graphed=bool(rep.launch.graphed(decoding, decoding, False)), **kw).seconds
    alone = iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=0.0, prefill_tokens=per * i,
                           prefill_prompts=per, graphed=False, **kw).seconds
    assert a.state.decode_iteration_seconds == pytest.approx(float(t0), rel=1e-9)
    assert a.state.prefill_iteration_seconds == pytest.approx(float(alone + t0), rel=1e-9)
    assert a.tpot_s == pytest.approx(float(t0 + -np.expm1(-mpp) * alone), rel=1e-9)


def test_without_mixing_the_closed_form_matches_the_simulation():
    from aisize.serving.simulate import simulate_estimate
    for c in (16, 64):
        est = _closed(ALONE, 3000, 200, c)
        sim = simulate_estimate(est, concurrency=c, requests=max(60, 8 * c), length_cv=0.1, seed=3)
        assert sim.output_tokens_per_s == pytest.approx(est.output_tokens_per_s, rel=0.10)
        assert sim.tpot_seconds == pytest.approx(est.tpot_s, rel=0.10)
        assert sim.ttft_seconds == pytest.approx(est.ttft_s, rel=0.25)
