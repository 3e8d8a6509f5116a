"""A solve's steady states and iteration times prepared once (issue 51 item 2) give the long way's figures, to the bit.

:func:`aisize.serving.steady.prepare_steady_state` and :func:`aisize.serving.iteration.prepare_iteration_time` read
what a solve's fixed arguments decide once, and leave the batch's work to each call:

- a prepared closure asked at many concurrencies, in any order, gives what a fresh :func:`steady_state` gives at
  each (nothing it keeps is written by a call);
- whole prompts of one length skip the spans' ``np.where`` of a false condition (``chunked_prefill`` a false
  bool): the same figures, field by field, as the long way, which a false 0-d array takes;
- a prepared iteration time equals :func:`iteration_time` on the same arguments, its ``seconds_only`` the
  :class:`IterationTime`'s ``seconds``.

No timings are asserted here (``benchmarks/bench_solve_calls.py`` measures them).
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import iteration as I
from aisize.serving import steady as S
from solve_replicas import REPLICAS, replica

CONCURRENCIES = (37.5, np.array([1.0, 50.0, 400.0]), 1e-9, np.array([[2.0], [90.0]]), np.array(12.0), 37.5)


def _fields(state):
    return {k: (type(v).__name__, np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes())
            for k, v in vars(state).items()}


def _kwargs(rep, **more):
    kw = dict(input_tokens=1000.0, output_tokens=300.0, max_num_tokens=8192.0,
              chunked_prefill=rep.engine.chunked_prefill, shape=rep.shape, arrivals="poisson", launch=rep.launch,
              speculation=rep.speculation, cached_tokens=0.0, decode_context_tokens=None)
    kw.update(more)
    return kw


@pytest.mark.parametrize("name", list(REPLICAS))
@pytest.mark.parametrize("arrivals", ["burst", "poisson"])
@pytest.mark.parametrize("chunked", [False, True])
def test_a_prepared_steady_state_asked_in_any_order_is_each_fresh_call(name, arrivals, chunked):
    rep = replica(name)
    kw = _kwargs(rep, arrivals=arrivals, chunked_prefill=chunked, cached_tokens=200.0, decode_context_tokens=1400.0)
    state = S.prepare_steady_state(rep.costs, rep.rates, rep.calibration, **kw)
    for b in CONCURRENCIES:
        fresh = S.steady_state(rep.costs, rep.rates, rep.calibration, concurrency=b, **kw)
        assert _fields(state(b)) == _fields(fresh), b


@pytest.mark.parametrize("name", list(REPLICAS))
@pytest.mark.parametrize("arrivals", ["burst", "poisson"])
def test_whole_prompts_skip_only_what_gives_the_same_figures(name, arrivals):
    rep = replica(name)
    for b in CONCURRENCIES:
        figures = []
        for chunked in (False, np.False_, np.array(False)):  # the last takes the long way (not a bool)
            kw = _kwargs(rep, arrivals=arrivals, chunked_prefill=chunked)
            figures.append(_fields(S.steady_state(rep.costs, rep.rates, rep.calibration, concurrency=b, **kw)))
        assert figures[0] == figures[1] == figures[2], b


@pytest.mark.parametrize("name", list(REPLICAS))
def test_a_prepared_iteration_time_is_iteration_time(name):
    rep = replica(name)
    fixed = dict(decode_context=1150.0, prompt_tokens=1000.0, overlap=rep.launch.overlap,
                 speculation=rep.speculation, **rep.shape.kwargs())
    at = I.prepare_iteration_time(rep.costs, rep.rates, rep.calibration, **fixed)
    for b in (np.array([[0.0, 3.0, 250.0], [1.0, 64.0, 900.0]]), np.float64(17.0), np.array([0.0, 40.0])):
        tokens, prompts = 0.0 * b + 700.0, 0.0 * b + 1.0
        graphed = np.asarray(b) < 256
        whole = I.iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=b, prefill_tokens=tokens,
                                 prefill_prompts=prompts, graphed=graphed, **fixed)
        assert _fields(at(b, tokens, prompts, graphed)) == _fields(whole)
        seconds = at(b, tokens, prompts, graphed, seconds_only=True)
        assert np.asarray(seconds).tobytes() == np.asarray(whole.seconds).tobytes()
        assert type(seconds) is type(whole.seconds) and np.shape(seconds) == np.shape(whole.seconds)
