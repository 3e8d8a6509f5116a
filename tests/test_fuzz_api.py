"""Property fuzz (hypothesis) of the engine's public formulas (issue 10, "bad input everywhere").

(a) Valid inputs, scalars or arrays drawn from sensible ranges, give outputs that are finite and
non-negative, or inf only where the result carries a ``stable``/``feasible`` flag that is False.
(b) One parameter replaced by a bad value (negative, NaN, inf, None, text, bool, nested list, 1e300,
an unknown name) raises ValueError, and only ValueError, whose message names that parameter.
Zero is tried too: it may be allowed, but then the outputs must still be finite and non-negative.
The functions and their valid ranges are the table in tests/fuzz_api_cases.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re

import numpy as np
import pytest
from fuzz_api_cases import (CASES, DOCUMENTED_INF, EXTRA, FOUND, NONE_ALLOWED, SCALAR_ONLY, SIGNED_FIELDS,
                            Choice, Flag)
from fuzz_profiles import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

def _is_array_ok(case, name):
    return name not in SCALAR_ONLY.get(case, ())


@st.composite
def valid_kwargs(draw, case, *, arrays=True):
    _, spec = CASES[case]
    size = draw(st.sampled_from([None, 3])) if arrays else None
    kwargs = {}
    for name, kind in spec.items():
        if isinstance(kind, Choice):
            kwargs[name] = draw(st.sampled_from(kind.allowed))
        elif isinstance(kind, Flag):
            kwargs[name] = draw(st.booleans())
        elif size and _is_array_ok(case, name) and draw(st.booleans()):
            kwargs[name] = np.array(draw(st.lists(kind, min_size=size, max_size=size)))
        else:
            kwargs[name] = draw(kind)
    kwargs.update(EXTRA.get(case, {}))
    return kwargs


def _leaves(result, prefix=""):
    """(field path, value, flag) for every numeric leaf; flag: where the result says it is unstable."""
    if dataclasses.is_dataclass(result):
        flag = None
        for key in ("stable", "feasible"):  # both, where a result has both (feasible and stable)
            if hasattr(result, key):
                value = np.asarray(getattr(result, key), dtype=bool)
                flag = value if flag is None else flag & value
        for f in dataclasses.fields(result):
            for path, value, inner in _leaves(getattr(result, f.name), f"{prefix}{f.name}."):
                yield path, value, inner if inner is not None else flag
    elif isinstance(result, dict):
        for k, v in result.items():
            yield from _leaves(v, f"{prefix}{k}.")
    elif isinstance(result, (tuple, list)) and not isinstance(result, str):
        for i, v in enumerate(result):
            yield from _leaves(v, f"{prefix}{i}.")
    elif isinstance(result, (int, float, np.number, np.ndarray)) and not isinstance(result, (bool, np.bool_)):
        arr = np.asarray(result)
        if arr.dtype.kind in "fiu":
            yield prefix.rstrip(".") or "result", arr, None


def assert_sane(case, result):
    for path, arr, stable in _leaves(result):
        assert not np.any(np.isnan(arr)), f"{case}: {path} is NaN: {arr}"
        if path.split(".")[-1] not in SIGNED_FIELDS:
            assert np.all(arr >= 0), f"{case}: {path} is negative: {arr}"
        inf = np.isinf(arr)
        if path in DOCUMENTED_INF.get(case, ()):
            continue  # inf by design: see DOCUMENTED_INF
        if np.any(inf):
            assert stable is not None, f"{case}: {path} is inf without a stable/feasible flag: {arr}"
            assert not np.any(inf & np.broadcast_to(stable, inf.shape)), \
                f"{case}: {path} is inf where the result says stable/feasible: {arr}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_valid_inputs_give_finite_non_negative_outputs(case):
    fn, _ = CASES[case]

    @settings(max_examples=examples(25))
    @given(valid_kwargs(case))
    def run(kwargs):
        result = fn(**kwargs)
        assert_sane(case, result)

    for found in FOUND.get(case, ()):  # failures fuzzing found once: replayed on every run
        run = example({**found, **EXTRA.get(case, {})})(run)
    run()


# A 2-D array is a valid vectorized input; a ragged list is not.
NUMBER_BAD = [-1.0, -1e-9, math.nan, math.inf, -math.inf, None, "12", True, [[1.0], [1.0, 2.0]], [1.0, "x"],
              1e300, [], {"a": 1}, np.array([1.0, math.nan]), 1 + 2j]
SCALAR_BAD = [[1.0, 2.0], np.array([3.0, 4.0])]  # for parameters that take one number only
CHOICE_BAD = ["nope", "", None, 3, ["bf16"], True]
FLAG_BAD = ["yes", "false", 2, None, math.nan, [True]]


def _bad_values(case, name, kind):
    if isinstance(kind, Choice):
        return CHOICE_BAD
    if isinstance(kind, Flag):
        return FLAG_BAD
    bad = NUMBER_BAD + ([] if _is_array_ok(case, name) else SCALAR_BAD)
    if _default(CASES[case][0], name) is None or (case, name) in NONE_ALLOWED:  # None: "not given"
        bad = [b for b in bad if b is not None]
    return bad


def _default(fn, name):
    param = inspect.signature(fn).parameters.get(name)
    return "no default" if param is None or param.default is inspect.Parameter.empty else param.default


# The wrappers above build a Station, whose fields have these names.
ALIASES = {"station_servers": "servers", "station_seconds": "service_seconds", "station_cv": "service_cv"}


def _names(exc, name):
    """The message names the parameter as a word."""
    return re.search(rf"(?<![\w.]){re.escape(ALIASES.get(name, name))}\b", str(exc)) is not None


PARAMS = [(case, name) for case, (_, spec) in sorted(CASES.items()) for name in spec]


@pytest.mark.parametrize("case, name", PARAMS, ids=[f"{c}-{n}" for c, n in PARAMS])
def test_invalid_value_raises_value_error_naming_the_parameter(case, name):
    fn, spec = CASES[case]
    kind = spec[name]
    bad_values = _bad_values(case, name, kind)

    @settings(max_examples=examples(12))
    @given(valid_kwargs(case, arrays=False), st.sampled_from(bad_values))
    def run(kwargs, bad):
        kwargs[name] = bad
        try:
            fn(**kwargs)
        except ValueError as exc:
            assert _names(exc, name), f"{case}({name}={bad!r}): {exc}"
            return
        raise AssertionError(f"{case}({name}={bad!r}) was accepted")

    run()


@pytest.mark.parametrize("case, name", [(c, n) for c, n in PARAMS
                                        if not isinstance(CASES[c][1][n], (Choice, Flag))])
def test_zero_is_rejected_by_name_or_gives_sane_outputs(case, name):
    fn, _ = CASES[case]

    @settings(max_examples=examples(5))
    @given(valid_kwargs(case, arrays=False))
    def run(kwargs):
        kwargs[name] = 0
        try:
            result = fn(**kwargs)
        except ValueError as exc:
            assert _names(exc, name), f"{case}({name}=0): {exc}"
            return
        assert_sane(case, result)

    run()



def test_the_storage_network_strategy_draws_only_fabrics_that_fit():
    """Regression: the strategy once drew 65,601 endpoints at radix 64, beyond a three-tier fat tree.
    Its bounds now make the largest fabric it can draw (the corner) fit."""
    from fuzz_api_cases import STORAGE_NETWORK_CORNER

    from aisize.network import fabric

    result = fabric.storage_network(**STORAGE_NETWORK_CORNER)
    assert result.fabric.endpoints == 1000 * 20 + 256 <= 64 * 32 * 32
    with pytest.raises(ValueError, match="endpoints=.* more than a three-tier fat tree"):
        fabric.storage_network(**{**STORAGE_NETWORK_CORNER, "efficiency": 0.15})  # the old strategy's range
