"""The fleet in the planner: the preset "fleet over the day", night jobs in the troughs, failures, site, CLI.

Figures of the serving model (replicas, capacities) are not pinned here: they change with the
serving work. The tests check relations that hold whatever a replica delivers.
"""

import dataclasses

import numpy as np
import pytest

from aisize.cli import main
from aisize.fleet.failures import failure_rates
from aisize.plan import plan
from aisize.plan.fleet import hourly_table
from aisize.scenario import ScenarioError, dumps, from_dict, preset, to_dict


@pytest.fixture(scope="module")
def fleet_plan():
    return plan(preset("fleet-over-the-day"))


def test_the_night_batch_runs_on_the_gpus_the_service_frees(fleet_plan):
    p = fleet_plan
    sf = p.fleet.service("Chat 70B")
    day = sf.day
    batch = next(s for s in p.job_streams if s.name == "Nightly fine-tuning")
    peak_gpus = day.day.peak_replicas * day.gpus_per_replica
    # placed side by side all day they would need more GPUs than the pool has
    assert peak_gpus + batch.gpus > p.gpus
    pool = p.fleet.pools[0]
    assert (pool.busy_gpus <= pool.installed_gpus).all()
    night = pool.by_workload["Nightly fine-tuning"]
    assert night[:7].tolist() == [batch.gpus] * 7 and not night[7:].any()
    # the service holds fewer GPUs at night than at its peak, and the placement gives each replica its hours
    chat = pool.by_workload["Chat 70B"]
    assert chat[:7].max() < chat.max() == peak_gpus
    placed = sum(e["gpus"] for s in p.placement.servers for e in s.workloads if e["workload"] == "Chat 70B")
    assert placed == peak_gpus == next(i for i in p.inference if i.name == "Chat 70B").gpus


def test_day_cost_is_below_holding_the_peak_all_day(fleet_plan):
    sf = fleet_plan.fleet.service("Chat 70B")
    c, d = sf.cost, sf.day
    assert c.gpu_hours == pytest.approx(d.day.gpu_hours)
    assert c.usd_per_million_tokens < c.usd_per_million_tokens_reserved
    assert c.usd_per_million_tokens == pytest.approx(c.usd_per_day / (d.output_tokens_per_day / 1e6))
    table = hourly_table(sf)
    assert len(table) == 24 and table.requests_per_s.max() == pytest.approx(d.profile.peak_per_s)


def test_scale_ups_are_a_read_burst_in_the_storage_blend(fleet_plan):
    d = fleet_plan.fleet.service("Chat 70B").day
    row = next(w for w in fleet_plan.storage.workloads if w["name"] == "Chat 70B scale-ups")
    assert row["read_peak_bytes_per_s"] == pytest.approx(d.day.largest_burst * d.load_bytes_per_s)
    assert row["read_bytes_per_s"] == pytest.approx(d.read_bytes_per_day / 86400)
    assert d.scale_up_seconds == pytest.approx(d.weights_bytes / d.load_bytes_per_s + d.engine_start_seconds)


def test_tenants_priority_and_unstable_class_reported(fleet_plan):
    sf = fleet_plan.fleet.service("Chat 70B")
    t = sf.tenants
    assert t.names == ("Paid", "Free")  # priority order
    # the paid tier never waits longer than the free tier; an overloaded period leaves the free tier unstable
    assert t.wait_mean_seconds[0] <= t.wait_mean_seconds[1]
    assert t.class_stable[0]
    assert (not t.class_stable[1]) == (t.cumulative_utilisation[1] >= 1.0)


def test_power_cooling_and_failures_of_the_preset(fleet_plan):
    f = fleet_plan.fleet
    e = f.envelope[0]
    assert e.servers_fit >= fleet_plan.servers and f.site_fits
    assert f.cooling[0].cooling == "air"
    assert f.failure_rates.id == "llama3-405b-h100"
    sf = f.service("Chat 70B")
    assert sf.efficiency.tokens_per_s == pytest.approx(sf.day.output_tokens_per_day / 86400)
    assert sf.spares is not None and sf.spares.availability >= 0.999
    h = sf.heterogeneous
    assert h.iloc[0].feasible and h.iloc[0].usd_per_million_tokens == h[h.feasible].usd_per_million_tokens.min()


def test_failure_rates_feed_the_training_mtbf():
    s = preset("llama3-70b-pretrain")
    data = to_dict(s)
    data["policies"]["failure_rates"] = "llama3-405b-h100"
    p = plan(from_dict(data))
    t = p.training[0]
    expected = failure_rates("llama3-405b-h100").mtbf_seconds(t.gpus, t.servers)
    assert t.checkpoint.mtbf_seconds == pytest.approx(expected)


def test_site_below_one_server_names_the_field():
    data = to_dict(preset("fleet-over-the-day"))
    data["site"] = {"power_mw": 0.005, "pue": 1.3}
    with pytest.raises(ValueError, match=r"site.power_mw=0.005 is not allowed: .* less than one server's"):
        plan(from_dict(data))


def test_bad_fleet_inputs_name_the_field():
    data = to_dict(preset("fleet-over-the-day"))
    fleet = data["workloads"][0]["fleet"]
    fleet["load_profile"]["hourly"][3] = -0.5
    with pytest.raises(ScenarioError, match=r"load_profile.hourly: hourly\[3\]=-0.5 is not allowed"):
        from_dict(data)
    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"][0]["fleet"]["autoscaling"].update(min_replicas=5, max_replicas=3)
    with pytest.raises(ScenarioError, match="autoscaling: max_replicas=3 is not allowed: must be at least "
                                            "min_replicas=5"):
        from_dict(data)
    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"][0]["fleet"]["tenants"][0]["share"] = 0.5
    with pytest.raises(ScenarioError, match="shares add up to 1.2"):
        from_dict(data)


def test_csv_profile_is_embedded(tmp_path):
    path = tmp_path / "rates.csv"
    path.write_text("time,requests_per_s\n00:00,0.5\n08:00,1\n20:00,0.7\n")
    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"][0]["fleet"]["load_profile"] = {"csv": str(path)}
    s = from_dict(data, read_model_files=True)  # a dict from the command line; an upload names no path
    assert s.workloads[0].fleet.load_profile.points == ((0.0, 0.5), (8.0, 1.0), (20.0, 0.7))
    assert from_dict(to_dict(s)) == s  # a saved scenario stands alone


def test_cli_fleet_prints_the_day(tmp_path, capsys):
    path = tmp_path / "f.yaml"
    path.write_text(dumps(preset("fleet-over-the-day")))
    assert main(["fleet", str(path)]) == 0
    out = capsys.readouterr().out
    for text in ("Service Chat 70B", "GPU-hours a day", "per million output tokens over the day", "tenants",
                 "heterogeneous prefill/decode", "Pool shared", "Site: 2.00 MW", "Cooling dgx-h100: air"):
        assert text in out
    assert np.isfinite(float(out.split("GPU-hours a day")[0].split()[-1].replace(",", "")))


def test_fleet_text_says_its_title_once_and_names_counts_and_statistics(fleet_plan):
    from aisize.present.fleet_summary import fleet_text

    text = fleet_text(fleet_plan)
    assert fleet_plan.scenario_name == "Fleet over the day"
    assert text.splitlines()[0] == "Fleet over the day"  # was "Fleet over the day: Fleet over the day"
    assert "Service Chat 70B (pool shared, 2 GPUs per replica)" in text and "GPU(s)" not in text
    assert "mean wait 45.0 ms, mean TTFT" in text  # the tenants' figures are means
    pair = next(line for line in text.splitlines() if "+ dgx-h200" in line)
    assert "TTFT p95 " in pair and "TPOT p95 " in pair and " GPUs)" in pair  # the service's target statistic
    named = dataclasses.replace(fleet_plan, scenario_name="Chat day")
    assert fleet_text(named).splitlines()[0] == "Fleet over the day: Chat day"


def test_the_fleet_text_says_which_model_to_trust_when_they_seem_to_disagree():
    # issue 47: "Free: UNSTABLE, its queue grows" at 08:00 beside the simulation's "waits mean 1.05 ms": both hold
    # (a minute's steady-state queue against the day), and the text now says which figure answers what
    from aisize.present.fleet_summary import fleet_text

    p = plan(preset("fleet-over-the-day"))
    s = p.fleet.services[0]
    assert s.tenants is not None and not all(s.tenants.class_stable)
    text = " ".join(fleet_text(p, simulate=True).split())
    assert "UNSTABLE at this minute" in text and "which to trust: the simulation for waits over the day" in text
    assert "which to trust" not in " ".join(fleet_text(p).split())  # no simulation shown: nothing to reconcile
