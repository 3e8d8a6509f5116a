"""Limits before allocation (issue 46, finding 4): every count a plan derives is checked before anything is built
from it, and the serving calibration's constants are bounded so that every preset's counts stay in range.

A calibration at the old allowed maximum (1e6 for every constant) made a plan build a tuple per replica for
1.65 billion replicas: a 13.2 GB allocation and a MemoryError traceback. The command line runs here under an
address-space limit, so a regression fails the test instead of taking the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest
import yaml

from aisize import checks
from aisize import scenario as sc
from aisize.plan import clear_caches, plan
from aisize.plan import fleet as plan_fleet
from aisize.plan import inference as plan_inference
from aisize.plan import service_day as plan_service_day
from aisize.plan.placement import Demand, PoolSpec, pack
from aisize.serving.calibration import CALIBRATION, CONSTANTS, RANGES, SHARES, from_dict

ADDRESS_SPACE = int(1.5 * 2**30)  # the CLI plans every preset in ~0.1 GB; a per-replica tuple of 1e9 needs 8 GB
OLD_MAXIMUM = 1e6  # what calibration.from_dict allowed for every constant before


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def cli(tmp_path, data: dict, *args, command="size"):
    """``aisize <command> FILE`` on ``data`` in a process of its own under :data:`ADDRESS_SPACE`."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "aisize.cli", command, str(path), *args], capture_output=True,
                          text=True, timeout=300, preexec_fn=_limited, env=env)


def with_calibration(name: str, content: dict) -> dict:
    d = sc.to_dict(sc.preset(name))
    d.setdefault("policies", {})["serving_calibration"] = {"file": "mine.json", "content": content}
    return d


def slowest() -> dict:
    """Every constant at the end of its range that makes serving slowest (shares lowest, the rest highest)."""
    return {n: (low if n in SHARES else high) for n, (low, high, _) in RANGES.items()}


@pytest.fixture
def fresh():
    """Plans memoised by other tests would skip the checks: forget them before and after."""
    clear_caches()
    yield
    clear_caches()


# --- a calibration at the old maximum is refused at input, by name, within the address-space limit ---------------

@pytest.mark.parametrize("name", sc.preset_names())
@pytest.mark.parametrize("constant", ["layer_seconds", "request_seconds"])
def test_a_calibration_at_the_old_maximum_is_refused_by_name_in_bounded_memory(tmp_path, name, constant):
    run = cli(tmp_path, with_calibration(name, {constant: OLD_MAXIMUM}))
    err = run.stderr.strip()
    assert run.returncode == 2, err[-2000:]
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    assert err.startswith("aisize size: error:") and len(err.splitlines()) == 2, err  # "invalid scenario:", the field
    assert f"policies.serving_calibration: calibration 'mine.json': {constant}=1e+06 is not allowed" in err
    assert f"must be from 0 to {RANGES[constant][1]:g} (s)" in err


def test_the_old_memory_error_preset_runs_the_fleet_command_in_bounded_memory(tmp_path):
    run = cli(tmp_path, with_calibration("agentic-coding", {"layer_seconds": OLD_MAXIMUM}), command="fleet")
    assert run.returncode == 2 and "MemoryError" not in run.stderr and "Traceback" not in run.stderr
    assert "layer_seconds" in run.stderr


# --- at the ends of the new ranges every preset still plans: the bounds keep every derived count in range -------

@pytest.mark.parametrize("name", sc.preset_names())
def test_every_preset_plans_at_the_slowest_calibration_allowed(tmp_path, name):
    run = cli(tmp_path, with_calibration(name, slowest()), "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr


def test_every_preset_plans_at_the_fastest_calibration_allowed(fresh):
    fastest = {n: (high if n in SHARES else low) for n, (low, high, _) in RANGES.items()}
    for name in sc.preset_names():
        p = plan(sc.from_dict(with_calibration(name, fastest)))
        assert p.gpus > 0, name


def test_every_constant_has_a_range_holding_the_default_and_the_fit_bounds():
    from aisize.calibrate.fitting import BOUNDS

    assert set(RANGES) == set(CONSTANTS)
    for name, (low, high, why) in RANGES.items():
        value = getattr(CALIBRATION, name)
        assert all(low <= v <= high for v in (value.values() if hasattr(value, "values") else [value])), name
        assert why and "'" not in why, name  # the scenario loader shortens text between quotes
        if name in BOUNDS:
            assert low <= BOUNDS[name][0] and BOUNDS[name][1] <= high, name
        from_dict({name: high})  # both ends are allowed
        from_dict({name: low} if name != "gemm_efficiency" else {name: {"hopper": low}})


# --- the count check itself -------------------------------------------------------------------------------------

def test_count_names_what_its_value_the_limit_and_why():
    assert checks.count("model replicas", 12.0, 100) == 12
    with pytest.raises(checks.CountError, match=r"^needs 1,650,000,000 model replicas, more than aisize plans "
                                                r"\(1,000,000\): slow$"):
        checks.count("model replicas", 1.65e9, checks.MAX_REPLICAS, why="slow")
    with pytest.raises(checks.CountError, match="needs infinitely many GPUs"):
        checks.count("GPUs", float("inf"), checks.MAX_GPUS)
    with pytest.raises(checks.CountError):
        checks.count("GPUs", float("nan"), checks.MAX_GPUS)
    assert issubclass(checks.CountError, ValueError)  # the CLI's exit 2 and the app's message
    assert checks.MAX_SERVERS * 8 <= checks.MAX_GPUS and checks.MAX_REPLICAS <= checks.MAX_GPUS


# --- each place a plan derives a count, past its limit: refused by name before anything is built ----------------

def test_replicas_are_checked_before_a_tuple_per_replica(monkeypatch, fresh):
    monkeypatch.setattr(checks, "MAX_REPLICAS", 1)
    with pytest.raises(ValueError, match=r"^workloads\.2 \('Chat assistant 8B'\): needs 2 model replicas, more than "
                                         r"aisize plans \(1\): the service's 20 requests/s at 10 requests/s per "
                                         r"replica of .*; check its requests_per_s"):
        plan(sc.preset("xe9680-genai"))


def test_a_slow_calibration_is_named_where_the_replicas_run_past_the_limit(monkeypatch, fresh):
    slow = CALIBRATION.with_(layer_seconds=OLD_MAXIMUM)  # as the old bounds allowed (from_dict refuses it now)
    monkeypatch.setattr(plan_inference.C, "serving_calibration", lambda policies: slow)
    with pytest.raises(ValueError) as info:
        plan(sc.preset("agentic-coding"))  # was a 13.2 GB tuple and a MemoryError
    text = str(info.value)
    assert "needs 20,698,827,826 model replicas, more than aisize plans (1,000,000)" in text
    assert "the scenario's serving calibration sets layer_seconds=1e+06" in text


def test_disaggregated_replicas_are_checked_before_their_tuple(monkeypatch, fresh):
    d = sc.to_dict(sc.preset("serving-at-scale"))
    d["workloads"] = [w for w in d["workloads"] if w.get("serving") == "disaggregated"]
    s = sc.from_dict(d)
    p = plan(s).inference[0]
    assert p.serving_mode == "disaggregated"
    clear_caches()
    monkeypatch.setattr(checks, "MAX_REPLICAS", p.replicas - 1)
    with pytest.raises(ValueError, match=f"needs {p.replicas} prefill and decode replicas, more than aisize plans"):
        plan(s)


def test_gpus_and_servers_of_a_training_job_are_checked_before_its_pieces(monkeypatch, fresh):
    s = sc.preset("llama3-70b-pretrain")
    gpus = plan(s).training[0].gpus
    clear_caches()
    monkeypatch.setattr(checks, "MAX_SERVERS", gpus // 8 - 1)
    with pytest.raises(ValueError, match=rf"^workloads\.0 \(.*\): needs {gpus // 8:,} servers, more than aisize "
                                         rf"plans \({gpus // 8 - 1:,}\): the job's {gpus:,} GPUs, on"):
        plan(s)
    clear_caches()
    monkeypatch.setattr(checks, "MAX_GPUS", gpus - 1)
    with pytest.raises(ValueError, match=f"needs {gpus:,} GPUs, more than aisize plans"):
        plan(s)


def test_a_job_streams_slots_are_checked_before_its_pieces(monkeypatch, fresh):
    s = sc.preset("shared-cluster")
    stream = plan(s).job_streams[0]
    clear_caches()
    monkeypatch.setattr(checks, "MAX_REPLICAS", stream.slots - 1)
    with pytest.raises(ValueError, match=f"needs {stream.slots:,} jobs at once, more than aisize plans"):
        plan(s)


def test_the_packer_refuses_a_server_past_the_limit_naming_the_workload(monkeypatch):
    spec = PoolSpec("p", "hardware.server", "dgx-h100", 8, 8, 2e12, 1e10, 8, None, None, "hardware.server")
    big = Demand("big", "workloads.1", (8,) * 5, 0.0, 0.0, frozenset([0]))
    small = Demand("small", "workloads.0", (8,) * 2, 0.0, 0.0, frozenset([0]))
    monkeypatch.setattr(checks, "MAX_SERVERS", 6)
    with pytest.raises(checks.CountError, match=r"needs 7 servers, more than aisize plans \(6\): workloads\.1 "
                                                r"\('big'\) .* beside the 6 servers placed before it"):
        pack([spec], {"small": [(0, small)], "big": [(0, big)]}, ["small", "big"], 1)
    fixed = PoolSpec("p", "pools.0", "dgx-h100", 8, 8, 2e12, 1e10, 8, 7, None, "pools.0.servers")
    with pytest.raises(checks.CountError, match="needs 7 servers.*the pools' fixed servers"):
        pack([fixed], {}, [], 1)


def test_the_packer_holds_fewer_servers_when_time_is_cut_into_many_slots(monkeypatch):
    spec = PoolSpec("p", "hardware.server", "dgx-h100", 8, 8, 2e12, 1e10, 8, None, None, "hardware.server")
    job = Demand("job", "workloads.0", (8,) * 11, 0.0, 0.0, frozenset(range(100)))
    monkeypatch.setattr(checks, "MAX_SERVER_SLOTS", 1000)  # 10 servers in 100 slots
    with pytest.raises(checks.CountError, match=r"needs 11 servers, more than aisize plans \(10\): .* cuts time into "
                                                r"100 slots"):
        pack([spec], {"job": [(0, job)]}, ["job"], 100)
    job = Demand("job", "workloads.0", (8,) * 11, 0.0, 0.0, frozenset(range(50)))
    placement, _, _ = pack([spec], {"job": [(0, job)]}, ["job"], 50)  # 20 servers in 50 slots
    assert len(placement.servers) == 11


def test_a_pools_fixed_servers_past_the_limit_name_the_pool():
    d = sc.to_dict(sc.preset("xe9680-genai"))
    d["pools"] = [{"name": "big", "server": d["hardware"]["server"], "servers": 1_000_000}]
    with pytest.raises(ValueError, match=r"^pools\.0\.servers: 1,000,000 servers in all, more than aisize plans "
                                         r"\(100,000\)$"):
        plan(sc.from_dict(d))


def test_the_packer_scales_linearly_with_servers_busy_in_some_slots_only(monkeypatch):
    # counted, not timed: the packer tries about two servers a piece (15,999 for 8,000 pieces); scanning every
    # server for every piece, as it once did (~20 s), tries about n^2 / 2 = 32 million
    from aisize.plan import placement as P

    tried = [0]
    real = P._fits

    def counted(*args, **kwargs):
        tried[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(P, "_fits", counted)
    spec = PoolSpec("p", "hardware.server", "dgx-h100", 8, 8, 2e12, 1e10, 8, None, None, "hardware.server")
    job = Demand("job", "workloads.0", (8,) * 8000, 0.0, 1.0, frozenset([0]))  # busy in one slot of three
    placement, _, _ = pack([spec], {"job": [(0, job)]}, ["job"], 3)
    assert len(placement.servers) == 8000
    assert tried[0] <= 3 * 8000


def test_a_stream_taking_the_rest_of_a_pool_is_packed_without_copying_the_pool_per_job(monkeypatch):
    # counted, not timed: each job copies the one server it changes (to undo the job that finds no room) and
    # tries one server; a copy of the pool per job (14 s) copied ~360,000 servers, scanning from the front ~360,000
    import copy
    import types

    from aisize.plan import placement as P

    copied, tried = [0], [0]
    fits = P._fits

    def deepcopy(x):
        copied[0] += len(x) if isinstance(x, list) else 1
        return copy.deepcopy(x)

    def counted(*args, **kwargs):
        tried[0] += 1
        return fits(*args, **kwargs)

    monkeypatch.setattr(P, "copy", types.SimpleNamespace(deepcopy=deepcopy))
    monkeypatch.setattr(P, "_fits", counted)
    spec = PoolSpec("p", "pools.0", "dgx-h100", 8, 8, 2e12, 1e10, 8, 300, None, "pools.0.servers")
    one = Demand("stream", "workloads.0", (1,), 0.0, 0.0, frozenset([0]))
    placement, _, filled = pack([spec], {}, [], 1, (("stream", 0, one),))
    assert filled == {"stream": 2400} and all(u.peak_gpus_used == 8 for u in placement.servers)
    assert copied[0] <= 2400 + 300 and tried[0] <= 2 * 2400


def test_spares_for_a_large_fleet_with_slow_recovery_are_found_quickly(monkeypatch):
    # counted, not timed: doubling then halving sums the tail about 2 log2(spares) times (29 for 6,838 spares);
    # one spare at a time, each summing all its terms, summed it once per spare (minutes)
    from aisize.fleet import failures as F

    sums = [0]
    at_most = F._at_most

    def counted(*args):
        sums[0] += 1
        return at_most(*args)

    monkeypatch.setattr(F, "_at_most", counted)
    s = F.spares_for(F.failure_rates(), replicas=100_000, gpus_per_replica=8, servers_per_replica=1,
                     recovery_seconds=1.5e6, availability_target=0.999)  # a week's restarts and a slow weights read
    assert s.spares > 1000 and s.availability >= 0.999
    assert sums[0] <= 2 * s.spares.bit_length() + 4


def test_the_days_peak_replicas_are_checked_before_the_day(monkeypatch, fresh):
    monkeypatch.setattr(plan_service_day, "NO_LIMIT_REPLICAS", 1)
    with pytest.raises(ValueError, match=r"^workloads\.0 \('Chat 70B'\): needs \d+ model replicas, more than aisize "
                                         r"plans \(1\): the day's peak of"):
        plan(sc.preset("fleet-over-the-day"))


def test_the_fleets_queue_is_checked_before_its_station(monkeypatch, fresh):
    monkeypatch.setattr(plan_inference, "QUEUE_SERVERS", 10)
    with pytest.raises(ValueError, match=r"needs [\d,]+ servers, more than aisize plans \(10\): the servers of the "
                                         r"fleet's queue are its"):
        plan(sc.preset("xe9680-genai"))


def test_the_tenants_queue_is_checked_before_it_is_solved(monkeypatch, fresh):
    monkeypatch.setattr(plan_fleet, "QUEUE_SERVERS", 10)
    with pytest.raises(ValueError, match=r"^workloads\.0 \('Chat 70B'\): needs [\d,]+ request places in the tenants' "
                                         r"queue, more than aisize plans \(10\): \d+ replicas x"):
        plan(sc.preset("fleet-over-the-day"))
