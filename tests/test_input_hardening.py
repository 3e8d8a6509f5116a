"""Inputs an outsider would try (issue 14): each is refused with a message naming the user's field.

Integers of thousands of digits, keys given twice, subnormal numbers, values the schema once
accepted but the planner could not handle, and combinations that ask for more than the
formulas accept: the scenario loader, the planner, the CLI and the app's upload all answer
with the field path (and line, for files), never a Python traceback or an internal name.
"""

from __future__ import annotations

import copy
import datetime
import json
import re

import pytest
import yaml

from aisize import scenario as sc
from aisize.app import build_app
from aisize.cli import main
from aisize.plan import plan
from aisize.present.findings import finding_text

LONG = "9" * 5000  # past Python's 4,300-digit limit for int(str)
MODIFIED = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def preset_text(name="xe9680-genai") -> str:
    return sc.dumps(sc.preset(name))


def data(name="xe9680-genai") -> dict:
    return sc.to_dict(sc.preset(name))


def refused(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# --- integers too long to convert ---------------------------------------------------------------

def test_a_long_integer_in_yaml_is_named_with_its_line():
    text = preset_text().replace("switch_radix: 64", f"switch_radix: {LONG}")
    line = text[:text.index(LONG)].count("\n") + 1
    with pytest.raises(sc.ScenarioError, match=rf"hardware\.switch_radix \(line {line}\): an integer of 5000 digits"):
        sc.loads(text)


def test_a_long_integer_in_json_is_named():
    text = json.dumps(data()).replace('"switch_radix": 64', f'"switch_radix": {LONG}')
    with pytest.raises(sc.ScenarioError, match=r"hardware\.switch_radix: an integer of 5000 digits"):
        sc.loads(text, fmt="json")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_the_cli_names_the_long_integer_not_pythons_advice(tmp_path, capsys, suffix):
    path = tmp_path / f"s{suffix}"
    d = data()
    d["workloads"][2]["prompt_tokens"] = 1
    text = json.dumps(d) if suffix == ".json" else yaml.safe_dump(d)
    path.write_text(text.replace("prompt_tokens: 1\n", f"prompt_tokens: {LONG}\n")
                    .replace('"prompt_tokens": 1,', f'"prompt_tokens": {LONG},'))
    err = refused(capsys, ["size", str(path)])
    assert "workloads.2.prompt_tokens" in err and "set_int_max_str_digits" not in err


@pytest.fixture
def app():
    return build_app(display=False)


def upload(app, text: str, name="mine.yaml") -> None:
    content = text.encode()
    app.upload.value = ({"name": name, "type": "", "size": len(content), "content": memoryview(content),
                         "last_modified": MODIFIED},)


@pytest.mark.parametrize("bad, field", [
    (("switch_radix: 64", f"switch_radix: {LONG}"), "hardware.switch_radix"),
    (("restart_minutes: 10.0", "restart_minutes: 5.0e-324"), "policies.restart_minutes"),  # subnormal
    (("mfu: 0.4", "mfu: 5.0e-324"), "policies.mfu"),
])
def test_the_app_names_the_field_of_a_bad_upload(app, bad, field):
    before = copy.deepcopy(app.state.data)
    upload(app, preset_text().replace(*bad))  # raised an uncaught ValueError before: the page showed nothing
    assert "aisize-error" in app.status.value and field in app.status.value
    assert "Traceback" not in app.status.value and app.state.data == before


# --- keys given twice ----------------------------------------------------------------------------

def test_a_key_given_twice_in_yaml_is_refused_with_both_lines():
    text = preset_text().replace("  mfu: 0.4\n", "  mfu: 0.4\n  mfu: 0.05\n")
    first = text[:text.index("mfu: 0.4")].count("\n") + 1
    with pytest.raises(sc.ScenarioError, match=rf"policies\.mfu: key mfu is given twice \(lines {first} and "
                                               rf"{first + 1}\)"):
        sc.loads(text)


def test_a_key_given_twice_inside_a_workload_is_refused():
    text = preset_text().replace("  tokens_billion: 0.5\n", "  tokens_billion: 0.5\n  tokens_billion: 500\n")
    with pytest.raises(sc.ScenarioError, match=r"workloads\.0\.tokens_billion: key tokens_billion is given twice"):
        sc.loads(text)


def test_a_key_given_twice_in_json_is_refused():
    text = json.dumps(data(), indent=1).replace('"mfu": 0.4', '"mfu": 0.4,\n  "mfu": 0.05')
    with pytest.raises(sc.ScenarioError, match=r"key mfu is given twice in one object \(lines \d+, \d+\)"):
        sc.loads(text, fmt="json")


def test_yaml_merge_keys_still_work():
    text = ("name: merged\nbase: &b {kind: data-prep, name: prep, read_gb_per_s: 1, write_gb_per_s: 1}\n"
            "workloads:\n  - <<: *b\n")
    with pytest.raises(sc.ScenarioError, match=r"^invalid scenario:\n  base: unknown key"):
        sc.loads(text)  # only the extra 'base' key is wrong: the merge itself is accepted


# --- values the planner cannot handle: refused by range, naming the field -----------------------

@pytest.mark.parametrize("preset_name, path, value, message", [
    ("xe9680-genai", ("policies", "mfu"), 5e-324, r"policies\.mfu: 5e-324 is a subnormal number"),
    ("xe9680-genai", ("policies", "mfu"), 1e-9, r"policies\.mfu: Input should be greater than or equal to 0\.01"),
    ("xe9680-genai", ("workloads", 0, "target_days"), 5e-324, r"workloads\.0\.target_days: 5e-324 is a subnormal"),
    ("xe9680-genai", ("workloads", 0, "target_days"), 1e-300, r"workloads\.0\.training\.target_days: Input should "
                                                              r"be greater than or equal to 0\.01"),
    ("io-blender", ("workloads", 0, "io_size_kib"), 5e-324, r"workloads\.0\.io_size_kib: 5e-324 is a subnormal"),
    ("io-blender", ("workloads", 0, "io_size_kib"), 1e-6, r"workloads\.0\.data-prep\.io_size_kib: Input should be "
                                                          r"greater than or equal to 0\.5"),
    ("io-blender", ("policies", "storage_usable_ratio"), 1e-300, r"policies\.storage_usable_ratio: Input should be "
                                                                 r"greater than or equal to 0\.05"),
    ("xe9680-genai", ("workloads", 2, "model_loads_per_hour"), 1e-300, r"model_loads_per_hour=1e-300 is not "
                                                                       r"allowed: use 0 \(never\) or 0\.001 to 3600"),
    ("xe9680-genai", ("workloads", 2, "tpot_target_ms"), 1e-9, r"workloads\.2\.inference\.tpot_target_ms"),
    ("xe9680-genai", ("policies", "checkpoint_bytes_per_param"), 1e-9, r"policies\.checkpoint_bytes_per_param"),
    ("xe9680-genai", ("hardware", "switch_radix"), 7, r"hardware\.switch_radix: Input should be a multiple of 2"),
    ("xe9680-genai", ("workloads", 2, "tensor_parallel"), 10**6, r"workloads\.2\.inference\.tensor_parallel"),
])
def test_values_the_planner_cannot_handle_are_refused_by_range(preset_name, path, value, message):
    d = data(preset_name)
    node = d
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(sc.ScenarioError, match=message):
        sc.from_dict(d)


def test_sweep_bounds_beyond_any_field_exit_2(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(preset_text())
    err = refused(capsys, ["sweep", str(path), "--vary", "workloads.0.seq_len=1:99999999999999999999999:3"])
    assert "LO and HI must be numbers from -1e15 to 1e15" in err  # was a numpy casting traceback
    err = refused(capsys, ["sweep", str(path), "--vary", "workloads.0.seq_len=1:8:100000000000000000000"])
    assert "N a whole number from 1 to 1000" in err


# --- what the inputs ask for is too much: the error names the workload and its fields -----------

def planning_error(edit, name="xe9680-genai") -> str:
    d = data(name)
    edit(d)
    with pytest.raises(ValueError) as info:
        plan(sc.from_dict(d))
    return str(info.value)


def test_too_many_gpus_names_the_workload_and_its_fields_not_ranks():
    text = planning_error(lambda d: d["workloads"][0].update(tokens_billion=1e6))
    assert re.match(r"workloads\.0 \('LoRA fine-tune 70B'\): needs [\d,]{11,} GPUs, more than aisize plans", text)
    assert "tokens_billion" in text and "policies.mfu" in text and "ranks=" not in text


def test_too_big_a_fabric_names_the_switch_radix_not_endpoints():
    def edit(d):
        d["workloads"][0].update(gpus=100_000, target_days=None)

    text = planning_error(edit, "littles-law")
    assert re.match(r"workloads\.0 \('GoogLeNet \(Inception v1\) training'\): needs [\d,]+ network ports", text)
    assert "hardware.switch_radix" in text
    assert "endpoints=" not in text and "np.float64" not in text


def test_too_many_servers_for_a_service_names_its_fields():
    text = planning_error(lambda d: d["workloads"][2].update(requests_per_s=1e6))
    assert re.match(r"workloads\.2 \('Chat assistant 8B'\): needs [\d,]{9,} servers, more than aisize plans", text)
    assert "requests_per_s" in text and "servers=" not in text


def test_workloads_that_fit_alone_but_not_together_blame_the_shared_fabric():
    def edit(d):
        job = d["workloads"][0]
        d["workloads"] = [dict(job, name="a", gpus=50_000, target_days=None),
                          dict(job, name="b", gpus=50_000, target_days=None)]

    text = planning_error(edit, "littles-law")
    assert text.startswith("the workloads together exceed the shared fabric or storage")
    assert "hardware.switch_radix" in text and "endpoints=" not in text


def test_the_cli_prints_the_translated_error(tmp_path, capsys):
    d = data()
    d["workloads"][0]["tokens_billion"] = 1e6
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(d))
    err = refused(capsys, ["size", str(path)])
    assert "workloads.0 ('LoRA fine-tune 70B'): needs" in err and "ranks=" not in err


def test_the_app_shows_the_translated_error(app):
    before = copy.deepcopy(app.state.data)
    message = app.state.set(("workloads", 0, "tokens_billion"), 1e6)
    assert message.startswith("workloads.0 ('LoRA fine-tune 70B'): needs") and "ranks=" not in message
    assert app.state.data == before


# --- capacity is reported for every storage kind ------------------------------------------------

@pytest.mark.parametrize("storage", ["chassis-4u-15gbs", "hpe-weka-flash"])
def test_storage_without_a_capacity_figure_says_so_with_the_need(storage):
    d = data("io-blender")
    d["hardware"]["storage"] = storage
    d["policies"]["storage_usable_ratio"] = 0.05
    p = plan(sc.from_dict(d))
    raw = p.storage.capacity_bytes["raw_bytes"]
    assert raw == pytest.approx(p.storage.capacity_bytes["usable_bytes"] / 0.05)
    found = [f for f in p.findings if "publishes no capacity" in finding_text(f)]
    assert len(found) == 1 and found[0].severity == "warning"
    assert f"storage {storage} publishes no capacity" in finding_text(found[0])
    assert "storage_usable_ratio 0.05" in finding_text(found[0])


def test_storage_guidance_buys_a_system_that_publishes_its_capacity():
    # a SuperPOD guidance row names a performance level; the plan buys a catalog system (issue 49.1), whose
    # capacity is published, so no "publishes no capacity" warning
    d = data("io-blender")
    d["hardware"]["storage"] = "superpod-h100-better"
    p = plan(sc.from_dict(d))
    assert p.storage.system != "superpod-h100-better" and p.storage.supply_capacity_bytes
    assert not [f for f in p.findings if "publishes no capacity" in finding_text(f)]


def test_storage_with_a_capacity_figure_counts_it_in_the_units():
    d = data("io-blender")
    d["hardware"]["storage"] = "nvme-gen4"
    d["policies"]["storage_usable_ratio"] = 0.05
    p = plan(sc.from_dict(d))
    assert not [f for f in p.findings if "publishes no capacity" in finding_text(f)]
    assert p.storage.units_by["capacity"] * 7.68e12 >= p.storage.capacity_bytes["raw_bytes"]


def test_array_checks_take_the_fast_path_without_changing_what_they_accept_or_return():
    # aisize.checks tests a float64 array by its min and max (NaN propagates through both); what
    # it refuses, names and returns must be what the element-wise test gave
    import numpy as np

    from aisize import checks

    ok = np.array([0.5, 2.0, 3.0])
    assert checks.number("x", ok, low=0.0) is ok  # a float64 array passes through as given
    as32 = checks.number("x", ok.astype(np.float32), low=0.0)
    assert as32.dtype == np.float64  # other dtypes are still converted to float64
    assert checks.number("x", np.array([1, 2]), low=0.0).dtype == np.float64
    for bad, shown in ((np.array([1.0, np.nan]), "nan"), (np.array([1.0, np.inf]), "inf"),
                       (np.array([2.0, -1.0]), "-1.0")):
        with pytest.raises(ValueError, match=rf"x=np\.float64\({shown}\) is not allowed: must be a finite number"):
            checks.number("x", bad, low=0.0)
    with pytest.raises(ValueError, match=r"x=array\(-1\.\) is not allowed"):  # a 0-d array, shown as given
        checks.number("x", np.asarray(-1.0), low=0.0)
    with pytest.raises(ValueError, match=r"x=np\.float64\(0\.0\).*in \(0, 1\]"):
        checks.fraction("x", np.array([0.5, 0.0]))
    assert checks.fraction("x", np.array([0.0, 1.0]), allow_zero=True).tolist() == [0.0, 1.0]
    whole = checks.integer("n", np.array([1.0, 8.0]))
    assert whole.dtype == np.int64 and whole.tolist() == [1, 8]
    assert checks.integer("n", np.asarray(3.0)) == 3 and type(checks.integer("n", np.asarray(3.0))) is int
    with pytest.raises(ValueError, match=r"n=np\.float64\(2\.5\) is not allowed: must be a whole number"):
        checks.integer("n", np.array([1.0, 2.5]))
