"""Report sections as HTML fragments: what the report notebook's cells display.

Each helper returns an :class:`Html` string (shown by Jupyter through
``_repr_html_``), built from the scenario and the catalog only: no I/O beyond
reading them, no printing. Every piece of text that comes from a user or a
file is escaped; sources are shown as plain text, never as links, so a report
makes no request to any host. Plan sections (training, inference, storage,
network, ...) plug in by adding a renderer to :data:`SECTIONS`.
"""

from __future__ import annotations

import datetime
import html
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from aisize import __version__, catalog
from aisize.scenario import DEFAULT_PRESET, Scenario, load
from aisize.scenario import preset as load_preset
from aisize.scenario.model import DataPrep, Inference, Training

DEFAULT_TITLE = "AI cluster sizing report"


class Html(str):
    """Trusted HTML markup; Jupyter displays it as HTML."""

    def _repr_html_(self) -> str:
        return str(self)

    def __repr__(self) -> str:  # keeps the notebook's text/plain output short
        return f"<aisize report HTML, {len(self)} characters>"


def esc(value) -> str:
    """``value`` as HTML text, unless it already is :class:`Html`."""
    return value if isinstance(value, Html) else html.escape(str(value), quote=True)


def table(headers: Iterable[str], rows: Iterable[Iterable], *, caption: str = "",
          css: str = "") -> Html:
    """An HTML table; cells are escaped unless they are :class:`Html`."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return Html(f'<table class="aisize-table {esc(css)}">{cap}{head}'
                f"<tbody>{body}</tbody></table>")


def figure(chart, caption: str) -> Html:
    """An Altair chart as inline SVG in a ``<figure>``: no script, no request to any host."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(chart.to_dict())
    # Inline SVG in HTML needs no namespace declarations; dropping them leaves no http reference.
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return Html(f'<figure class="aisize-figure">{svg}<figcaption>{esc(caption)}</figcaption></figure>')


def number(value: float, digits: int = 1) -> str:
    """A large count as "70.6 B", "25.6 M", "4,096"."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= scale:
            return f"{value / scale:,.{digits}f} {suffix}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def model_params(model_id: str) -> float:
    """Parameter count of a catalog model: the model card's figure, or the total for non-LLMs."""
    m = catalog.model(model_id)
    return m.published_params if isinstance(m, catalog.Transformer) else m.params


def load_scenario(scenario_path: str = "", preset: str = DEFAULT_PRESET) -> Scenario:
    """The scenario a report is about: the file if a path is given, else the preset."""
    return load(scenario_path) if scenario_path else load_preset(preset or DEFAULT_PRESET)


def origin(scenario_path: str = "", preset: str = "") -> str:
    """How the title page names the input: the file's name, or the preset."""
    return Path(scenario_path).name if scenario_path else f"preset {preset or DEFAULT_PRESET}"


def setup() -> None:
    """Make any chart a notebook cell displays render as static SVG (the default loads a CDN)."""
    import altair as alt

    alt.renderers.enable("svg")


_LABELS = {"full": "full", "lora": "LoRA", "qlora": "QLoRA", "adamw": "AdamW",
           "sgd-momentum": "SGD + momentum", "adam-8bit": "8-bit Adam", "lion": "Lion",
           "adafactor": "Adafactor"}


def _work(w) -> tuple[str, str, str]:
    """(type, work, target) cells describing one workload."""
    if isinstance(w, Training):
        kind = (f"Training: {_LABELS.get(w.method, w.method)}, {w.precision}, "
                f"{_LABELS.get(w.optimizer, w.optimizer)}")
        if w.tokens_billion is not None:
            work = f"{number(w.tokens_billion * 1e9)} tokens"
            work += f", sequence {w.seq_len:,}" if w.seq_len else ""
        else:
            work = f"{catalog.datasets[w.dataset].name} × {w.epochs:g} epochs"
        target = (f"{w.target_days:g} day{'' if w.target_days == 1 else 's'}"
                  if w.target_days is not None else f"{w.gpus:,} GPUs")
        return kind, work, target
    if isinstance(w, Inference):
        kind = f"Inference: {w.weight_precision} weights, {w.kv_precision} KV cache"
        work = (f"{w.requests_per_s:g} requests/s, {w.prompt_tokens:,} prompt → "
                f"{w.output_tokens:,} output tokens")
        target = f"TTFT ≤ {w.ttft_target_ms:,g} ms, TPOT ≤ {w.tpot_target_ms:,g} ms"
        return kind, work, target
    assert isinstance(w, DataPrep)
    work = (f"read {w.read_gb_per_s:g} GB/s, write {w.write_gb_per_s:g} GB/s, "
            f"{w.io_size_kib:g} KiB IOs, {w.metadata_ops_per_s:,.0f} metadata ops/s")
    return "Data preparation", work, f"{w.capacity_tb:,g} TB capacity"


def workloads_table(scenario: Scenario) -> Html:
    """One row per workload: team, type, model and size, amount of work, target."""
    rows = []
    for w in scenario.workloads:
        kind, work, target = _work(w)
        model = getattr(w, "model", None)
        rows.append([w.name, w.team, kind, catalog.model(model).name if model else "—",
                     number(model_params(model)) if model else "—", work, target])
    return table(["Workload", "Team", "Type", "Model", "Parameters", "Work", "Target"], rows,
                 caption="Workloads", css="workloads")


def _model_chart(scenario: Scenario) -> Html:
    import altair as alt
    import pandas as pd

    data = pd.DataFrame([{"workload": w.name, "params_billion": model_params(w.model) / 1e9,
                          "label": number(model_params(w.model))}
                         for w in scenario.workloads if getattr(w, "model", None)])
    if data.empty:
        return Html("")
    base = alt.Chart(data).encode(
        x=alt.X("params_billion:Q", title="Parameters (billions)"),
        y=alt.Y("workload:N", title=None, sort=None))
    bars = base.mark_bar(color="#1f4e79")
    labels = base.mark_text(align="left", dx=4, color="#1d2733").encode(
        text="label:N")
    chart = (bars + labels).properties(width=420, height=28 * len(data))
    return figure(chart, "Model size of each workload")


def summary(scenario: Scenario) -> Html:
    """Description, key figures, hardware choices and the workloads table."""
    hw = scenario.hardware
    server = catalog.servers[hw.server]
    gpu = catalog.accelerators[server.accelerator]
    fixed_gpus = sum(w.gpus for w in scenario.workloads if isinstance(w, Training) and w.gpus)
    teams = sorted({w.team for w in scenario.workloads})
    facts = [("Workloads", f"{len(scenario.workloads)}"), ("Teams", f"{len(teams)}"),
             ("GPUs per server", f"{server.gpus} × {gpu.name}"),
             ("GPUs fixed by the scenario", f"{fixed_gpus:,}" if fixed_gpus else "none")]
    cards = "".join(f'<div class="aisize-fact"><div class="value">{esc(v)}</div>'
                    f'<div class="label">{esc(k)}</div></div>' for k, v in facts)
    paragraphs = "".join(f"<p>{esc(p)}</p>" for p in scenario.description.splitlines() if p.strip())
    link = hw.scale_out_link or server.compute_nic_link
    link_name = catalog.links[link].name if link in catalog.links else link
    hardware = table(["Choice", "Catalog entry"], [
        ["Server", server.name], ["Accelerator", gpu.name],
        ["Scale-out link", link_name + ("" if hw.scale_out_link else " (the server's compute NIC)")],
        ["Shared storage", catalog.storage[hw.storage].name]], caption="Hardware", css="hardware")
    return Html(f'{paragraphs}<div class="aisize-facts">{cards}</div>{hardware}'
                f"{workloads_table(scenario)}{_model_chart(scenario)}")


# label, unit (how the value is shown), why it matters; fields missing here are shown by name.
POLICY_TEXT: dict[str, tuple[str, str, str]] = {
    "mfu": ("Model FLOPs utilisation (MFU)", "%",
            "Share of peak dense FLOP/s a training step achieves; large runs land at 35-50 %."),
    "target_gpu_utilisation": ("Target GPU utilisation", "%",
                               "Storage keeps GPUs busy this share of the time (MLPerf Storage's bar)."),
    "checkpoint_interval_minutes": ("Checkpoint interval", "min",
                                    "auto: Young/Daly, sqrt(2 x MTBF x checkpoint write time)."),
    "checkpoint_retention": ("Checkpoints retained", "", "Checkpoints kept per training job."),
    "checkpoint_bytes_per_param": ("Checkpoint size per parameter", "B",
                                   "bf16 weights + fp32 master, momentum and variance."),
    "node_mtbf_hours": ("Node MTBF", "h", "Per server; the cluster's MTBF is this ÷ servers."),
    "restart_minutes": ("Restart time", "min", "Restart after a failure, before the checkpoint is read."),
    "memory_headroom": ("GPU memory headroom", "%", "Kept free for framework, fragmentation, CUDA context."),
    "host_ram_ratio": ("Host RAM / GPU memory", "×", "Host RAM per server ÷ its total GPU memory."),
    "storage_usable_ratio": ("Usable / raw storage", "%", "Capacity left after data protection."),
    "switch_radix": ("Switch radix", "ports", "Ports per fabric switch."),
    "oversubscription": ("Fabric oversubscription", ":1",
                         "Leaf downlink ÷ uplink bandwidth; 1:1 is non-blocking."),
}


def _show(value, unit: str) -> str:
    if isinstance(value, str) or unit in (":1", "×"):
        return f"{value}" if isinstance(value, str) else f"{value:g}{unit}"
    return f"{value * 100:g} %" if unit == "%" else f"{value:,g} {unit}".strip()


def assumptions_table(scenario: Scenario) -> Html:
    """Every policy and fabric value the plan uses, marked as set by the scenario or defaulted."""
    rows = []
    for model, names in ((scenario.policies, type(scenario.policies).model_fields),
                         (scenario.hardware, ("switch_radix", "oversubscription"))):
        for name in names:
            label, unit, why = POLICY_TEXT.get(name, (name.replace("_", " ").capitalize(), "", ""))
            origin = "scenario" if name in model.model_fields_set else "default"
            rows.append([label, _show(getattr(model, name), unit), origin, why])
    return table(["Assumption", "Value", "Set by", "Why it matters"], rows, css="assumptions")


def used_rows(scenario: Scenario) -> list[tuple[str, object]]:
    """(table name, record) for every catalog row the scenario uses, without repeats."""
    hw = scenario.hardware
    server = catalog.servers[hw.server]
    gpu = catalog.accelerators[server.accelerator]
    wanted = [("servers", hw.server), ("accelerators", server.accelerator),
              ("links", gpu.scaleup_link), ("links", server.compute_nic_link),
              ("links", server.storage_nic_link), ("links", hw.scale_out_link),
              ("storage", hw.storage)]
    for w in scenario.workloads:
        model = getattr(w, "model", None)
        if model:
            m = catalog.model(model)
            wanted.append(("transformers" if isinstance(m, catalog.Transformer) else "other_models",
                           model))
            wanted.append(("datasets", getattr(m, "dataset", None)))
        wanted.append(("datasets", getattr(w, "dataset", None)))
    found = {(name, id_): catalog.TABLES[name].get(id_) for name, id_ in wanted if id_}
    return [(name, record) for (name, _), record in found.items() if record is not None]


def sources_table(scenario: Scenario) -> Html:
    """The source of every catalog figure the scenario uses, as plain text."""
    rows = [[name.replace("_", " "), r.id, r.name, Html(f'<span class="source">{esc(r.source)}</span>')]
            for name, r in used_rows(scenario)]
    return table(["Table", "Id", "Entry", "Source"], rows, css="sources")


SECTIONS: dict[str, tuple[str, Callable[[Scenario], Html]]] = {
    "summary": ("Scenario summary", summary),
    "assumptions": ("Assumptions", assumptions_table),
    "sources": ("Sources", sources_table),
}


def check_sections(names: Iterable[str]) -> list[str]:
    """The chosen sections in report order, or a ValueError naming unknown ones and the allowed."""
    names = list(names)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown or not names:
        what = f"unknown {unknown}" if unknown else "none chosen"
        raise ValueError(f"sections: {what}; choose from {list(SECTIONS)}")
    return [n for n in SECTIONS if n in names]


def title_page(scenario: Scenario, *, title: str = DEFAULT_TITLE, customer: str = "",
               origin: str = "", sections: Iterable[str] = tuple(SECTIONS),
               date: datetime.date | None = None) -> Html:
    """The cover page: title, customer, scenario, date, version and contents."""
    date = date or datetime.date.today()
    who = f'<p class="customer">Prepared for {esc(customer)}</p>' if customer else ""
    contents = "".join(f"<li>{esc(SECTIONS[n][0])}</li>" for n in check_sections(sections))
    meta = table([], [["Scenario", scenario.name], ["Input", origin or "—"],
                      ["Date", date.isoformat()], ["Generated by", f"aisize {__version__}"]],
                 css="meta")
    return Html(f'<section class="aisize-title"><h1>{esc(title or DEFAULT_TITLE)}</h1>{who}'
                f'<p class="scenario">{esc(scenario.name)}</p>{meta}'
                f'<h3>Contents</h3><ol class="contents">{contents}</ol></section>')


def section(name: str, scenario: Scenario, selected: Iterable[str]) -> Html | None:
    """Section ``name`` with its numbered heading, or None when it is not selected."""
    order = check_sections(selected)
    if name not in order:
        return None
    heading, render = SECTIONS[name]
    return Html(f'<section class="aisize-section" id="{esc(name)}">'
                f"<h2>{order.index(name) + 1}. {esc(heading)}</h2>{render(scenario)}</section>")
