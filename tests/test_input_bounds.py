"""Physical bounds where inputs enter (issue 46, finding 6): catalog rows, cost inputs and the serving
calibration are refused by their own name, and fleet errors name the field the user set.

A catalog overlay with a bandwidth of 0 or a memory of 1e30 printed numpy warnings and blamed the workload;
``life_years: 1e-9`` gave "$5.23 B per GPU-hour"; adapters and ``min_replicas`` that outgrew the plan's limits
were reported as the service's requests_per_s.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import warnings

import pytest
import yaml

from aisize import catalog
from aisize import scenario as sc
from aisize.catalog.records import RANGES, Accelerator, Link, Server, StorageSystem
from aisize.cost import capital_per_hour, load_prices
from aisize.cost.prices import _bounds as price_bounds
from aisize.plan import clear_caches, context, plan
from aisize.serving.calibration import RANGES as CALIBRATION_RANGES
from aisize.serving.calibration import SHARES, from_dict
from aisize.units import UNITS

# --- catalog rows: every hardware figure within its physical range, refused by file, line, column and id ------

ROW = {Accelerator: ("accelerators.csv", "h100-sxm"), Server: ("servers.csv", "dell-xe9680-h100"),
       Link: ("links.csv", "ib-ndr"), StorageSystem: ("storage.csv", "superpod-h100-good")}


def overlay(folder, record_type, column_stem: str, value: float) -> str:
    """An overlay folder whose CSV repeats our row of ``record_type`` with ``column_stem`` set to ``value``
    (base units), in the column's own unit. Returns the column's header."""
    filename, row_id = ROW[record_type]
    with open(catalog.data_dir() / filename, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    row = next(r for r in rows if r[0] == row_id)
    i = next(k for k, h in enumerate(header) if h == column_stem or h.startswith(column_stem + " ["))
    if "[" in header[i]:
        row[i] = repr(value / UNITS[header[i].split("[")[1].rstrip("]")].factor)
    elif f"{column_stem}_unit" in header:  # the unit in a column of its own: write the base unit there
        u = header.index(f"{column_stem}_unit")
        dimension = UNITS[row[u]].dimension
        row[i], row[u] = repr(float(value)), next(k for k, x in UNITS.items() if x.dimension == dimension
                                                   and x.factor == 1.0)
    else:
        row[i] = str(int(value)) if float(value).is_integer() else repr(value)
    folder.mkdir(exist_ok=True)
    with open(folder / filename, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header, row])
    return header[i]


def aisize(*args, env=None):
    """The command line in a process of its own, numpy warnings raised as errors (as a traceback would show)."""
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "aisize.cli", *args],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("stem, value", [("memory_bandwidth", 0.0), ("memory", 1e30), ("bf16", 0.0)])
def test_an_overlay_outside_physics_is_refused_by_its_row_not_the_workload(tmp_path, stem, value):
    header = overlay(tmp_path / "site", Accelerator, stem, value)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(sc.dumps(sc.preset("xe9680-genai")))
    for run in (aisize("--catalog", str(tmp_path / "site"), "size", str(scenario)),
                aisize("size", str(scenario), env={"AISIZE_CATALOG": str(tmp_path / "site")})):
        err = run.stderr.strip()
        assert run.returncode == 2, err[-2000:]
        assert "Warning" not in err and "Traceback" not in err and len(err.splitlines()) == 1, err[-2000:]
        assert f"accelerators.csv, line 2, column {header!r}: 'h100-sxm':" in err and "is not allowed" in err
        assert "workloads." not in err and "tokens_billion" not in err


def test_a_scenarios_own_row_outside_physics_is_refused_by_its_field():
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["hardware"]["accelerators"] = [{**{k: v for k, v in catalog_row("h100-sxm").items()}, "id": "mine",
                                      "memory_bandwidth": 0}]
    with pytest.raises(sc.ScenarioError, match=r"accelerators\[0\], column 'memory_bandwidth \[TB/s\]': 'mine': 0 is "
                                               r"not allowed: memory_bandwidth must be from 1 GB/s to 1 PB/s"):
        sc.from_dict(d)


def catalog_row(row_id: str) -> dict:
    with open(catalog.data_dir() / "accelerators.csv", newline="", encoding="utf-8") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == row_id)
    return {k.split(" [")[0]: v for k, v in row.items() if v != ""}


@pytest.fixture
def own_catalog():
    """Overlays added in-process, taken away again (the catalog's tables and the plans built on them)."""
    yield
    catalog._OVERLAYS.clear()
    for table in catalog.TABLES.values():
        table.__dict__.pop("_rows", None)
    context.resolve.cache_clear()
    clear_caches()


EXTREMES = [(Accelerator, "memory", "memory_bytes"), (Accelerator, "memory_bandwidth", "memory_bandwidth_bytes_per_s"),
            (Accelerator, "bf16", "bf16_flops_per_s"), (Accelerator, "scaleup_bidirectional",
                                                          "scaleup_bidirectional_bytes_per_s"),
            (Server, "host_memory", "host_memory_bytes"), (Server, "power", "power_watts"),
            (Server, "storage_nics", "storage_nics"), (Link, "bandwidth_per_direction",
                                                       "bandwidth_per_direction_bytes_per_s"),
            (StorageSystem, "read_bandwidth", "read_bandwidth_bytes_per_s")]


@pytest.mark.parametrize("record_type, stem, field", EXTREMES)
def test_hardware_at_either_end_of_its_range_plans_without_a_numpy_warning(tmp_path, own_catalog, record_type, stem,
                                                                           field):
    for end, value in zip(("low", "high"), RANGES[record_type][field][:2]):
        folder = tmp_path / end
        overlay(folder, record_type, stem, value)
        catalog._OVERLAYS.clear()
        catalog.use_overlay(folder)
        context.resolve.cache_clear()
        clear_caches()
        table = next(t for t in catalog.TABLES.values() if t.record_type is record_type)
        assert getattr(table[ROW[record_type][1]], field) == pytest.approx(value)  # the overlay's row is used
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a RuntimeWarning (overflow, 0/0) fails the test
            try:
                plan(sc.preset("xe9680-genai"))
            except ValueError as e:  # a slow device may need more than a plan holds: said in the user's terms
                assert "more than aisize plans" in str(e) or "needs more host RAM" in str(e), (end, str(e))
                assert "intermediate figure" not in str(e), (end, str(e))


def test_every_catalog_row_of_ours_is_within_range():
    for record_type, ranges in RANGES.items():
        table = next(t for t in catalog.TABLES.values() if t.record_type is record_type)
        for r in table:
            for field, (low, high, words) in ranges.items():
                v = getattr(r, field)
                assert v is None or low <= v <= high, (r.id, field, v)
                assert "'" not in words  # the scenario loader shortens text between quotes


def test_a_server_with_no_storage_nics_of_its_own_plans():
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["hardware"]["server"] = "asus-xa-nb3i-e12-b300"  # storage_nics 0: storage over a compute NIC
    assert catalog.servers["asus-xa-nb3i-e12-b300"].storage_nics == 0
    assert plan(sc.from_dict(d)).gpus > 0  # was "an intermediate figure is out of range (0: ...)"


# --- cost inputs: physical where they enter ---------------------------------------------------------------------

@pytest.mark.parametrize("life", [1e-9, 0.5, 16, 1e6])
def test_a_life_outside_1_to_15_years_is_refused_by_its_field(life):
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["cost"]["life_years"] = life
    with pytest.raises(sc.ScenarioError, match=r"cost\.life_years: Input should be"):
        sc.from_dict(d)
    with pytest.raises(ValueError, match="life_years"):
        capital_per_hour(317_000, life)


def test_a_life_of_1_and_of_15_years_plans():
    for life in (1, 15):
        d = sc.to_dict(sc.preset("xe9680-genai"))
        d["cost"]["life_years"] = life
        assert 0 < plan(sc.from_dict(d)).cost.usd_per_gpu_hour < 100


@pytest.mark.parametrize("price, value", [("aws-p5-capacity-block", 1e-9), ("aws-p5-capacity-block", 1e6),
                                          ("energy-per-kwh", 1e6), ("server-dell-xe9680-h100", 1e12)])
def test_a_price_outside_physics_is_refused_by_its_field(price, value):
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["cost"]["prices"] = {price: value}
    with pytest.raises(sc.ScenarioError, match=rf"cost\.prices\.{price}: .* is not allowed: allowed range"):
        sc.from_dict(d)


def test_every_price_of_ours_is_within_its_bounds():
    table = load_prices()
    for i in table.ids():
        low, high = price_bounds(table[i].unit)
        assert low <= table.usd(i) <= high, i


# --- the serving calibration: physical ranges, named; one GEMM share serves every generation --------------------

@pytest.mark.parametrize("name", sorted(CALIBRATION_RANGES))
def test_a_constant_past_its_range_is_refused_naming_the_range_and_why(name):
    low, high, why = CALIBRATION_RANGES[name]
    past = high * 2 if name not in SHARES else low / 2
    with pytest.raises(ValueError, match=rf"{name}(\[hopper\])?={past:g} is not allowed: must be from {low:g} to "
                                         rf"{high:g}"):
        from_dict({name: past} if name != "gemm_efficiency" else {name: {"hopper": past}})


def test_a_single_gemm_share_serves_every_generation():
    cal = from_dict({"gemm_efficiency": 0.5})  # was kept as a number and failed deep in the plan (TypeError)
    assert cal.value("gemm_efficiency", "blackwell") == cal.value("gemm_efficiency", "hopper") == 0.5
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["policies"]["serving_calibration"] = {"file": "mine.json", "content": {"gemm_efficiency": 0.5}}
    assert plan(sc.from_dict(d)).inference[0].replicas >= 1


# --- fleet errors name the field set ----------------------------------------------------------------------------

def fleet_error(edit) -> str:
    d = sc.to_dict(sc.preset("fleet-over-the-day"))
    edit(d["workloads"][0]["fleet"])
    with pytest.raises(ValueError) as info:
        plan(sc.from_dict(d))
    return str(info.value)


@pytest.mark.parametrize("adapters", [{"hbm_adapters": 1_000_000}, {"rank": 1024},
                                      {"count": 1_000_000, "hbm_adapters": 1_000_000}])
def test_adapters_that_take_the_whole_kv_cache_name_the_adapter_fields(adapters):
    text = fleet_error(lambda f: f["adapters"].update(adapters))
    assert text.startswith("workloads.0 ('Chat 70B'): fleet.adapters.hbm_adapters=")
    assert "fleet.adapters.rank" in text and "KV cache" in text and "requests_per_s" not in text


@pytest.mark.parametrize("autoscaling", [{"min_replicas": 100_000}, {"min_replicas": 50_000, "max_replicas": 60_000}])
def test_a_floor_of_replicas_past_the_limits_names_min_replicas(autoscaling):
    text = fleet_error(lambda f: f["autoscaling"].update(autoscaling))
    m = autoscaling["min_replicas"]
    assert text.startswith(f"workloads.0 ('Chat 70B'): fleet.autoscaling.min_replicas={m:,} is not allowed: {m:,} "
                           "replicas of")
    assert "more than aisize plans" in text and "requests_per_s" not in text


def test_the_cli_names_min_replicas_in_one_line(tmp_path):
    d = sc.to_dict(sc.preset("fleet-over-the-day"))
    d["workloads"][0]["fleet"]["autoscaling"]["min_replicas"] = 100_000
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    run = aisize("fleet", str(path))
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr[-2000:]
    assert "fleet.autoscaling.min_replicas=100,000" in run.stderr and "Traceback" not in run.stderr
