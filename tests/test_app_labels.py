"""Labels, units and cut-off text on the app's tabs (issues 49.5 and 47.6): every defect the screenshot review
found in a label is pinned here against the plan's own figures, so a label that cuts, mixes units or carries two
values under one name fails.

The pixel widths are estimates (:data:`aisize.charts.style.CHAR_PX` per character of Vega's label font), not a
browser's measure: the screenshots check the rest."""

from __future__ import annotations

import html
import re
from functools import lru_cache

import numpy as np
import pytest

from aisize import charts
from aisize import format as F
from aisize.app import build_app
from aisize.app import controls as K
from aisize.app.sections.cost import CLOUD_CHARS, cloud_options
from aisize.app.sections.training import TIMED_BY
from aisize.charts.memory import MEMORY_ITEMS
from aisize.charts.style import LABEL_LIMIT, label_fits
from aisize.charts.validation import case_labels, validation_errors, validation_errors_data
from aisize.cost import load_prices
from aisize.scenario import preset, to_dict
from aisize.validation import summary, validate
from aisize.validation.ranges import mfu_range


def card(section_html: str, key: str) -> tuple[str, str, str]:
    """(label, value, unit) of the card with data-key ``key``."""
    m = re.search(rf"<div class='aisize-label'>([^<]*)</div><div><span class='aisize-value' "
                  rf"data-key='{re.escape(key)}'>([^<]*)</span> <span class='aisize-unit'>([^<]*)</span>",
                  section_html)
    assert m, f"{key} not shown"
    return tuple(html.unescape(x) for x in m.groups())


def text(section_html: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", section_html)))


@lru_cache(maxsize=4)
def app_of(name: str):
    return build_app(display=False, data=to_dict(preset(name)))


# --- training -------------------------------------------------------------------------------------------------

def test_a_count_of_one_takes_the_singular():
    assert F.plural(1, "server") == "1 server" and F.plural(2, "server") == "2 servers"
    assert F.noun_for(1, "server") == "server" and F.noun_for(8, "GPU") == "GPUs"
    assert F.noun_for(1.0, "GPU") == "GPU" and F.noun_for(None, "GPU") == "GPUs"


def test_training_cards_agree_in_number_and_name_the_mfu_apart_from_the_layouts_table():
    app = app_of("xe9680-genai")
    section = app.open_tab("Training")
    t = next(x for x in app.state.plan.training if x.name == "LoRA fine-tune 70B")
    section.job.value = next(v for label, v in section.job.options if label == t.name)
    figures = section.figures.value
    assert t.servers == 1
    assert card(figures, "training.servers")[2] == "server"  # was "1 servers"
    assert card(figures, "training.gpus")[2] == F.noun_for(t.gpus, "GPU")
    # the card's MFU is the one the time rests on; the table's is the step-time model's, under another name
    label, value, unit = card(figures, "training.mfu")
    assert float(value) == pytest.approx(t.mfu_assumed * 100, abs=0.05) and unit.endswith(TIMED_BY[t.throughput_rule])
    heads = re.findall(r"<th>([^<]*)</th>", section.layouts.value)
    mfu_heads = [h for h in heads if "MFU" in h]
    assert mfu_heads and all(label not in h and "predicted" in h for h in mfu_heads), mfu_heads


def test_the_days_chart_keeps_its_width_beside_the_layouts_table():
    section = app_of("xe9680-genai").open_tab("Training")
    row = section.job_parts[1]
    chart_column, table_column = row.children
    assert chart_column.layout.flex == "0 0 auto"  # a shrinking box cut the title and the y-axis title
    assert table_column.layout.overflow_x == "auto"


def test_no_training_job_shows_no_empty_select_or_headings():
    section = app_of("serving-at-scale").open_tab("Training")
    assert section.job.value is None
    assert section.job.layout.display == "none"
    assert all(part.layout.display == "none" for part in section.job_parts)


def test_the_mfu_range_rule_counts_whole_gpus():
    rule = mfu_range(8).rule
    assert "1-80 GPUs" in rule and "0.8" not in rule
    assert "103-10,240 GPUs" in mfu_range(1024).rule


# --- inference ------------------------------------------------------------------------------------------------

def test_capacity_is_in_output_tokens_and_memory_units_are_named_by_kind():
    app = app_of("agentic-coding")
    section = app.open_tab("Inference")
    figures = section.figures.value
    i = app.state.plan.inference[0]
    assert card(figures, "inference.capacity")[2] == "output tokens/s"
    label, value, unit = card(figures, "reuse.host_dram")
    assert F.bytes_gpu(i.kv_tiers.host_dram_per_server_bytes).unit == "GiB" and "GiB" in unit
    assert "decimal GB" in card(figures, "reuse.nvme")[2]
    # the DRAM tier (auto) takes all the RAM left: the figure is RAM used, all installed, not a need
    assert i.host_memory_needed_bytes == pytest.approx(i.server_host_memory_bytes, rel=1e-9)
    label, value, unit = card(figures, "reuse.host_ram")
    assert label == "Host RAM used" and "all installed" in unit, (label, unit)


def test_service_memory_says_it_is_exempt_from_the_headroom():
    app = app_of("agentic-coding")
    section = app.open_tab("Inference")
    note = text(section.memory_note.value)
    headroom = app.state.plan.scenario.policies.memory_headroom
    assert "exempt" in note and str(F.pct(headroom)) in note and "policies.memory_headroom" in note
    assert "90.0 % of the GPU" in note  # vLLM's gpu_memory_utilization (data/engines.csv)
    i = app.state.plan.inference[0]
    assert i.memory_per_gpu_bytes["total_bytes"] > (1 - headroom) * i.gpu_memory_bytes  # why the note is needed


def test_a_disaggregated_service_shows_both_pools_weights():
    app = build_app(display=False, data=to_dict(preset("serving-at-scale")))
    section = app.open_tab("Inference")
    names = {i.name: i for i in app.state.plan.inference}
    rag = next(i for i in names.values() if i.serving_mode == "disaggregated")
    section.service.value = next(v for label, v in section.service.options if label == rag.name)
    figures = section.figures.value
    weights = rag.pools_estimate.weights_per_gpu_bytes
    for side in ("prefill", "decode"):
        label, value, unit = card(figures, f"inference.{side}_weights")
        assert f"{value} {unit}".strip() == F.bytes_gpu(weights[side])
    # TP 1 prefill GPUs hold more weights than the TP 2 decode GPUs the memory chart draws
    assert weights["prefill"] > weights["decode"]
    assert card(figures, "inference.capacity")[0] == "Capacity per decode replica"
    assert card(figures, "inference.batch")[0] == "Batch per decode replica"
    assert getattr(section.memory_chart.chart.params, K.TITLE).startswith("Memory per decode GPU")
    assert "KV cache in use" in text(section.memory_note.value)  # not "fills the GPU": the bar is not the pool


def test_memory_legend_labels_are_drawn_whole():
    spec = charts.memory_breakdown({"weights_bytes": 1.0, "runtime_bytes": 1.0}, 2.0).to_dict()
    legend = spec["layer"][0]["encoding"]["color"]["legend"]
    assert all(label_fits(name, legend["labelLimit"]) for name in MEMORY_ITEMS.values())
    assert not label_fits("runtime (engine reserve, activations)", 160)  # Vega's default cut it


# --- fleet, cost ----------------------------------------------------------------------------------------------

def test_fleet_button_is_sized_to_its_label():
    section = app_of("xe9680-genai").open_tab("Fleet")
    assert section.add.layout.width == "auto"


def test_cloud_rates_show_whole_and_distinct():
    prices = load_prices()
    options = cloud_options(prices)
    labels = [label for label, _ in options]
    assert len(set(labels)) == len(labels) == len(list(prices.ids("cloud")))
    assert all(len(label) <= CLOUD_CHARS for label in labels), labels
    # the rate in each label is the price's (two decimals of USD per GPU-hour)
    for label, i in options:
        assert label.endswith(f"{prices[i].usd:.2f}")


@pytest.mark.parametrize("name", ["xe9680-genai", "serving-at-scale"])
def test_cost_lines_are_drawn_whole(name):
    plan = app_of(name).state.plan
    spec = charts.cost_breakdown(plan.cost).to_dict()
    limit = spec["encoding"]["y"]["axis"]["labelLimit"]
    items = [r["item"] for r in charts.cost_breakdown_rows(plan.cost)[charts.COST_DATA]]
    assert any(not label_fits(x, 180) for x in items)  # the default limit cut "storage hpe-cray-e2000-..."
    assert all(label_fits(x, limit) for x in items), [x for x in items if not label_fits(x, limit)]


# --- accuracy -------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def cases():
    df = validate()
    return df[~df["family"].str.startswith("serving")]


def test_the_accuracy_legend_holds_every_verdict_the_table_counts():
    df = cases()
    counts = summary(df)[["ok", "rough", "outside"]].sum()
    spec = validation_errors(df).to_dict()
    domain = spec["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert {k for k, v in counts.items() if v} <= set(domain)
    drawn = validation_errors_data(df)["verdict_class"].value_counts()
    assert all(drawn.get(k, 0) == counts[k] for k in ("ok", "rough", "outside")), (drawn, counts)
    # the -55 % flops-time cases are rough, not ok
    rough = validation_errors_data(df).query("verdict_class == 'rough'")
    assert len(rough) and (rough["error_pct"].abs() > 15).all()


def test_case_labels_are_distinct_and_short():
    df = cases()
    labels = validation_errors_data(df)["label"]
    assert labels.is_unique
    assert sum(len(x) > 45 for x in labels) == 0
    pair = case_labels(["training C2 Llama 3.1 8B FSDP 8 torch.compile tokens/s per GPU",
                        "training C2 Llama 3.1 8B FSDP 8 torch.compile peak memory"])
    assert pair[0] != pair[1] and all("…" in x for x in pair)


def test_left_out_table_says_each_reason_once():
    section = app_of("xe9680-genai").open_tab("Accuracy")
    section.update(None)
    heads = re.findall(r"<th>([^<]*)</th>", section.left.value)
    assert heads == ["cases", "family", "why it is not compared"], heads
    rows = re.findall(r"<tr>(.*?)</tr>", section.left.value)[1:]
    for row in rows:
        cells = re.findall(r"<td>(.*?)</td>", row)
        assert len(set(cells)) == len(cells), cells
    assert LABEL_LIMIT >= 180


# --- the scenario bar -----------------------------------------------------------------------------------------

def test_model_of_names_the_workload_the_tab_shows():
    app = build_app(display=False, data=to_dict(preset("xe9680-genai")))
    inference = app.open_tab("Inference")
    service = app.state.data["workloads"][inference.service.value]
    assert app.model.workload.value == inference.service.value  # it named the LoRA job above the 8B service
    assert app.model.workload.label == service["name"]
    training = app.open_tab("Training")
    other = [v for _, v in training.job.options if v != training.job.value][0]
    training.job.value = other
    assert app.model.workload.value == other


# --- queueing -------------------------------------------------------------------------------------------------

def test_the_storage_queue_shows_its_rated_rate_as_the_summary_finding_does():
    """The Queueing tab showed "Throughput limit 55,996" where the Summary's finding said 53,700 IO/s a unit: two
    figures for one rate. Now the rated IO rate is the plan's (storage_queue_basis), said with its origin, and
    the fitted curve's saturation is named as such."""
    from aisize.plan.queues import storage_queue_basis
    app = app_of("agentic-coding")
    plan = app.state.plan
    q = app.open_tab("Queueing")
    b = storage_queue_basis(plan)
    label, value, unit = card(q.figures.value, "queueing.rated")
    assert (label, unit) == ("Rated IO rate", "IO/s") and value == F.sig(b.rated_per_s)
    assert b.rated_per_s == pytest.approx(b.units * b.unit_rate_per_s) and b.units == plan.storage.units == 4
    assert card(q.figures.value, "queueing.capacity")[0] == "Saturation (fitted curve)"
    shown = html.unescape(q.figures.value)
    # the tooltips say the origin: YanRong publishes no IOPS; derived from its drives and network, an upper bound
    assert b.iops_derived and "derived from its drives' ratings and network (an upper bound, not measured)" in shown
    assert "publishes no IO latency" in shown


def test_the_storage_dropdown_names_a_guidance_level_as_not_bought():
    """'Storage named superpod-h100-good (node)' sat beside 'Storage bought yanrong-f9000x' (screenshot review): a
    guidance level's option now says it is compared, not bought."""
    app = app_of("xe9680-genai")
    d = app.open_tab("Data path")
    shown = dict((v, k) for k, v in d.storage.options)
    assert shown[d.storage.value] == "superpod-h100-good (guidance: compared, not bought)"
    assert app.state.plan.storage.system != d.storage.value  # the plan buys a system, named on its own card
    assert card(d.figures.value, "storage.system")[1] == app.state.plan.storage.system


def test_a_long_chart_title_is_broken_into_lines_that_fit_the_chart():
    """A title wider than its chart was cut at both ends on the Queueing tab ("ncy vs concurrency: shared storage
    (hpe-cray-e2000-enclosure) (marked: the plan's operating p"): the slot breaks it into lines of the chart's width,
    at phrase boundaries (names and shapes whole), and Vega draws each line (the title reads split(param))."""
    import vl_convert

    section = app_of("serving-at-scale").open_tab("Queueing")
    slot = section.chart
    shown = getattr(slot.chart.params, K.TITLE)
    whole = f"Latency vs concurrency: {section.station.value} (marked: the plan's operating point)"
    assert shown.replace("\n", " ") == whole and "\n" in shown
    width = charts.WIDTH + K.AXIS_PX
    assert all(len(line) * K.TITLE_CHAR_PX <= width for line in shown.split("\n")), shown
    assert "(hpe-cray-e2000-enclosure)" in shown.split("\n")[0]  # a name is not split
    spec = slot.chart.chart.to_dict()
    assert spec["title"]["text"] == {"expr": f"split({K.TITLE}, '\\n')"}
    vl_convert.vegalite_to_vega(spec)  # the expression compiles
    assert K.title_lines("Memory per GPU: LoRA fine-tune 70B (h100-sxm)", width) == \
        "Memory per GPU: LoRA fine-tune 70B (h100-sxm)"  # a title that fits stays one line
    inference = app_of("serving-at-scale").open_tab("Inference")  # two panels side by side: both widths count
    assert inference.latency_chart.title_px == 2 * (charts.WIDTH // 2 + K.AXIS_PX)


def test_a_tpot_p95_at_its_ceiling_is_explained_under_the_chart():
    """RAG chat 70B's TPOT p95 goes flat at the full decode batch's iteration from about 33 requests/s while the mean
    rises (screenshot review, S2): a real ceiling (tests/test_curve_smooth.py), said under the chart with the
    curve's own figures; a service whose curve has no ceiling says nothing."""
    from aisize.plan import latency_curve

    app = app_of("serving-at-scale")
    section = app.open_tab("Inference")
    for name, flat in (("RAG chat 70B", True), ("Assistant 405B", False)):
        section.service.value = next(v for _, v in section.service.options
                                     if app.state.data["workloads"][v]["name"] == name)
        i = next(x for x in app.state.plan.inference if x.name == name)
        c = latency_curve(i)
        c = c[np.isfinite(c.tpot_p95_seconds)]
        top = c.tpot_p95_seconds.max()
        note = html.unescape(section.latency_note.value)
        assert bool(note) == flat, (name, note)
        if flat:
            first = c[c.tpot_p95_seconds >= top * (1 - 1e-9)].iloc[0]
            assert (f"TPOT p95 levels off at {F.ms(top)} from {F.sig(first.requests_per_s)} requests/s while the "
                    f"mean rises to {F.ms(c.tpot_seconds.iloc[-1])}") in note
            assert "decode replica" in note and "TTFT" in note
            assert c.tpot_p95_seconds.iloc[-1] >= c.tpot_seconds.iloc[-1]  # p95 at or above the mean to the end


def test_the_queueing_slider_and_axis_name_what_is_in_flight():
    """The Queueing tab's slider and x axis said 'requests' with the shared storage shown (screenshot review 12:02):
    the storage keeps IOs in flight, a service requests."""
    app = app_of("xe9680-genai")
    q = app.open_tab("Queueing")
    storage = next(s for s in q.station.options if s.startswith("shared storage"))
    service = next(s for s in q.station.options if s.startswith("inference:"))
    q.station.value = storage
    q.update(app.state.plan)
    assert q.outstanding.description == "In flight [IOs]"
    q.station.value = service
    q.update(app.state.plan)
    assert q.outstanding.description == "In flight [requests]"


@pytest.mark.parametrize("what", ["IOs", "requests"])
def test_the_concurrency_chart_names_what_is_outstanding(what):
    from aisize.plan import concurrency_curve
    from aisize.queueing import Station

    frame = concurrency_curve(Station(servers=2, service_seconds=1e-3), np.arange(1, 9))
    chart = charts.latency_vs_concurrency(frame, 2, 1, latency_unit="ms", outstanding=what)
    assert f"{what} outstanding [count]" in str(chart.to_dict())
