"""steady_state's cuts of numpy's per-call cost (issue 51 item 2) give every figure of the long way, to the bit.

Nothing cached skips :func:`aisize.serving.prefix.prefill_work` (the whole prompt, as it returns it); the stack of
an iteration without and with prefill work is built in place; dimensions are counted without numpy's dispatch.
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize import serving
from aisize.serving import steady as S
from aisize.serving.estimate import replica_of


def _args(engine, arrivals):
    est = serving.estimate("llama-3.1-8b", "h100-sxm", tensor_parallel=1, weight_precision="fp8", kv_precision="fp8",
                           input_tokens=1024, output_tokens=256, engine=engine, requests_per_s=20.0)
    r = replica_of(est)
    return (r.costs, r.rates, r.calibration), dict(
        output_tokens=256.0, max_num_tokens=est.max_num_tokens * r.groups, chunked_prefill=r.engine.chunked_prefill,
        shape=r.shape, launch=r.engine.launch(est.max_batch_size, r.groups), arrivals=arrivals)


def _bits(st) -> dict:
    return {k: (np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes()) for k, v in vars(st).items()}


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
@pytest.mark.parametrize("arrivals", ["burst", "poisson"])
def test_nothing_cached_is_the_whole_prompt_of_prefill_work(engine, arrivals):
    pos, kw = _args(engine, arrivals)
    prompts = np.array([256.0, 1024.0, 7000.0])
    b = np.array([[1.0], [17.5], [120.0]])
    # an array of zeros goes through prefill_work; a plain zero (or none given) takes the shortcut
    long_way = S.steady_state(*pos, concurrency=b, input_tokens=prompts, cached_tokens=np.zeros(3), **kw)
    for cached in (0.0, 0, -0.0, np.float64(0.0), np.zeros(())):
        assert _bits(S.steady_state(*pos, concurrency=b, input_tokens=prompts, cached_tokens=cached, **kw)) == \
            _bits(long_way)
    some = S.steady_state(*pos, concurrency=b, input_tokens=prompts, cached_tokens=100.0, **kw)
    assert _bits(some) != _bits(long_way)  # a cache is not skipped


@pytest.mark.parametrize("x, nd", [(0.0, 0), (np.float64(2.0), 2), (np.arange(3.0), 1), (np.ones((2, 3)), 3),
                                   (np.array(5.0), 0), ([1.0, 2.0], 2), (3, 1)])
def test_the_stack_and_the_dimensions_are_numpys(x, nd):
    a = np.asarray(x, dtype=float)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    expected = np.stack((np.zeros_like(a), a))
    got = S._without_and_with(x, nd)
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.tobytes() == expected.tobytes()
    assert S._ndim(x) == np.ndim(x)
