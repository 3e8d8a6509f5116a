"""Every preset, every surface, one truth (issue 47's Proof).

Each preset is planned once; the figures every surface shows (the app's cards and tables, the CLI's text,
JSON, CSV and the report's sections) are read back as (label, value, unit) and compared with the one result
object, the plan (not one surface with another). The test fails when a figure differs from the plan's, when
a label names no statistic (TTFT, TPOT, request latency) or a memory figure is not in GiB, when a shape does
not multiply to the service's GPUs, when a plan said to fit shows more memory per GPU than the GPU has, or
when a column's unit does not match its values. tests/test_plan_one_truth.py checks the plan object's own
sums and the pools' latencies; this file reads what is shown.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from html import unescape

import ipywidgets as widgets
import pandas as pd
import pytest

from aisize import cli
from aisize import format as F
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.scenario import dumps, preset, preset_names, to_dict
from aisize.units import GiB
from shown_figures import FACTORS, number

CARD = re.compile(r"<div class='aisize-label'>([^<]*)</div><div><span class='aisize-value' data-key='([^']*)'>"
                  r"([^<]*)</span> <span class='aisize-unit'>([^<]*)</span>")
# "14 replicas × TP 1 × PP 8", "10 prefill replicas × TP 1 × PP 2 + 3 decode replicas × TP 4", "2 replicas ×
# TP 1 × ADP 8": the plan's one wording (aisize.format.serving_shape)
SHAPE = re.compile(r"([\d,]+) (?:prefill |decode )?replicas? × TP (\d+)(?: × PP (\d+))?(?: × ADP \d+)?")
MEMORY_UNITS = {"B", "KiB", "MiB", "GiB"}  # GPU and host memory: binary, GiB at most (one convention)
STATISTIC = re.compile(r"\b(mean|p50|p95|p99|median)\b", re.I)


def _gpus_in(text: str) -> int:
    return sum(int(n.replace(",", "")) * int(tp) * int(pp or 1) for n, tp, pp in SHAPE.findall(text))


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _htmls(widget):
    if isinstance(widget, widgets.HTML):
        yield widget.value
    for child in getattr(widget, "children", ()) or ():
        yield from _htmls(child)


class Surfaces:
    """One preset's plan and what each surface shows of it."""

    def __init__(self, name: str, tmp):
        self.name = name
        self.scenario = preset(name)
        self.plan = plan(self.scenario)
        path = tmp / f"{name}.yaml"
        path.write_text(dumps(self.scenario))
        self.cli = self._run(["size", str(path)])  # what `aisize size` prints
        self.json = json.loads(to_json(self.plan))
        self._run(["size", str(path), "--csv", str(tmp / "csv")])
        self.csv = {f.stem: pd.read_csv(f) for f in (tmp / "csv").glob("*.csv")}
        self.cards, self.tables = self._app()  # {(workload or "", key): (label, value, unit)}, [html]
        self.report = self._report()

    @staticmethod
    def _run(argv) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(argv) == 0
        return out.getvalue()

    def _app(self):
        from aisize.app import build_app
        from aisize.app.layout import TITLES

        app = build_app(display=False, data=to_dict(self.scenario))
        cards, tables = {}, []

        def read(section, workload: str) -> None:
            for html in _htmls(section.view):
                tables.extend(re.findall(r"<table class='aisize-table'>.*?</table>", html, re.S))
                for label, key, value, unit in CARD.findall(html):
                    cards[(workload, key)] = (unescape(label), unescape(value), unescape(unit))

        for title in TITLES:
            section = app.open_tab(title)
            section.show()
            chooser = {"Inference": "service", "Training": "job"}.get(title)
            if chooser is None:
                read(section, "")
                continue
            for label, index in getattr(section, chooser).options:  # each service / job, as a user picks it
                getattr(section, chooser).value = index
                section.update(app.state.plan)
                read(section, label)
        return cards, tables

    def _report(self) -> dict[str, str]:
        from aisize.report import sections as S
        from aisize.report.context import ReportContext

        ctx = ReportContext(self.scenario, self.plan)
        return {s: S.section(s, ctx, list(S.SECTIONS)) for s in S.SECTIONS if S.SECTIONS[s][2](ctx)}

    def cli_blocks(self) -> dict[str, dict[str, str]]:
        """The CLI's Workloads section: {workload: {label: value}}."""
        section = self.cli.split("\nWorkloads\n", 1)[1].split("\nFindings\n", 1)[0]
        blocks, current = {}, None
        for line in section.splitlines():
            if line and not line.startswith(" "):
                current = blocks.setdefault(line.strip(), {})
            elif line.startswith("  ") and not line.startswith("      ") and ": " in line:
                label, value = line.strip().split(": ", 1)
                current[label] = value
        return blocks


@pytest.fixture(scope="module", params=preset_names())
def shown(request, tmp_path_factory):
    return Surfaces(request.param, tmp_path_factory.mktemp(request.param))


def _unit(label: str) -> str | None:
    m = re.search(r"\[([^\]]+)\]", label)
    return m[1] if m else None


def _close(shown_value: float, truth: float, what: str) -> None:
    # three significant figures are shown: half a unit of the third figure, and a count's rounding
    assert shown_value == pytest.approx(truth, rel=6e-3, abs=1e-9), what


# --- GPUs, shapes and replicas --------------------------------------------------------------------------------

def test_every_surface_writes_each_services_shape_in_the_plans_one_wording(shown):
    blocks = shown.cli_blocks()
    workloads = shown.csv["workloads"].set_index("workload")
    for i in shown.plan.inference:
        shape = F.serving_shape(i)
        assert _gpus_in(shape) == i.gpus
        where = {"CLI": blocks[i.name].get("shape"), "CSV": workloads.loc[i.name, "shape"],
                 "app": shown.cards[(i.name, "inference.tensor_parallel")][1]}
        for surface, text in where.items():
            assert text == shape, f"{shown.name} {i.name}: {surface} shows {text!r}, the plan says {shape!r}"
        assert f"{shape} = {F.plural(i.gpus, 'GPU')}" in _text(shown.report["executive"])
        report = _text(shown.report["inference"])
        assert shape in report, f"{shown.name} {i.name}: the report's inference tables miss {shape!r}"


def test_no_surface_shows_a_shape_that_does_not_add_up_to_the_gpus(shown):
    """Any "N replicas × TP t [× PP p]" written anywhere next to a service's name multiplies to its GPUs."""
    texts = [shown.cli, *map(_text, shown.report.values()), *(c[1] for c in shown.cards.values())]
    for i in shown.plan.inference:
        for text in texts:
            for line in re.split(r"(?<=[.;])\s|\n", text):
                if i.name in line and SHAPE.search(line):
                    assert _gpus_in(line) in (i.gpus, 0) or f"{F.serving_shape(i)}" in line, (shown.name, line)


def test_gpus_agree_with_the_plan_on_every_surface(shown):
    blocks = shown.cli_blocks()
    workloads = shown.csv["workloads"].set_index("workload")
    jsoned = {w["name"]: w for kind in ("training", "inference", "job_streams") for w in shown.json[kind]}
    for w in shown.plan.training + shown.plan.inference + shown.plan.job_streams:
        assert int(blocks[w.name]["GPUs"].replace(",", "")) == w.gpus
        assert workloads.loc[w.name, "gpus"] == w.gpus == jsoned[w.name]["gpus"]
    for i in shown.plan.inference:
        assert shown.cards[(i.name, "inference.gpus")][1].replace(",", "") == str(i.gpus)
    assert sum(w.gpus for w in shown.plan.inference) <= shown.plan.gpus


def test_one_label_shows_one_figure_across_the_apps_tabs(shown):
    """"Servers", "Raw capacity", "GPUs busy over the 4-year life" appear on several tabs: one value, one unit."""
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for (workload, key), (label, value, unit) in shown.cards.items():
        if key.startswith("compare."):  # scenario B's figures
            continue
        first = seen.setdefault((workload, label), (key, value, unit))
        assert (first[1], first[2]) == (value, unit), (
            f"{shown.name} {workload}: {label!r} shows {first[1]} {first[2]} ({first[0]}) and {value} {unit} ({key})")


def test_the_clusters_totals_read_the_same_on_every_surface(shown):
    p = shown.plan
    assert (shown.json["gpus"], shown.json["servers"], shown.json["racks"]) == (p.gpus, p.servers, p.racks)
    head = shown.cli.splitlines()[1]  # "  112 GPUs (b200) in 14 x dgx-b200, 7 racks, 200 kW at most; ..."
    assert head.strip().startswith(f"{F.plural(p.gpus, 'GPU')} ("), head
    assert f"{F.plural(p.racks, 'rack')}, {F.power(p.power_watts)} at most" in head, head
    assert sum(int(n) for n in re.findall(r"(\d+) x ", head)) == p.servers, head
    cards = {key: value for (w, key), (_, value, _) in shown.cards.items() if not w}
    assert (number(cards["summary.gpus"]), number(cards["summary.servers"]), number(cards["summary.racks"])) == \
        (p.gpus, p.servers, p.racks)
    _, power, unit = shown.cards[("", "summary.power")]
    _close(number(power) * FACTORS[unit], p.power_watts, "app power")
    executive = _text(shown.report["executive"])
    assert f"The plan needs {F.plural(p.gpus, 'GPU')} in {F.plural(p.servers, 'server')}" in executive
    bom = shown.csv["bom"].set_index("item")
    assert bom["quantity"].iloc[0] == p.gpus


# --- training: one layout wording, the days and the MFU the time rests on -------------------------------------

def test_a_training_jobs_layout_days_and_mfu_read_the_plans_on_every_surface(shown):
    blocks = shown.cli_blocks()
    workloads = shown.csv["workloads"].set_index("workload")
    for t in shown.plan.training:
        lay = F.layout(t.layout)
        assert blocks[t.name]["layout"] == workloads.loc[t.name, "layout"] == lay
        assert shown.cards[(t.name, "training.layout")][1] == F.layout(t.layout, recompute=False)
        assert lay in _text(shown.report["training"]), f"{shown.name} {t.name}: the report's layout is not {lay!r}"
        _close(float(blocks[t.name]["days"].replace(",", "")), t.training_days, f"CLI {t.name} days")
        _close(number(shown.cards[(t.name, "training.days")][1]), t.training_days, f"app {t.name} days")
        # one MFU under one label: the figure the time rests on, with what it rests on beside it
        # a percentage is shown to one decimal (aisize.format.pct): within 0.05 points
        assert float(blocks[t.name]["MFU of the time"].rstrip(" %")) == pytest.approx(t.mfu_assumed * 100, abs=0.05)
        label, value, unit = shown.cards[(t.name, "training.mfu")]
        assert label == "MFU of the time" and unit.startswith("%"), (label, unit)
        assert number(value) == pytest.approx(t.mfu_assumed * 100, abs=0.05), f"app {t.name} MFU"
        assert ("assumed" in unit) == (t.throughput_rule == "policy-mfu"), (t.name, unit)
        assert "not modelled" not in value


# --- latencies: a statistic in every label, the plan's figure under it ------------------------------------------

def _latency_truth(i, label: str) -> float | None:
    label = label.lower()
    stat = (STATISTIC.search(label) or [None])[0]
    if label.rstrip().endswith(" at"):  # the load at which latency doubles: a rate, not a latency
        return None
    if re.search(r"\brise\b", label):  # latency's relative rise for more load (the knee as a slope): a share
        return None
    field = ("ttft" if "ttft" in label else "tpot" if "tpot" in label else
             "latency" if "latency" in label and "storage" not in label and "io" not in label.split() else None)
    if field is None:
        return None
    assert stat, f"{i.name}: {label!r} names no statistic (mean, p95, p99)"
    if re.search(r"\b(hit|miss)\b", label):  # prompt reuse's TTFT of hits or misses: a part, not the headline
        return None
    suffix = {"mean": "", "p95": "_p95", "p99": "_p99"}[stat.lower()]
    if field == "latency":
        return getattr(i, f"latency{suffix or '_mean'}_seconds")
    return getattr(i, f"{field}{suffix}_seconds")


def test_every_latency_label_names_its_statistic_and_shows_the_plans_figure(shown):
    blocks = shown.cli_blocks()
    workloads = shown.csv["workloads"].set_index("workload")
    for i in shown.plan.inference:
        for label, value in blocks[i.name].items():
            truth = _latency_truth(i, label)
            if truth is not None:
                unit = _unit(label)
                _close(float(value.replace(",", "")) * FACTORS[unit], truth, f"CLI {i.name} {label}")
        for column in workloads.columns:
            truth = _latency_truth(i, column.replace("_", " "))
            if truth is not None and column.endswith(("_s", "_ms")):
                scale = 1e-3 if column.endswith("_ms") else 1.0
                _close(workloads.loc[i.name, column] * scale, truth, f"CSV {i.name} {column}")
        for (workload, key), (label, value, unit) in shown.cards.items():
            if workload == i.name and key.startswith(("inference.", "reuse.")) and "target" not in label.lower():
                truth = _latency_truth(i, label)
                if truth is not None:
                    _close(number(value) * FACTORS[unit.split(" ")[0]], truth, f"app {i.name} {label}")


def _report_rows(shown):
    """(section, header, cell, row's first cell) of every cell of the report's tables."""
    for section, html in shown.report.items():
        for table in re.findall(r"<table.*?</table>", html, re.S):
            head = [_text(h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
                cells = [_text(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
                for h, c in zip(head, cells):
                    yield section, h, c, cells[0] if cells else ""


def _base(cell: str) -> float | None:
    m = re.fullmatch(r"([\d.,]+) (\S+)", cell)
    return float(m[1].replace(",", "")) * FACTORS[m[2]] if m and m[2] in FACTORS else None


def test_the_reports_tables_show_the_plans_latencies_and_memory(shown):
    services = {i.name: i for i in shown.plan.inference}
    checked = 0
    for section, head, cell, first in _report_rows(shown):
        i, value = services.get(first), _base(cell)
        if i is None or value is None or "target" in head.lower():
            continue
        truth = _latency_truth(i, head)
        if truth is None and head in ("Memory / GPU", "GPU memory", "Host RAM need / server"):
            truth = {"Memory / GPU": i.memory_per_gpu_bytes["total_bytes"], "GPU memory": i.gpu_memory_bytes,
                     "Host RAM need / server": i.host_memory_needed_bytes}[head]
        if truth is not None:
            _close(value, truth, f"{shown.name} report {section} {i.name} {head} = {cell}")
            checked += 1
    assert checked >= 9 * len(services), checked  # the SLO table's six latencies and the memory table's three


# --- memory: GiB for GPU and host memory, and a plan said to fit fits -----------------------------------------

def _memory(w) -> tuple[float, float, bool]:
    if hasattr(w, "memory_per_gpu_bytes"):
        return w.memory_per_gpu_bytes["total_bytes"], w.gpu_memory_bytes, w.fits
    return w.memory_bytes["total_bytes"], w.gpu_memory_bytes, w.memory_fits


def test_memory_per_gpu_is_the_plans_in_gib_and_within_the_gpu_when_it_fits(shown):
    blocks = shown.cli_blocks()
    workloads = shown.csv["workloads"].set_index("workload")
    for w in shown.plan.training + shown.plan.inference:
        need, has, fits = _memory(w)
        if fits:
            assert need <= has, f"{shown.name} {w.name}: said to fit with {need / GiB:.1f} of {has / GiB:.1f} GiB"
        _close(float(blocks[w.name]["memory per GPU [GiB]"].replace(",", "")), need / GiB, f"CLI {w.name}")
        _close(workloads.loc[w.name, "memory_per_gpu_gib"], need / GiB, f"CSV {w.name}")
        _close(float(blocks[w.name]["host RAM [GiB]"].replace(",", "")), w.host_memory_needed_bytes / GiB,
               f"CLI {w.name} host RAM")
    for t in shown.plan.training:
        label, value, unit = shown.cards[(t.name, "training.memory")]
        assert unit in MEMORY_UNITS, (t.name, label, unit)
        _close(number(value) * FACTORS[unit], _memory(t)[0], f"app {t.name} {label}")


def test_every_memory_figure_on_a_card_is_in_binary_units_no_larger_than_gib(shown):
    memory = re.compile(r"memory|\bram\b|\bkv (cache|in host)", re.I)
    for (workload, key), (label, value, unit) in shown.cards.items():
        if (memory.search(label) and "storage" not in label.lower() and "nvme" not in label.lower()
                and isinstance(number(value), float)):
            assert unit.split(" ")[0] in MEMORY_UNITS, f"{shown.name} {workload} card {label!r} in {unit!r}"


def test_every_memory_figure_in_the_report_is_in_gib(shown):
    for section, h, c, _ in _report_rows(shown):
        if re.search(r"memory|\bRAM\b|KV cache", h) and re.fullmatch(r"[\d.,]+ \S+", c):
            assert c.split(" ")[1] in MEMORY_UNITS, f"{shown.name} report {section}: {h} = {c}"


# --- columns whose unit must match their values ----------------------------------------------------------------

def test_a_throughput_column_is_named_for_what_it_holds(shown):
    """The LoRA 70B job's "samples/s per GPU" held 1,259 tokens/s per GPU."""
    workloads = shown.csv["workloads"].set_index("workload")
    blocks = shown.cli_blocks()
    for t in shown.plan.training:
        per_token = t.seq_len is not None  # a transformer's rate is in tokens (plan.training)
        column = "tokens_per_s_per_gpu" if per_token else "samples_per_s_per_gpu"
        assert workloads.loc[t.name, column] == pytest.approx(t.samples_per_s_per_gpu, rel=1e-5)
        other = "samples_per_s_per_gpu" if per_token else "tokens_per_s_per_gpu"
        assert other not in workloads.columns or pd.isna(workloads.loc[t.name, other])
        label = "tokens/s per GPU" if per_token else "samples/s per GPU"
        assert label in blocks[t.name], (t.name, list(blocks[t.name]))


def test_every_gib_column_holds_gib(shown):
    workloads = shown.csv["workloads"].set_index("workload")
    for w in shown.plan.training + shown.plan.inference:
        _close(workloads.loc[w.name, "host_ram_gib"], w.host_memory_needed_bytes / GiB, w.name)
    placement = shown.csv["placement"]
    for row, s in zip(placement.to_dict("records"), shown.plan.placement.servers):
        _close(row["host_ram_gib"], s.host_bytes / GiB, "placement host RAM")


# --- the assumptions a plan lists are those its workloads use --------------------------------------------------

def test_no_training_policy_is_listed_as_used_by_a_plan_without_training(shown):
    if shown.plan.training:
        return
    assumptions = shown.cli.split("\nAssumptions", 1)[1]
    for line in assumptions.splitlines():
        if line.strip().startswith(("Model FLOPs utilisation", "Checkpoint interval")) or "(training)" in line:
            assert "unused: the plan has no training job" in line.lower(), f"{shown.name}: {line.strip()}"
