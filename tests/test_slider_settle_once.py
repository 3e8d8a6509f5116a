"""A replica with a length distribution and no prompt reuse is solved once per estimate, at the lengths' decoding
context (issue 51 item 2): :func:`aisize.serving.estimate._evaluated` no longer solves it first at the mean lengths,
a state :meth:`aisize.serving.reuse.ServingWorkload.settle` never read. Every figure must be the one the long way
gives; no timings are asserted here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import dataclasses
import inspect
import math
import sys

import numpy as np
import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize.serving import lengths as L
from aisize.serving.prefix import Reuse
from aisize.serving.replica import evaluate

E = sys.modules["aisize.serving.estimate"]
KW = dict(weight_precision="bf16", kv_precision="bf16", engine="trtllm", input_tokens=1024, output_tokens=256)


def _long_way(asked):
    """_evaluated as it was: every candidate solved at the mean lengths, the best settled."""
    best = None
    for rep in asked.replicas:
        state = evaluate(rep, asked.load)
        score = state.score if state is not None else -1.0
        if best is None or score > best[0]:
            best = (score, rep, state)
    _, rep, state = best
    if state is None:
        return rep, rep.capacity, None
    return (rep,) + asked.workload.settle(asked.load, rep, rep.capacity, state)


def _figures(evaluated) -> dict:
    """Every number of the estimate made of ``evaluated`` (_result), by field."""
    est = E._result(*evaluated)
    out = {}
    for f in dataclasses.fields(est):
        v = getattr(est, f.name)
        if isinstance(v, (bool, int, float, np.floating)):
            out[f.name] = v
        elif f.name == "lengths" and v is not None:
            out[f.name] = repr(v)
    return out


def _asked(model, **kw):
    asked = inspect.signature(E.estimate).bind(model, "h100-sxm", **kw)
    asked.apply_defaults()
    return E._asked(asked.arguments)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        (isinstance(x, float) and math.isnan(x) and math.isnan(y)) or x == y for x, y in
        ((a[k], b[k]) for k in a))


SPREADS = [(0.4, 0.7), (0.0, 1.2), (1.0, 0.0)]


@pytest.mark.parametrize("tp, spread", [(1, SPREADS[0]), (2, SPREADS[1]), (8, SPREADS[2]), (1, SPREADS[1])])
@pytest.mark.parametrize("load", [dict(requests_per_s=3.0), dict(requests_per_s=30.0), dict(requests_per_s=500.0),
                                  dict(concurrency=16), {}])
def test_the_estimate_with_lengths_is_the_long_ways(tp, spread, load):
    lengths = L.Lengths.lognormal(1024, 256, *spread)
    asked = _asked("llama-3-8b", tensor_parallel=tp, length_distribution=lengths, **KW, **load)
    assert len(asked.replicas) == 1 and asked.workload.reuse is None  # the case solved once
    assert _same(_figures(E._evaluated(asked)), _figures(_long_way(asked)))


def test_a_replica_that_does_not_fit_says_so_as_before():
    asked = _asked("llama-3-70b", tensor_parallel=1, requests_per_s=1.0,
                   length_distribution=L.Lengths.lognormal(1024, 256, 0.4, 0.7), **KW)
    got = E._evaluated(asked)
    assert got[2] is None and not bool(got[1].memory.fits)
    assert _same(_figures(got), _figures(_long_way(asked)))


def test_prompt_reuse_still_reads_the_state_at_mean_lengths(monkeypatch):
    # with reuse, settle starts its fixed point from that state: it is still solved first (and the figures are the
    # long way's); the test would fail were the short way taken there (settle reads state.stable of None)
    asked = _asked("llama-3-8b", tensor_parallel=1, requests_per_s=20.0,
                   prefix=Reuse(shared_tokens=512, turns=4, think_time_s=5.0), **KW)
    assert asked.workload.reuse is not None
    assert _same(_figures(E._evaluated(asked)), _figures(_long_way(asked)))


def test_the_long_way_would_differ_were_the_settle_skipped():
    # the comparison can fail: the state at mean lengths, unsettled, is not the estimate with lengths
    asked = _asked("llama-3-8b", tensor_parallel=1, requests_per_s=30.0,
                   length_distribution=L.Lengths.lognormal(1024, 256, 0.4, 0.7), **KW)
    rep = asked.replicas[0]
    plain = (rep, rep.capacity, evaluate(rep, asked.load))
    assert not _same(_figures(plain), _figures(E._evaluated(asked)))
