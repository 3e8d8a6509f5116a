"""A scenario's model as {hf_config: path} or inline fields, and its own accelerators, servers and
storage systems: validation, save/reload, and a plan on them."""

from __future__ import annotations

import copy
import json

import pytest

from aisize import models
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.scenario import ScenarioError, dumps, from_dict, loads
from custom_scenario import GPU, SERVER, STORE
from hf_configs import QWEN2_5_7B


@pytest.fixture
def data(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(QWEN2_5_7B))
    return {"name": "custom", "hardware": {"server": "site-server", "storage": "site-store", "accelerators": [GPU],
                                           "servers": [SERVER], "storage_systems": [STORE]},
            "workloads": [{"kind": "training", "name": "ft", "model": {"hf_config": str(tmp_path)},
                           "tokens_billion": 1, "gpus": 16},
                          {"kind": "inference", "name": "svc", "model": "llama-3-8b", "requests_per_s": 1}]}


def test_hf_model_and_custom_hardware_plan_save_and_reload(data, tmp_path):
    s = from_dict(data, read_model_files=True)  # as `load` reads a scenario file given to the command line
    assert models.params(s.workloads[0].model).total == 7_615_616_512
    assert s.hardware.gpu == "site-gpu"
    text = dumps(s)
    (tmp_path / "config.json").unlink()  # the saved scenario embeds the config: it stands alone
    again = loads(text)
    assert again == s and models.resolve(again.workloads[0].model).id == tmp_path.name
    p = plan(again)
    assert json.loads(to_json(p))
    assert (p.server, p.accelerator, p.storage_system) == ("site-server", "site-gpu", "site-store")
    assert p.gpus >= 16 and p.power_watts == p.servers * 8e3  # the inline server's 8 kW


def test_inline_model_fields(data):
    data["workloads"][0]["model"] = dict(id="our-7b", layers=32, hidden=4096, heads=32, vocab=32000,
                                         ffn_hidden=11008, max_seq=4096, source="design doc v3")
    assert models.params(from_dict(data).workloads[0].model).total == 6_738_415_616


@pytest.mark.parametrize("change, message", [
    (lambda d: d["hardware"]["servers"][0].update(power="lots"), r"servers\[0\], column 'power \[kW\]'"),
    (lambda d: d["hardware"]["accelerators"][0].pop("source"), r"accelerators.0.source: Field required"),
    (lambda d: d["hardware"].update(server="nope"), "server 'nope' is neither in the catalog nor"),
    (lambda d: d["hardware"]["servers"][0].update(accelerator="ghost"), r"servers\[site-server\].accelerator"),
    (lambda d: d["workloads"][0].update(model={"hf_config": "/nowhere/config.json"}), "local files only"),
    (lambda d: d["workloads"][0].update(model={"id": "x", "layers": 2, "source": "s"}), "are missing"),
])
def test_bad_custom_entries_name_the_field(data, change, message):
    bad = copy.deepcopy(data)
    change(bad)
    with pytest.raises(ScenarioError, match=message):
        from_dict(bad, read_model_files=True)
