"""Pools, time slots and first-fit-decreasing placement: servers are shared, never wasted, limits named."""

import pytest

from aisize.plan import plan
from aisize.plan.pools import split
from aisize.present.jobstreams import stream_target_text
from aisize.scenario import ScenarioError, from_dict, preset, to_dict
from aisize.present.findings import finding_text


def _edit(name, change):
    d = to_dict(preset(name))
    change(d)
    return from_dict(d)


def lonely_small_workloads(p):
    """Servers holding one workload that uses at most half of them while another server of the pool had room
    for it in every slot it runs (what a whole-server-per-workload planner would do)."""
    found = []
    for s in p.placement.servers:
        if len(s.workloads) != 1 or s.workloads[0]["gpus"] > s.gpus // 2:
            continue
        w = s.workloads[0]
        for other in p.placement.servers:
            if other is s or other.pool != s.pool:
                continue
            busy = {t: sum(x["gpus"] for x in other.workloads if t in x["slots"]) for t in w["slots"]}
            if all(other.gpus - busy[t] >= w["gpus"] for t in w["slots"]):
                found.append((w["workload"], s.server, other.server))
    return found


def test_xe9680_fine_tunes_then_serves_on_two_servers():
    p = plan(preset("xe9680-genai"))
    assert p.servers <= 2 and p.gpus == 16
    assert p.placement.slot_labels == ("fine-tune", "serve")
    chat = p.placement.assignment["Chat assistant 8B"]
    service = next(i for i in p.inference if i.name == "Chat assistant 8B")
    assert chat["items"] == [service.gpus_per_replica] * service.replicas and len(chat["servers"]) == 1
    assert lonely_small_workloads(p) == []
    phases = {ph["name"]: ph for ph in p.timeline.phases}
    assert phases["fine-tune"]["days"] == pytest.approx(max(t.training_days for t in p.training))
    assert phases["serve"]["ongoing"]
    row = next(r for r in p.timeline.rows if r["workload"] == "Chat assistant 8B")
    assert row["start_day"] == pytest.approx(phases["serve"]["start_day"])


def test_a_one_gpu_service_shares_a_server_when_everything_runs_at_once():
    # all three at once (no phases): 8 + 8 GPUs of fine-tuning and the service's few need 3 servers, but
    # the service must not get a server of its own while another has room -- here none has, so the check
    # has teeth below
    s = _edit("xe9680-genai", lambda d: (d.update(phases=[]), [w.update(when={"phase": "always", "hours": None})
                                                                for w in d["workloads"]]))
    p = plan(s)
    assert p.servers == 3 and p.gpus_busy_peak == 16 + p.inference[0].gpus
    assert lonely_small_workloads(p) == []
    # a second 1-GPU service joins the first one's server instead of opening a fourth
    s2 = _edit("xe9680-genai", lambda d: (d.update(phases=[]), [w.update(when={"phase": "always", "hours": None})
                                                                 for w in d["workloads"]],
                                          d["workloads"].append(d["workloads"][2] | {"name": "Chat 2"})))
    p2 = plan(s2)
    assert p2.servers == 3
    holds = {w["workload"] for s in p2.placement.servers for w in s.workloads if len(s.workloads) == 2}
    assert holds == {"Chat assistant 8B", "Chat 2"}


def test_the_lonely_server_check_catches_a_wasteful_placement():
    import dataclasses

    p = plan(preset("xe9680-genai"))
    # move the chat to a third, otherwise empty server: the check must object
    servers = list(p.placement.servers)
    first = next(s for s in servers if any(w["workload"] == "Chat assistant 8B" for w in s.workloads))
    chat = next(w for w in first.workloads if w["workload"] == "Chat assistant 8B")
    servers[servers.index(first)] = dataclasses.replace(first, workloads=tuple(
        w for w in first.workloads if w is not chat))
    servers.append(dataclasses.replace(first, server=2, workloads=(chat,)))
    bad = dataclasses.replace(p, placement=dataclasses.replace(p.placement, servers=tuple(servers)))
    assert lonely_small_workloads(bad) == [("Chat assistant 8B", 2, 0), ("Chat assistant 8B", 2, 1)]


def test_daily_windows_share_gpus_and_the_lower_bound_is_met():
    p = plan(preset("shared-cluster"))
    assert p.placement.slot_labels == ("08-20 h", "20-08 h")
    inference = next(x for x in p.pools if x.name == "inference")
    assert inference.servers == inference.lower_bound_servers
    assert lonely_small_workloads(p) == []
    # the day service and the night batch sit on the same server, in different slots
    shared = [s for s in p.placement.servers if {"Support assistant 8B", "Batch summaries 8B"}
              <= {w["workload"] for w in s.workloads}]
    assert shared
    assert all(x.workloads for x in p.pools)


def test_pinned_workloads_use_their_pool_and_others_the_first_that_fits():
    p = plan(preset("shared-cluster"))
    where = {w: a["pool"] for w, a in p.placement.assignment.items()}
    assert where["Pre-train 8B"] == where["Fine-tuning jobs"] == "training"
    assert where["Chat 70B"] == "inference"
    # unpinned: the first pool in order that can hold it
    s = _edit("shared-cluster", lambda d: d["workloads"][2].update(pool=None))
    assert plan(s).placement.assignment["Chat 70B"]["pool"] == "training"


def test_a_pool_that_cannot_hold_a_workload_is_an_error_naming_the_field():
    def l40s(d):
        d["pools"][1]["server"] = "generic-4x-l40s"
        d["workloads"][2].update(tensor_parallel=1, pipeline_parallel=1)  # 70B bf16 on one 48 GB GPU
    with pytest.raises(ValueError, match=r"workloads\.2\.pool: no pool can hold 'Chat 70B'"):
        plan(_edit("shared-cluster", l40s))


def test_a_fixed_pool_too_small_names_its_servers_field():
    s = _edit("shared-cluster", lambda d: d["pools"][1].update(servers=1))
    with pytest.raises(ValueError, match=r"pools\.1\.servers: pool 'inference' cannot hold workload"):
        plan(s)


def test_rack_and_site_limits_name_their_fields():
    s = _edit("shared-cluster", lambda d: d["pools"][0].update(max_racks=2))
    with pytest.raises(ValueError, match=r"pools\.0\.max_racks"):
        plan(s)
    s = _edit("shared-cluster", lambda d: d["pools"][0].update(max_servers=4))
    with pytest.raises(ValueError, match=r"pools\.0\.max_servers"):
        plan(s)


def test_a_job_needing_more_gpus_than_any_pool_names_gpus_per_job():
    s = _edit("shared-cluster", lambda d: (d["pools"][0].update(servers=4, max_racks=None),
                                           d["workloads"][1].update(gpus_per_job=64)))
    with pytest.raises(ValueError, match=r"workloads\.1\.gpus_per_job: no pool can hold 'Fine-tuning jobs'"):
        plan(s)


def test_a_stream_takes_the_rest_of_a_fixed_pool_with_serving_reserved():
    def edit(d):
        d["pools"][0].update(servers=14, max_racks=None)
        d["workloads"][1].update(target_wait_hours=None, gpus="rest")
        d["workloads"][2].update(pool="training")  # serving reserves its GPUs first
    p = plan(_edit("shared-cluster", edit))
    j = p.job_streams[0]
    used = sum(w.gpus for w in p.training) + sum(i.gpus for i in p.inference if i.name == "Chat 70B")
    assert j.gpus == (14 * 8 - used) // 8 * 8 and j.target.kind == "rest" and stream_target_text(j.target).startswith("the GPUs pool")
    with pytest.raises(ValueError, match=r"workloads\.1\.gpus: 'rest' needs a pool with a fixed number"):
        plan(_edit("shared-cluster", lambda d: (d["pools"][0].update(max_racks=None),
                                                d["workloads"][1].update(target_wait_hours=None, gpus="rest"))))


def test_unstable_stream_given_too_few_gpus_is_a_problem_finding():
    s = _edit("shared-cluster", lambda d: d["workloads"][1].update(target_wait_hours=None, gpus=8,
                                                                    jobs_per_day=20))
    p = plan(s)
    assert not p.job_streams[0].stable
    assert any(f.severity == "problem" and "unstable" in finding_text(f) for f in p.findings)


def test_scenario_references_are_checked():
    for edit, match in ((lambda d: d["workloads"][0].update(pool="gpu"), r"workloads\.0\.pool: 'gpu' is not"),
                        (lambda d: d["workloads"][0].update(when={"phase": "later"}),
                         r"workloads\.0\.when\.phase: 'later' is not a declared phase"),
                        (lambda d: d["workloads"][1].update(target_utilisation=0.5), "exactly one of"),
                        (lambda d: d["pools"].append(d["pools"][0]), "pool names must be unique")):
        with pytest.raises(ScenarioError, match=match):
            _edit("shared-cluster", edit)


def test_split_into_server_pieces():
    assert split(20, 8) == [8, 8, 4] and split(8, 8) == [8] and split(3, 8) == [3]


def test_replicas_stay_inside_one_server():
    p = plan(preset("shared-cluster"))
    for i in p.inference:
        pieces = p.placement.assignment[i.name]["items"]
        assert pieces == [i.gpus // i.replicas] * i.replicas  # one piece per replica, on one server


def test_a_stream_target_of_an_unknown_kind_is_refused_by_name():
    from aisize.plan.jobstreams import StreamTarget

    assert stream_target_text(StreamTarget("wait", wait_statistic="p95", wait_hours=4.0)) == "p95 wait at most 4 h"
    with pytest.raises(ValueError, match="'slots' is not one of rest, gpus, utilisation, wait"):
        stream_target_text(StreamTarget("slots"))
