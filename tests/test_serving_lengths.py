"""Length distributions (aisize.serving.lengths) and the tails they make (aisize.serving.tails): worked numbers.

The simulation grid that checks the p95 TTFT and TPOT is in tests/test_serving_reuse_simulation.py.
"""

import math

import numpy as np
import pytest

from aisize import serving
from aisize.serving import lengths as L
from aisize.serving.tails import normal_tail, tpot_quantile


def test_lognormal_quantile_by_hand():
    # mean 1,000, CV 1: σ² = ln 2, μ = ln 1000 - ln2 / 2; p95 = exp(μ + 1.6449 σ) = 2,781.1
    d = L.lognormal(1000, 1.0)
    mu, sigma = math.log(1000) - math.log(2) / 2, math.sqrt(math.log(2))
    assert float(d.quantile(0.95)) == pytest.approx(math.exp(mu + 1.6448536 * sigma), rel=1e-6)
    assert float(d.quantile(0.95)) == pytest.approx(2781.1, abs=0.1)
    assert d.second_moment == pytest.approx(2e6)


@pytest.mark.parametrize("cv", [0.3, 1.0, 2.0])
def test_points_keep_the_mean_and_the_spread(cv):
    x, w = L.lognormal(700, cv).points()
    mean = float((x * w).sum())
    assert w.sum() == pytest.approx(1.0) and mean == pytest.approx(700, rel=1e-9)
    assert math.sqrt(float((x * x * w).sum()) - mean**2) / mean == pytest.approx(cv, rel=0.04)


def test_empirical_table():
    d = L.empirical([100, 1000], [3, 1])
    assert d.mean_tokens == pytest.approx(325) and d.cv == pytest.approx(math.sqrt(0.75 * 0.25) * 900 / 325)
    assert list(d.quantile([0.5, 0.8])) == [100, 1000]
    x = d.sample(np.random.default_rng(1), 4000)
    assert set(np.unique(x)) == {100, 1000} and x.mean() == pytest.approx(325, rel=0.05)


@pytest.mark.parametrize("call, name", [(lambda: L.lognormal(0.5, 1.0), "mean_tokens"),
                                        (lambda: L.lognormal(100, 0), "cv"),
                                        (lambda: L.lognormal(100, 11), "cv"),
                                        (lambda: L.empirical([100, 0]), "tokens"),
                                        (lambda: L.empirical([100, 200], [1]), "weights has 1 entries"),
                                        (lambda: L.empirical([100, 200], [0, 0]), "at least one weight"),
                                        (lambda: L.Lengths(L.fixed(10), 20), "output=20")])
def test_bad_distributions_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_running_sequences_are_length_biased():
    # prompts 1,000; outputs lognormal mean 500, CV 1: E[O²] = 2 x 500² -> context 1,000 + 500 (not 1,250),
    # a reserving engine holds 1,000 + 1,000 per request in flight (not 1,500)
    lengths = L.Lengths(L.fixed(1000), L.lognormal(500, 1.0))
    assert L.decode_context_tokens(lengths) == pytest.approx(1500)
    assert L.reserved_tokens(lengths) == pytest.approx(2000)
    fixed = L.Lengths(L.fixed(1000), L.fixed(500))
    assert L.decode_context_tokens(fixed) == pytest.approx(1250) and L.reserved_tokens(fixed) == pytest.approx(1500)


def test_normal_tail_and_the_tpot_quantile_of_one_length():
    assert float(normal_tail(1.6448536)) == pytest.approx(0.05, abs=1e-6)
    assert float(normal_tail(-1.0)) == pytest.approx(0.841345, abs=1e-6)
    # one output length: T̄ + 1.645 σ / sqrt(n)
    assert tpot_quantile(0.01, 0.004, [100.0], [1.0]) == pytest.approx(0.01 + 1.6448536 * 0.004 / 10, rel=1e-6)
    # short outputs set the tail: half the requests at n = 4 put the p95 above the n = 100 one
    assert tpot_quantile(0.01, 0.004, [4.0, 100.0], [0.5, 0.5]) > 0.01 + 1.6448536 * 0.004 / 10


KW = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", input_tokens=1024, output_tokens=256,
          engine="vllm", requests_per_s=10.0)


def test_spread_lengths_lengthen_the_tails_not_the_mean_throughput():
    base = serving.estimate("llama-3.1-8b", "h100-sxm", **KW)
    spread = serving.estimate("llama-3.1-8b", "h100-sxm", **KW,
                              length_distribution=L.Lengths.lognormal(1024, 256, 1.0, 1.0))
    assert spread.output_tokens_per_s == pytest.approx(base.output_tokens_per_s)
    outside = serving.CALIBRATION.request_seconds  # time outside the GPU, the same for every request
    assert spread.ttft_p95_s - outside > 1.3 * (base.ttft_p95_s - outside)
    assert spread.tpot_p95_s > base.tpot_p95_s
    assert spread.lengths.decode_context_tokens == pytest.approx(1024 + 256)  # E[O²]/2E[O] = 256 at CV 1
    assert spread.lengths.input_p95_tokens == pytest.approx(float(L.lognormal(1024, 1.0).quantile(0.95)))


def test_the_distribution_must_have_the_mean_lengths():
    with pytest.raises(ValueError, match="length_distribution.input has a mean of 2,000.0 tokens"):
        serving.estimate("llama-3.1-8b", "h100-sxm", **KW,
                         length_distribution=L.Lengths(L.fixed(2000), L.fixed(256)))
    with pytest.raises(ValueError, match="length_distribution=.*not allowed"):
        serving.estimate("llama-3.1-8b", "h100-sxm", **KW, length_distribution=(1024, 256))
