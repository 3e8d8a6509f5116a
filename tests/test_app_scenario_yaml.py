"""The download link's YAML written from kept pieces (aisize.app.scenario_yaml) is ``dumps``'s text, byte for byte:
for every preset, after edits of every kind of field (numbers that change type, long and odd strings, a workload
added and removed), and where the pieces cannot be summed (a list met twice: the whole is written)."""

from __future__ import annotations

import copy

import pytest
import yaml

from aisize.app.scenario_yaml import ScenarioYaml
from aisize.scenario import ScenarioError, dumps, from_dict, preset, preset_names, to_dict


def _same(kept: ScenarioYaml, data: dict, before: dict | None = None) -> dict:
    """Compare, where ``data`` is a valid scenario; returns it, or ``before`` where it is refused."""
    try:
        scenario = from_dict(data)
    except ScenarioError:
        assert before is not None
        return before
    assert kept.text(to_dict(scenario)) == dumps(scenario)
    return data


@pytest.mark.parametrize("name", preset_names())
def test_the_pieces_are_the_whole(name):
    kept, data = ScenarioYaml(), to_dict(preset(name))
    _same(kept, data)
    edits = [("description", "a line " * 40 + "\n\nand: a 'quoted' # part, ünïcode ✓"), ("name", "x: y")]
    for key, value in edits:
        data = _same(kept, dict(data, **{key: value}), data)
    changed = 0
    for key, value in list(data["policies"].items()):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            new = copy.deepcopy(data)
            new["policies"][key] = value + 1 if isinstance(value, int) else value * 0.9  # 3 -> 4, 0.9 -> 0.81
            changed += _same(kept, new, data) is new
            data = _same(kept, new, data)
    for k, w in enumerate(data["workloads"]):
        for key, value in (("requests_per_s", 2.0), ("prompt_tokens", 2), ("tokens_billion", 2.0), ("output_cv", 0)):
            if w.get(key) is not None:
                new = copy.deepcopy(data)
                new["workloads"][k][key] = w[key] * value if value else 0.35
                changed += _same(kept, new, data) is new
                data = _same(kept, new, data)
    assert changed >= 3
    if len(data["workloads"]) > 1:
        _same(kept, dict(data, workloads=data["workloads"][1:]))
        _same(kept, data)


def test_a_list_met_twice_is_written_whole():
    fields = {"a": [1, 2], "b": {"c": "d"}}
    fields["e"] = fields["a"]  # PyYAML: an anchor and an alias
    assert ScenarioYaml().text(fields) == yaml.dump(fields, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                                                    sort_keys=False, allow_unicode=True)
    assert "&id" in ScenarioYaml().text(fields)


def test_a_number_of_another_type_is_written_again():
    kept = ScenarioYaml()
    assert "x: 1\n" in kept.text({"x": 1, "workloads": [{"y": 2}]})
    assert kept.text({"x": 1.0, "workloads": [{"y": True}]}) == "x: 1.0\nworkloads:\n- y: true\n"
