"""Serving's evaluators take values, not argument lists (issue 47, item 1).

:func:`aisize.serving.estimate` checks its keywords once into an ``Asked`` value (the replica at each shape the
search tries, the :class:`~aisize.serving.replica.Load`, the workload); the shape search and the scheduler's
simulation take a :class:`~aisize.serving.replica.Replica` and a load. Here: no evaluator grows back a long argument
list, the values reach the cores as the public keywords do, and each field of a value changes what it should.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

from aisize import serving
import aisize.serving.estimate  # noqa: F401 (the module: the package binds the function to its name)
from aisize.serving import simulate as S
from aisize.serving.replica import Load, evaluate

E = sys.modules["aisize.serving.estimate"]

SERVING = Path(__file__).resolve().parents[1] / "aisize" / "serving"
# the replica evaluators (estimate, pools, simulations); iteration.py and latency.py keep their long lists for now
EVALUATORS = ("estimate.py", "simulate.py", "simulate_reuse.py", "replica.py", "pools.py", "disaggregated.py")
# public keyword entry points: callers and ../shared/tools pass their keywords
PUBLIC = {"estimate", "estimate_disaggregated"}
MAX_PARAMETERS = 16


def _parameters(fn: ast.FunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)


def test_no_internal_evaluator_takes_a_long_argument_list():
    long = [(name, fn.name, _parameters(fn)) for name in EVALUATORS
            for fn in ast.walk(ast.parse((SERVING / name).read_text())) if isinstance(fn, ast.FunctionDef)
            and fn.name not in PUBLIC and _parameters(fn) > MAX_PARAMETERS]
    assert not long, f"functions over {MAX_PARAMETERS} parameters (take a value instead): {long}"


def test_the_cores_take_a_few_values():
    # 26 and 26 parameters before: estimate's keywords, and the replica's fields plus the run's
    assert list(inspect.signature(E._evaluated).parameters) == ["asked", "latencies"]
    assert list(inspect.signature(S.simulate).parameters) == ["rep", "load", "run"]


def _kw(**extra):
    return dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", input_tokens=1024,
                output_tokens=256, engine="vllm", **extra)


def _arguments(model, gpu, **kw):
    bound = inspect.signature(serving.estimate).bind(model, gpu, **kw)
    bound.apply_defaults()
    return bound.arguments


def test_the_asked_value_holds_the_load_and_a_replica_per_candidate_shape():
    asked = E._asked(_arguments("llama-3.1-8b", "h100-sxm", **_kw(requests_per_s=4.0, length_cv=0.3)))
    assert asked.load == Load(requests_per_s=4.0, concurrency=None, length_cv=0.3)
    assert asked.workload is None and len(asked.replicas) == 1  # a dense model at TP 1: one shape
    rep = asked.replicas[0]
    assert (rep.input_tokens, rep.output_tokens, rep.engine.key, rep.shape.tensor_parallel) == (1024, 256, "vllm", 1)
    # an MoE model over 8 GPUs: every attention-DP x EP split is a candidate, and the estimate keeps the best
    kw = dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8", input_tokens=900, output_tokens=200,
              engine="sglang", concurrency=32)
    asked = E._asked(_arguments("deepseek-r1", "b200", **kw))
    assert len(asked.replicas) > 1
    scores = [evaluate(r, asked.load).score for r in asked.replicas]
    best = asked.replicas[scores.index(max(scores))]
    est = serving.estimate("deepseek-r1", "b200", **kw)
    assert (est.attention_dp, est.expert_parallel) == (best.shape.attention_dp, best.shape.experts_over)
    assert est.requests_per_s == max(scores)


def test_a_bad_keyword_is_named_where_the_value_is_built():
    with pytest.raises(ValueError, match="requests_per_s=1.0 and concurrency=2"):
        E._asked(_arguments("llama-3.1-8b", "h100-sxm", **_kw(requests_per_s=1.0, concurrency=2)))
    with pytest.raises(ValueError, match="length_cv"):
        serving.estimate("llama-3.1-8b", "h100-sxm", **_kw(length_cv=-1.0))


def test_the_simulation_of_a_replica_and_a_load_is_its_keyword_wrapper_s():
    est = serving.estimate("llama-3.1-8b", "h100-sxm", **_kw(requests_per_s=8.0))
    rep = est.replica
    core = S.simulate(rep, Load(requests_per_s=8.0, length_cv=0.5), S.Run(requests=120, seed=5))
    assert core == S.simulate_replica(rep, requests_per_s=8.0, length_cv=0.5, requests=120, seed=5)
    assert core == S.simulate_estimate(est, requests_per_s=8.0, length_cv=0.5, requests=120, seed=5)
    # each field of the values is read: the lengths' spread, the seed, and the request's fixed time (None: the
    # calibration's, counted in every TTFT)
    assert S.simulate(rep, Load(requests_per_s=8.0), S.Run(requests=120, seed=5)) != core
    assert S.simulate(rep, Load(requests_per_s=8.0, length_cv=0.5), S.Run(requests=120, seed=6)) != core
    fixed = rep.calibration.request_seconds
    assert fixed > 0
    bare = S.simulate(rep, Load(requests_per_s=8.0, length_cv=0.5), S.Run(requests=120, seed=5, request_seconds=0.0))
    assert core.ttft_seconds - bare.ttft_seconds == pytest.approx(fixed, rel=0.05)
