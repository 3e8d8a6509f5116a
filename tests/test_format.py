"""One formatter (aisize.format) for every surface: units by magnitude, three significant figures,
shares as %, money to the cent or in k/M, ranges with matching precision, human column headers.

The surface tests render every tab of the app and every report section for every preset and fail on
a raw field name (a column or card label like ``peak_host_ram_gb``) or a decimal number with more
than four significant figures; cards with the same label must show the same value.
"""

from __future__ import annotations

import html
import math
import re

import pytest

from aisize import format as F
from aisize.units import GB, GiB, MB


@pytest.mark.parametrize("text, expected", [
    (F.span(0.4474, 1.278, "days"), "0.45–1.28 days"),  # the "0.4474–1.278 days"
    (F.energy(0.07728 * 3.6e9), "77.3 kWh"),  # "0.07728 MWh"
    (F.energy(2.5e13), "6.94 GWh"),
    (F.pct(0.5158), "51.6 %"), (F.pct(0.1394), "13.9 %"), (F.pct(1.0), "100 %"), (F.pct(2e-5), "< 0.1 %"),
    (F.pct(0.021, signed=True), "+2.1 %"), (F.pct(None), "—"),
    (F.bytes_si(0.1311 * MB), "131 kB"), (F.bytes_si(0.1678 * GB), "168 MB"),  # "0.1311 MB", "0.1678 GB"
    (F.bytes_si(999.96 * MB), "1.00 GB"), (F.bytes_si(4.65e14), "465 TB"),
    (F.bytes_gpu(5.529 * GiB), "5.53 GiB"), (F.bytes_gpu(80 * GiB), "80.0 GiB"),
    (F.rate(186_647.2), "187 kB/s"), (F.rate(2e9), "2.00 GB/s"),
    (F.usd(2.2213), "$2.22"), (F.usd(0.24), "$0.24"), (F.usd(99.999), "$100"), (F.usd(245.4), "$245"),
    (F.usd(8000), "$8,000"), (F.usd(733_069.76), "$733 k"), (F.usd(6.19e6), "$6.19 M"), (F.usd(-25_000), "-$25.0 k"),
    (F.usd(math.inf), "unbounded"),
    (F.duration(0.0447), "44.7 ms"), (F.duration(56.21), "56.2 s"), (F.duration(628.1), "10.5 min"),
    (F.duration(7200), "2.00 h"), (F.duration(18e6), "208 days"), (F.duration(0.0), "0 s"),
    (F.sig(0.00117), "0.00117"), (F.sig(1017.3), "1,017"), (F.sig(9.996), "10.0"), (F.sig(123456.7), "123,457"),
    (F.num(1440.0), "1,440"), (F.num(0.5158), "0.516"), (F.count(16.0), "16"), (F.large(70.6e9), "70.6 B"),
])
def test_formatter(text, expected):
    assert text == expected


def test_shown_keeps_value_and_unit_apart():
    q = F.bytes_gpu(5.529 * GiB)
    assert (str(q), q.value, q.unit) == ("5.53 GiB", "5.53", "GiB")
    assert F.per_s(11_400.0, "/s") == "11,400/s"


@pytest.mark.parametrize("name, expected", [
    ("peak_host_ram_gb", "peak host RAM [GB]"), ("unit_usd", "unit price [USD]"), ("capital_usd", "capital [USD]"),
    ("price_kind", "price basis"), ("usd_per_year", "per year [USD]"), ("read_gb_per_s", "read [GB/s]"),
    ("tokens_per_s_per_gpu", "tokens/s per GPU"), ("requests_per_s", "requests/s"),
    ("usd_per_gpu_hour", "USD/GPU-hour"), ("checkpoint_write_s", "checkpoint write [s]"),
    ("tensor_parallel", "tensor parallel"), ("step [s]", "step [s]"),
])
def test_headers_carry_units(name, expected):
    assert F.header(name) == expected


def test_table_formats_money_and_names_columns():
    import pandas as pd

    shown = F.table(pd.DataFrame({"item": ["server"], "unit_usd": [317_000.0], "capital_usd": [634_000.0],
                                  "peak_host_ram_gb": [773.6123]}))
    assert list(shown.columns) == ["item", "unit price", "capital", "peak host RAM [GB]"]
    assert shown.iloc[0].tolist() == ["server", "$317 k", "$634 k", "774"]


# --- every surface, every preset ---------------------------------------------------------------

SNAKE = re.compile(r"(?<![\w.\[])[a-z][a-z0-9]*_[a-z0-9_]+\b")  # not a dotted assumption name (plan.knee_factor)
DECIMAL = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?![\w.])")


def significant_digits(number: str) -> int:
    digits = number.replace(",", "").replace(".", "").lstrip("0")
    return len(digits)


# a cell or paragraph that cites a source quotes it verbatim ("FP8 1978.9", "arXiv:2307.08691", a price page's
# "$34.608/hour" beside its address)
CITATION = re.compile(r"arXiv|datasheet|whitepaper|\.csv|\.yaml|config\.json|Table \d|Sec\. |"
                      r"\b[\w-]+\.(?:com|org|net|io)/")


def visible_text(markup: str) -> str:
    markup = re.sub(r"<(style|script|svg)\b.*?</\1>", " ", markup, flags=re.S | re.I)
    blocks = re.split(r"<(?:td|th|p|li|div|tr|h\d)\b[^>]*>", markup)
    texts = [html.unescape(re.sub(r"<[^>]+>", " ", b)) for b in blocks]
    return "\n".join(t for t in texts if not CITATION.search(t))


def headers_and_labels(markup: str) -> list[str]:
    heads = re.findall(r"<th[^>]*>(.*?)</th>", markup, flags=re.S)
    labels = re.findall(r"class='aisize-label'>(.*?)</div>", markup, flags=re.S)
    labels += re.findall(r'<div class="label">(.*?)</div>', markup, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", x)) for x in heads + labels]


def problems(markup: str, raw_fields: set[str]) -> list[str]:
    out = []
    for text in headers_and_labels(markup):
        for name in SNAKE.findall(text):
            out.append(f"raw field name {name!r} in header or label {text!r}")
    text = visible_text(markup)
    for name in SNAKE.findall(text):
        if name in raw_fields:
            out.append(f"raw field name {name!r} in {text[max(0, text.find(name) - 60):text.find(name) + 60]!r}")
    for number in DECIMAL.findall(text):
        if significant_digits(number) > 4:
            at = text.find(number)
            out.append(f"{number} has more than four significant figures: {text[max(0, at - 60):at + 40]!r}")
    return out


def raw_field_names(p) -> set[str]:
    """Column names of the plan's tables: what a surface must not print as a header or a word."""
    from aisize.plan import bom
    from aisize.present import export

    names = set()
    for make in (bom.bom_table, export.cost_table, bom.placement_table, bom.placement_groups, bom.timeline_table,
                 export.workloads_table, bom.storage_table, export.job_streams_table):
        try:
            names |= {c for c in make(p).columns if "_" in str(c)}
        except (ValueError, KeyError):
            pass
    return names


def app_markup(app) -> dict[str, str]:
    """The HTML each tab shows, by tab title."""
    import ipywidgets as widgets

    from aisize.app.layout import TITLES

    def walk(w):
        if isinstance(w, widgets.HTML):
            yield w.value
        for child in getattr(w, "children", ()) or ():
            yield from walk(child)

    return {title: "\n".join(walk(app.open_tab(title).view)) for title in TITLES}


def card_values(markup: str) -> list[tuple[str, str]]:
    """(label, shown value with unit) of every card."""
    cards = re.findall(r"class='aisize-label'>(.*?)</div><div><span class='aisize-value'[^>]*>(.*?)</span>"
                       r" <span class='aisize-unit'>(.*?)</span>", markup, flags=re.S)
    return [(html.unescape(label), html.unescape(f"{value} {unit}".strip())) for label, value, unit in cards]


@pytest.fixture(scope="module")
def presets():
    from aisize.scenario import preset_names

    return preset_names()


@pytest.mark.slow
def test_every_app_tab_of_every_preset_reads_well(presets):
    from aisize.app import build_app
    from aisize.scenario import preset, to_dict

    found = []
    for name in presets:
        app = build_app(display=False, data=to_dict(preset(name)))
        raw = raw_field_names(app.state.plan)
        for title, markup in app_markup(app).items():
            found += [f"{name} / {title}: {x}" for x in problems(markup, raw)]
        labels: dict[str, dict[str, str]] = {}
        for title, markup in app_markup(app).items():
            for label, value in card_values(markup):
                labels.setdefault(label, {})[title] = value
        for label, where in labels.items():
            if len(set(where.values())) > 1:
                found.append(f"{name}: cards labelled {label!r} differ: {where}")
    assert not found, "\n".join(found[:60])


@pytest.mark.slow
def test_every_report_section_of_every_preset_reads_well(presets):
    from aisize.report import sections as rs
    from aisize.scenario import preset

    found = []
    for name in presets:
        ctx = rs.context(preset(name))
        raw = raw_field_names(ctx.plan)
        markup = rs.title_page(ctx) + "".join(rs.section(n, ctx, rs.SECTIONS) or "" for n in rs.SECTIONS)
        found += [f"{name}: {x}" for x in problems(markup, raw)]
    assert not found, "\n".join(found[:60])


def test_gpus_busy_is_one_figure_on_cluster_and_cost():
    """The issue's "13.94 % on Cluster, 12.53 % on Cost": one function, one label that names its period."""
    from aisize.app import build_app
    from aisize.present.figures import gpus_busy

    app = build_app(display=False)
    cluster, cost = app.open_tab("Cluster").figures.value, app.open_tab("Cost").figures.value
    busy = gpus_busy(app.state.plan)
    assert "life" in busy.label
    assert dict(card_values(cluster))[busy.label] == dict(card_values(cost))[busy.label] == str(F.pct(busy.value))


@pytest.mark.slow
def test_the_cli_summary_of_every_preset_reads_well(presets):
    from aisize.plan import plan
    from aisize.present.fleet_summary import fleet_text
    from aisize.present.summary import summary_text
    from aisize.scenario import preset

    found = []
    for name in presets:
        p = plan(preset(name))
        text = summary_text(p)
        body = text.split("\nFindings\n")[0]  # findings name the scenario fields to edit
        heads = [line for line in body.splitlines() if "  " in line.strip()]
        for line in heads:
            found += [f"{name}: raw field name {x!r} in {line.strip()[:100]!r}" for x in SNAKE.findall(line)
                      if x in raw_field_names(p)]
        found += [f"{name}: {x}" for x in problems(html.escape(text), set())]
        if p.fleet is not None:  # `aisize fleet`, its day simulated too
            found += [f"{name} fleet: {x}" for x in problems(html.escape(fleet_text(p, simulate=True)), set())]
    assert not found, "\n".join(found[:60])


# --- counts, engineering notation and text that fits a terminal ------------------------------------

@pytest.mark.parametrize("text, expected", [
    (F.plural(1, "GPU"), "1 GPU"), (F.plural(16, "GPU"), "16 GPUs"), (F.plural(1.0, "rack"), "1 rack"),
    (F.plural(0, "replica"), "0 replicas"), (F.plural(2, "switch", "switches"), "2 switches"),
    # a card's unit apart from its number: "1 server", never "1 servers" (the app's cards, review S3)
    (F.noun_for(1, "server"), "server"), (F.noun_for(3, "server"), "servers"), (F.noun_for(1, "job"), "job"),
    (F.engineering(313_999_999_999_999_995_805_696, "FLOP"), "314.0 ZFLOP"),
    (F.engineering(2.5566e24, "FLOP"), "2.557 YFLOP"), (F.engineering(6_738_417_664, "count"), "6.738 billion"),
    (F.engineering(3_552_000, "GPU-h"), "3.552 million GPU-h"), (F.engineering(809_472, "GPU-h"), "809,472 GPU-h"),
    (F.engineering(46.2, "%"), "46.20 %"), (F.engineering(3e9, "B/s"), "3.000 GB/s"),
    (F.engineering(float("nan"), "GB"), "—"),
])
def test_counts_and_engineering(text, expected):
    assert text == expected


def test_text_table_fits_by_wrapping_text_then_by_records():
    import pandas as pd

    frame = pd.DataFrame({"workload": ["Chat assistant 8B", "Pre-train 70B"], "gpus": [16, 1024],
                          "why": ["a long reason " * 6, "short"], "tpot_mean_ms": [36.4, float("nan")]})
    wide = F.text_table(frame, width=200)
    assert wide.splitlines()[0].split() == ["workload", "GPUs", "why", "TPOT", "mean", "[ms]"]
    assert "  1,024" in wide and "36.4" in wide  # numbers right-aligned, formatted
    wrapped = F.text_table(frame, width=70)
    assert max(map(len, wrapped.splitlines())) <= 70 and len(wrapped.splitlines()) > 3
    assert "Chat assistant 8B" in wrapped  # a name is wrapped only at its spaces, never cut
    records = F.text_table(frame, width=24)
    assert max(map(len, records.splitlines())) <= 24
    assert records.splitlines()[:3] == ["Chat assistant 8B", "  GPUs: 16", "  why: a long reason a"]
    assert "\n\nPre-train 70B\n  GPUs: 1,024\n" in records


def test_fit_lines_wraps_prose_under_its_indent():
    text = "  " + "word " * 40
    lines = F.fit_lines(text, width=50).splitlines()
    assert max(map(len, lines)) <= 50 and lines[0].startswith("  word") and lines[1].startswith("      word")


def test_latencies_in_seconds_read_in_milliseconds():
    """A TPOT kept in seconds reads "36.4" under "TPOT [ms]" (the app's pool table had read "TPOT [s] 0.0364");
    a column that names its statistic keeps it in its header."""
    import pandas as pd

    shown = F.table(pd.DataFrame({"tpot_s": [0.0364], "ttft_mean_s": [0.634], "kv_transfer_s": [float("nan")]}))
    assert list(shown.columns) == ["TPOT [ms]", "TTFT mean [ms]", "KV transfer [ms]"]
    assert shown.iloc[0].tolist() == ["36.4", "634", ""]
