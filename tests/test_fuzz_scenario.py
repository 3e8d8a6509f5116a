"""Property fuzz (hypothesis) of scenario loading and planning (issue 10, "bad input everywhere").

Mutations of every preset (a key dropped or added, a leaf set to a wrong-typed or out-of-range
value, deep nesting, huge or unicode strings) either validate into a Scenario that round-trips,
or raise ScenarioError (a ValueError) naming the field. Random text and bytes, YAML bombs,
``!!python`` tags and huge files are refused quickly with ScenarioError. A valid scenario's plan
has finite, non-negative figures (inf only where flagged), or planning raises ValueError.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd
import pytest
from fuzz_profiles import examples
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from aisize import scenario as sc
from aisize.plan import plan
from aisize.scenario.io import MAX_FILE_BYTES

SETTINGS = settings(max_examples=examples(40))
PRESETS = {name: sc.to_dict(sc.preset(name)) for name in sc.preset_names()}


def _paths(obj, prefix=()):
    """Every path to a value (dict key or list index) in a nested dict/list."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from _paths(value, prefix + (key,))


def _parent(data, path):
    for key in path[:-1]:
        data = data[key]
    return data


WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.just(1e300), st.just(-1.0), st.just(0), st.text(max_size=20), st.just("x" * 100_000),
    st.just("ünïcødé ✓ 名前 \u202e"), st.just([]), st.just({}), st.just([1, "a", None]),
    st.just({"nested": {"deeper": [1, 2]}}), st.sampled_from(["auto", "bf16", "dgx-h100", "full", "1e3"]),
)


def _deep(levels):
    value = 1
    for _ in range(levels):
        value = {"a": [value]}
    return value


@st.composite
def mutated(draw):
    """(preset dict mutated once, the path mutated, what was done)."""
    name = draw(st.sampled_from(sorted(PRESETS)))
    data = copy.deepcopy(PRESETS[name])
    paths = list(_paths(data))
    path = draw(st.sampled_from(paths))
    parent = _parent(data, path)
    action = draw(st.sampled_from(["drop", "add", "set", "set", "set", "nest"]))
    if action == "drop":
        del parent[path[-1]]
    elif action == "add":
        target = parent[path[-1]] if isinstance(parent[path[-1]], dict) else parent
        key = draw(st.sampled_from(["learning_rate", "mfuu", "", "ünï", "__class__", "x" * 300]))
        assume(key not in target)
        target[key] = draw(WRONG)
        path = path if target is not parent else path[:-1]
        path = path + (key,)
    elif action == "set":
        parent[path[-1]] = draw(WRONG)
    else:
        parent[path[-1]] = _deep(draw(st.integers(5, 400)))
    return data, path, action


def _named(message: str, path) -> bool:
    """The message names the mutated field: its last key, or (for list items) the list's key."""
    keys = [str(k) for k in path if isinstance(k, str)]
    return any((k and k in message) or repr(k[:80]) in message for k in keys[-1:]) or "nested deeper" in message


def _long_kind():
    """Found by the nightly profile: the discriminator's error quoted all 100,000 characters of a bad kind."""
    data = copy.deepcopy(PRESETS["io-blender"])
    data["workloads"][3]["kind"] = "x" * 100_000
    return data, ("workloads", 3, "kind"), "set"


@SETTINGS
@example(_long_kind())
@given(mutated())
def test_mutated_preset_validates_and_round_trips_or_names_the_field(case):
    data, path, action = case
    try:
        scenario = sc.from_dict(data)
    except sc.ScenarioError as exc:
        message = str(exc)
        assert "Traceback" not in message
        assert len(message) < 5000, f"message is {len(message)} characters"
        assert _named(message, path), f"{action} {path}: {message}"
        return
    assert sc.from_dict(sc.to_dict(scenario)) == scenario
    assert sc.loads(sc.dumps(scenario)) == scenario
    assert sc.loads(sc.dumps(scenario, fmt="json"), fmt="json") == scenario


@pytest.mark.parametrize("value", [1e300, float("nan"), float("inf"), -1.0, 0, True, "1", None, [1], {}])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_numeric_leaf_rejects_absurd_values_by_path(name, value):
    """Each number of each preset set to an absurd value: refused naming that field (or, rarely, valid)."""
    data = PRESETS[name]
    for path in _paths(data):
        leaf = _parent(data, path)[path[-1]]
        if isinstance(leaf, bool) or not isinstance(leaf, (int, float)):
            continue
        mutated_data = copy.deepcopy(data)
        _parent(mutated_data, path)[path[-1]] = value
        try:
            sc.from_dict(mutated_data)
        except sc.ScenarioError as exc:
            assert _named(str(exc), path), f"{path}={value!r}: {exc}"
            continue
        # 0 is in range for some fields, None means "not given" for optional ones, and "1" is a number
        assert value is not True and (value in (0, None, "1")), f"{path}={value!r} was accepted"


@settings(max_examples=examples(60))
@given(st.one_of(st.text(max_size=400), st.binary(max_size=400).map(lambda b: b.decode("latin-1"))),
       st.sampled_from(["yaml", "json"]))
def test_random_text_raises_only_scenario_error(text, fmt):
    try:
        sc.loads(text, fmt=fmt)
    except sc.ScenarioError:
        pass


def _laughs(levels: int, width: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + f"\nname: x\nworkloads: *a{levels - 1}\n"


@pytest.mark.parametrize("text, expected", [
    (_laughs(10), "expands to more than"),  # "billion laughs": 9^10 values from 1 kB
    (_laughs(30, 2), "expands to more than"),  # 2^30 by a long, thin chain
    ("a: &x [*x]\n", "expands to more than"),  # an alias to itself
    ("!!python/object/apply:os.system ['echo pwned']\n", "not valid YAML"),
    ("name: !!python/name:os.system x\n", "not valid YAML"),
    ("name: x\nworkloads: [{kind: !!python/object:builtins.dict {}}]\n", "not valid YAML"),
    ("[" * 100_000, "not valid YAML"),
    ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 200)), "nested deeper"),
    ("---\nname: a\n---\nname: b\n", "not valid YAML"),
    ("name: x\nworkloads:\n  - {kind: training, name: t, model: llama-3-70b, tokens_billion: .nan, gpus: 8}\n",
     "tokens_billion"),
])
def test_hostile_yaml_is_refused_quickly(text, expected, monkeypatch):
    # counted, not timed: the node graph is measured at most once per node (memoized), never expanded, and a
    # graph that expands too far is never built into Python objects; expanding the laughs visits 9^10 nodes
    from aisize.scenario import io

    visits, built = [0], [0]
    measure, construct = io._expanded_size, io.yaml.SafeLoader.construct_document

    def counted(*args):
        visits[0] += 1
        return measure(*args)

    def constructed(loader, node):
        built[0] += 1
        return construct(loader, node)

    monkeypatch.setattr(io, "_expanded_size", counted)
    monkeypatch.setattr(io.yaml.SafeLoader, "construct_document", constructed)
    with pytest.raises(sc.ScenarioError, match=expected):
        sc.loads(text)
    assert visits[0] <= len(text)
    if expected in ("expands to more than", "nested deeper"):
        assert built[0] == 0


def test_huge_and_deep_inputs_are_refused(tmp_path):
    with pytest.raises(sc.ScenarioError, match="larger than"):
        sc.loads("#" * (MAX_FILE_BYTES + 1))
    big = tmp_path / "big.yaml"
    big.write_text("name: x\n" + "#" * MAX_FILE_BYTES)
    with pytest.raises(sc.ScenarioError, match="at most"):
        sc.load(big)
    with pytest.raises(sc.ScenarioError, match="not valid JSON"):
        sc.loads("[" * 100_000, fmt="json")
    data = copy.deepcopy(PRESETS[sc.DEFAULT_PRESET])
    data["description"] = _deep(100)
    with pytest.raises(sc.ScenarioError, match="nested deeper"):
        sc.from_dict(data)
    undecodable = tmp_path / "bin.yaml"
    undecodable.write_bytes(b"\xff\xfe\x00name: x")
    with pytest.raises(sc.ScenarioError, match="cannot be read"):
        sc.load(undecodable)


def test_a_rejected_value_is_quoted_briefly():
    data = copy.deepcopy(PRESETS[sc.DEFAULT_PRESET])
    data["name"] = "x" * 100_000
    with pytest.raises(sc.ScenarioError, match=r"^invalid scenario:\n  name: ") as info:
        sc.from_dict(data)
    assert len(str(info.value)) < 500


# ---- planning valid mutations ----

def _flagged(obj) -> bool:
    """The object says its figures are unbounded: an unstable queue, an infeasible size, or a
    training job whose goodput is 0 (failures outpace checkpoints: it never finishes), or storage
    loaded at or past its IOPS (io_utilisation >= 1: the queue has no steady state)."""
    return (getattr(obj, "stable", True) is False or getattr(obj, "feasible", True) is False
            or getattr(obj, "goodput", 1.0) == 0 or np.any(getattr(obj, "io_utilisation", 0.0) >= 1))


def _numbers(obj, path="plan", flagged=False, seen=None):
    """(path, value, flagged) for every number reachable in a plan."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, (str, bytes, sc.Scenario)):
        return
    seen.add(id(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        flagged = flagged or _flagged(obj)
        for f in dataclasses.fields(obj):
            yield from _numbers(getattr(obj, f.name), f"{path}.{f.name}", flagged, seen)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}", flagged, seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}.{i}", flagged, seen)
    elif isinstance(obj, pd.DataFrame):
        for col in obj.select_dtypes("number").columns:
            yield f"{path}[{col}]", obj[col].to_numpy(dtype=float), flagged
    elif isinstance(obj, (int, float, np.number, np.ndarray)) and not isinstance(obj, (bool, np.bool_)):
        arr = np.asarray(obj)
        if arr.dtype.kind in "fiu":
            yield path, arr.astype(float), flagged


# Plan figures that are signed by design (a shortfall or a margin).
SIGNED = ("headroom", "free", "margin", "slack", "delta", "change", "elasticity")


def assert_plan_sane(p):
    for path, arr, flagged in _numbers(p):
        assert not np.any(np.isnan(arr)), f"{path} is NaN"
        if not any(word in path.rsplit(".", 1)[-1] for word in SIGNED):
            assert np.all(arr >= 0), f"{path} is negative: {arr}"
        assert flagged or not np.any(np.isinf(arr)), f"{path} is inf, and nothing says it is unbounded"


@st.composite
def valid_mutation(draw):
    """A preset with one number scaled or one choice swapped, kept only if it still validates."""
    name = draw(st.sampled_from(sorted(PRESETS)))
    data = copy.deepcopy(PRESETS[name])
    numeric = [p for p in _paths(data) if isinstance(_parent(data, p)[p[-1]], (int, float))
               and not isinstance(_parent(data, p)[p[-1]], bool)]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(numeric))
        old = _parent(data, path)[path[-1]]
        factor = draw(st.sampled_from([1e-3, 0.1, 0.5, 2.0, 10.0, 1e3]))
        _parent(data, path)[path[-1]] = type(old)(max(1, round(old * factor))) if isinstance(old, int) \
            else old * factor
    try:
        return sc.from_dict(data)
    except sc.ScenarioError:
        assume(False)


@settings(max_examples=examples(30), suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(valid_mutation())
def test_plan_of_a_valid_mutation_is_sane_or_a_value_error(scenario):
    try:
        p = plan(scenario)
    except ValueError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return
    assert_plan_sane(p)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_plans_are_sane(name):
    assert_plan_sane(plan(sc.preset(name)))


def test_loading_never_executes_anything(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    text = f"!!python/object/apply:os.system ['touch {marker}']\n"
    with pytest.raises(sc.ScenarioError):
        sc.loads(text)
    assert not marker.exists()
