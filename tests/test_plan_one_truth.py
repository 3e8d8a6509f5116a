"""One plan, one truth (issue 47): a service's GPUs, shape and latencies read the same on every surface.

A disaggregated service used to show "13 replicas × TP 4 = 32 GPUs" and TTFT/TPOT from one model beside the
pools bought, whose figures came from another (serving-at-scale: TPOT p95 27 ms against 38.7 ms). Here every
preset's plan is read as each surface reads it (the plan object, its JSON, the CLI's workload table and the
report's sentence) and the figures must agree.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from aisize import format as F
from aisize import serving
from aisize.plan import plan
from aisize.present.export import to_json, workloads_table
from aisize.scenario import preset, preset_names

SHAPE = re.compile(r"([\d,]+) (?:prefill |decode )?replicas? × TP (\d+)(?: × PP (\d+))?")


@pytest.fixture(scope="module", params=preset_names())
def planned(request):
    return plan(preset(request.param))


def _gpus_in(text: str) -> int:
    return sum(int(n.replace(",", "")) * int(tp) * int(pp or 1) for n, tp, pp in SHAPE.findall(text))


def test_every_services_gpus_add_up_on_every_surface(planned):
    data = json.loads(to_json(planned))
    table = workloads_table(planned).set_index("workload")
    for i, j in zip(planned.inference, data["inference"]):
        assert sum(i.replica_gpus) == i.gpus == j["gpus"] == table.loc[i.name, "gpus"]
        if i.gpus_per_replica is not None:
            assert i.replicas * i.gpus_per_replica == i.gpus
        else:  # disaggregated: no one size of replica; the pools add up instead
            assert i.pools.prefill_gpus + i.pools.decode_gpus == i.gpus
            assert i.pools.prefill_replicas + i.pools.decode_replicas == i.replicas == j["replicas"]
            assert j["gpus_per_replica"] is None
        shape = F.serving_shape(i)
        assert _gpus_in(shape) == i.gpus, shape  # "10 prefill replicas × TP 1 × PP 2 + 3 decode ..." = 32


def test_a_disaggregated_services_latencies_are_its_pools(planned):
    for i in planned.inference:
        if i.pools_estimate is None:
            continue
        est, pools, stat = i.pools_estimate, i.pools, i.slo_statistic
        assert (i.ttft_seconds, i.ttft_p95_seconds, i.tpot_seconds, i.tpot_p95_seconds) == \
               (est.ttft_s, est.ttft_p95_s, est.tpot_s, est.tpot_p95_s)
        assert pools.ttft_statistic_s == (i.ttft_p95_seconds if stat == "p95" else i.ttft_seconds)
        assert pools.tpot_statistic_s == (i.tpot_p95_seconds if stat == "p95" else i.tpot_seconds)
        assert i.ttft_met == (pools.ttft_statistic_s <= i.ttft_target_seconds)
        # the latency curve over load comes from the same model: at the planned rate it reads the headline
        at = est.latency_at(np.array([i.requests_per_s]))
        assert float(np.ravel(at["ttft"])[0]) == pytest.approx(i.ttft_seconds, rel=1e-9)
        assert float(np.ravel(at["tpot95"])[0]) == pytest.approx(i.tpot_p95_seconds, rel=1e-9)
        curve = serving.disaggregated_curve(est)
        assert np.interp(i.requests_per_s, curve["requests_per_s"], curve["tpot_seconds"]) == \
            pytest.approx(i.tpot_seconds, rel=0.02)


def test_the_report_says_the_shape_that_adds_up(planned):
    for i in planned.inference:
        assert f"{F.serving_shape(i)} = {F.plural(i.gpus, 'GPU')}" in _report_line(planned, i)


def _report_line(planned, i) -> str:
    from aisize.report import plan_sections

    class Ctx:  # what workload_lines reads of a report's context
        plan = planned

    return next(line for line in plan_sections.workload_lines(Ctx) if line.startswith(f"{i.name}:"))


def test_serving_at_scale_reads_its_pools():
    """The case the issue names: the 70B RAG service of serving-at-scale is disaggregated."""
    p = plan(preset("serving-at-scale"))
    [rag] = [i for i in p.inference if i.serving_mode == "disaggregated"]
    assert F.serving_shape(rag).startswith(f"{rag.pools.prefill_replicas} prefill replicas × TP "
                                           f"{rag.pools.prefill_tensor_parallel}")
    assert " × PP " in F.serving_shape(rag) or rag.pools.prefill_pipeline_parallel == 1


def test_no_compute_nic_is_listed_without_saying_why_when_there_is_no_fabric():
    """Issue 49: the default plan listed 16 InfiniBand NICs beside 0 switches and 0 links."""
    from aisize.present.network_text import bom_table

    p = plan(preset("xe9680-genai"))
    table = bom_table(p)
    nic = table[table["item"].str.startswith("compute NIC")].iloc[0]
    switches = table[table["item"] == "compute fabric switches"].iloc[0]
    if switches["quantity"] == 0 and nic["quantity"] > 0:
        assert "unused: no workload spans servers" in nic["item"]


@pytest.mark.parametrize("name", ["xe9680-genai", "shared-cluster", "llama3-70b-pretrain"])
def test_a_training_layout_reads_the_same_everywhere_and_multiplies_to_its_gpus(name):
    # the Summary's workloads table said "TP2 PP1 DP2" (4 GPUs) for a job of 8 whose card said "... CP2 ..."
    from aisize.present.export import workloads_table

    p = plan(preset(name))
    rows = {r["workload"]: r for r in workloads_table(p).to_dict("records")}
    for t in p.training:
        lay = t.layout
        assert (lay.tensor_parallel * lay.pipeline_parallel * lay.context_parallel * lay.data_parallel
                == t.gpus), t.name
        assert rows[t.name]["layout"] == F.layout(lay)
        assert f"CP{lay.context_parallel} DP{lay.data_parallel}" in F.layout(lay)


@pytest.mark.parametrize("name", ["agentic-coding", "rag-service", "xe9680-genai"])
def test_the_latency_chart_passes_through_the_services_own_figures(name):
    # agentic-coding's TTFT p95 card read 1,702 ms while its chart drew about 580 ms at the planned load: the
    # curve priced prompt reuse at its mean hit, the card mixes hits and misses (found on the screenshots)
    import numpy as np

    from aisize.serving.curves import latency_curve

    for i in plan(preset(name)).inference:
        if i.estimate is None:
            continue
        c = latency_curve(i.estimate, 50, replicas=i.replicas)
        for col, figure in (("ttft_p95_seconds", i.ttft_p95_seconds), ("ttft_seconds", i.ttft_seconds),
                            ("tpot_p95_seconds", i.tpot_p95_seconds)):
            assert np.interp(i.requests_per_s, c["requests_per_s"], c[col]) == pytest.approx(figure, rel=0.01), col
