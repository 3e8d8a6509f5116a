"""The scheduler simulation's decode-only look-ahead gives the figures of one iteration_time call per iteration.

``aisize.serving.simulate`` times the decode-only iterations of an unchanged batch in one vectorised call
(``_DecodeAhead``, docs/speed.md 2026-12-05). Here each run is repeated with the look-ahead replaced by the way it
was done before, one scalar call per iteration from that iteration's mean context, and every figure of the two
results must be equal: the look-ahead is a speed-up, not an approximation. A look-ahead one step off in its
contexts, or kept past an admission or a finished request, changes TTFTs and TPOTs in their last digits or more.
"""

import pytest

from aisize import serving
from aisize.serving import simulate as sim
from aisize.serving.prefix import Reuse
from aisize.serving.simulate_reuse import simulate_reuse_estimate


def _per_iteration(self, version, decoding, step_seconds):
    ctx = sum(r.prompt + r.generated for r in decoding) / len(decoding)
    return float(step_seconds(len(decoding), ctx, 0, 0, 0.0))


def _estimate(model, gpu, tp, i, o, engine, **kw):
    return serving.estimate(model, gpu, tensor_parallel=tp, weight_precision="fp8", kv_precision="fp8",
                            input_tokens=i, output_tokens=o, engine=engine, **kw)


RUNS = {
    "Poisson, lengths of CV 0.5 (vLLM, chunked)": lambda: sim.simulate_estimate(
        _estimate("llama-3.1-8b", "h100-sxm", 1, 1024, 256, "vllm", requests_per_s=20.0), requests_per_s=20.0,
        requests=300, seed=7, length_cv=0.5),
    "closed loop, MoE EP 8 (SGLang)": lambda: sim.simulate_estimate(
        _estimate("deepseek-r1", "b200", 8, 900, 200, "sglang", expert_parallel=8), concurrency=32, requests=150,
        length_cv=0.1),
    "EAGLE-3 speculation (τ not whole)": lambda: sim.simulate_estimate(
        _estimate("llama-3.1-8b", "h100-sxm", 1, 1024, 256, "trtllm", speculative_method="eagle3",
                  speculative_tokens=3), requests_per_s=5.0, requests=200, seed=3),
    "sessions through an HBM tier (on_kv)": lambda: simulate_reuse_estimate(
        _estimate("llama-3.1-8b", "h100-sxm", 1, 8000, 300, "vllm", requests_per_s=2.0,
                  prefix=Reuse(shared_tokens=1000, turns=8, think_time_s=10.0)),
        Reuse(shared_tokens=1000, turns=8, think_time_s=10.0), requests=200, seed=3),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_look_ahead_gives_the_figures_of_one_call_per_iteration(name, monkeypatch):
    fast = RUNS[name]()
    monkeypatch.setattr(sim._DecodeAhead, "next", _per_iteration)
    slow = RUNS[name]()
    assert fast == slow


def test_the_look_ahead_times_many_iterations_per_call(monkeypatch):
    """The speed-up is real: a fifth or fewer of the iteration_time calls of one call per iteration (a look-ahead
    never used would pass the test above)."""
    calls = []
    real = sim.iteration_time
    monkeypatch.setattr(sim, "iteration_time", lambda *a, **k: calls.append(1) or real(*a, **k))
    est = _estimate("llama-3.1-8b", "h100-sxm", 1, 1024, 256, "trtllm", requests_per_s=5.0)
    sim.simulate_estimate(est, requests_per_s=5.0, requests=200, seed=3)
    ahead = len(calls)
    monkeypatch.setattr(sim._DecodeAhead, "next", _per_iteration)
    sim.simulate_estimate(est, requests_per_s=5.0, requests=200, seed=3)
    assert ahead < 0.2 * (len(calls) - ahead)
