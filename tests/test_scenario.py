"""Scenario schema: round trips, clear errors with field paths, safe loading."""

import json

import pytest

from aisize import scenario as sc
from aisize.cli import main


@pytest.mark.parametrize("name", sc.preset_names())
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_every_preset_round_trips(name, fmt):
    original = sc.preset(name)
    again = sc.loads(sc.dumps(original, fmt=fmt), fmt=fmt)
    assert again == original


def test_presets_include_the_seed_cases_and_the_default():
    names = sc.preset_names()
    assert sc.DEFAULT_PRESET in names
    assert {"hpe-weka-resnet", "xe9680-genai", "io-blender", "littles-law",
            "llama3-70b-pretrain"} <= set(names)


def _base():
    return sc.to_dict(sc.preset(sc.DEFAULT_PRESET))


def test_unknown_key_names_its_path():
    data = _base()
    data["workloads"][0]["learning_rate"] = 3e-4
    with pytest.raises(sc.ScenarioError, match=r"workloads\.0\.training\.learning_rate: unknown key"):
        sc.from_dict(data)


def test_unknown_catalog_id_lists_allowed_values():
    data = _base()
    data["hardware"]["server"] = "dgx-h9000"
    with pytest.raises(sc.ScenarioError, match=r"hardware: server 'dgx-h9000'.*allowed: .*dgx-h100"):
        sc.from_dict(data)


def test_out_of_range_and_wrong_type_are_rejected():
    data = _base()
    data["policies"]["mfu"] = 1.5
    with pytest.raises(sc.ScenarioError, match=r"policies\.mfu: .*less than or equal to 0\.9"):
        sc.from_dict(data)
    data = _base()
    data["workloads"][0]["tokens_billion"] = "lots"
    with pytest.raises(sc.ScenarioError, match=r"workloads\.0\.training\.tokens_billion"):
        sc.from_dict(data)


def test_nan_and_inf_are_rejected():
    data = _base()
    data["policies"]["node_mtbf_hours"] = float("nan")
    with pytest.raises(sc.ScenarioError, match=r"policies\.node_mtbf_hours"):
        sc.from_dict(data)
    data["policies"]["node_mtbf_hours"] = float("inf")
    with pytest.raises(sc.ScenarioError, match=r"policies\.node_mtbf_hours"):
        sc.from_dict(data)


def test_training_needs_exactly_one_of_days_and_gpus():
    data = _base()
    data["workloads"][0]["gpus"] = 8
    with pytest.raises(sc.ScenarioError, match="exactly one of target_days and gpus"):
        sc.from_dict(data)


def test_duplicate_workload_names_are_rejected():
    data = _base()
    data["workloads"].append(dict(data["workloads"][0]))
    with pytest.raises(sc.ScenarioError, match="unique"):
        sc.from_dict(data)


def test_wrong_schema_version_is_rejected():
    data = _base()
    data["schema_version"] = 2
    with pytest.raises(sc.ScenarioError, match="schema_version: 2 is not supported"):
        sc.from_dict(data)


@pytest.mark.parametrize("text,match", [
    ("workloads: [", "not valid YAML"),
    ("- just\n- a list\n", "must be a mapping"),
    ("!!python/object/apply:os.system ['touch /tmp/aisize-pwned']", "not valid YAML"),
])
def test_malformed_or_unsafe_yaml_is_rejected(text, match, tmp_path):
    with pytest.raises(sc.ScenarioError, match=match):
        sc.loads(text)


def test_deeply_nested_and_huge_input_are_rejected():
    nested = {"name": "x", "workloads": []}
    node = nested
    for _ in range(50):
        node["description"] = {}
        node = node["description"]
    with pytest.raises(sc.ScenarioError, match="nested deeper"):
        sc.from_dict(nested)
    with pytest.raises(sc.ScenarioError, match="larger than"):
        sc.loads("name: x\n" + "#" * 2_000_000)


def test_cli_preset_writes_a_loadable_file(tmp_path, capsys):
    assert main(["preset", sc.DEFAULT_PRESET]) == 0
    text = capsys.readouterr().out
    assert sc.loads(text) == sc.preset(sc.DEFAULT_PRESET)
    assert main(["preset", sc.DEFAULT_PRESET, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == sc.preset(sc.DEFAULT_PRESET).name


def test_cli_unknown_preset_exits_2_without_traceback(capsys):
    assert main(["preset", "nope"]) == 2
    err = capsys.readouterr().err
    assert "preset 'nope' does not exist" in err and "Traceback" not in err
