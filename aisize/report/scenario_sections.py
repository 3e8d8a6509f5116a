"""Sections about the scenario itself: summary, workloads, assumptions and sources.

Built from the scenario, the plan's assumption list and the catalog only. Every
text from a user or a file is escaped; sources are plain text, never links. Models
and hardware rows the scenario brings itself (a config.json, inline fields, its own
accelerators, servers and storage) are named as such, with their source.
"""

from __future__ import annotations

from aisize import catalog
from aisize import format as F
# the assumptions' wording lives in the planner (its findings say them too); the report re-exports it
from aisize.present.assumption_text import (DEFAULT_TEXT, POLICY_TEXT, assumption_rows,  # noqa: F401
                                         assumption_sentences, calibration_label)
from aisize.report.markup import Html, esc, facts, figure, note, number, table
from aisize.report.provenance import OWN_LABEL, hardware_record, model_origin, own_row_figures, own_rows
from aisize.scenario import Scenario
from aisize.scenario.model import DataPrep, Inference, Training

_LABELS = {"full": "full", "lora": "LoRA", "qlora": "QLoRA", "adamw": "AdamW",
           "sgd-momentum": "SGD + momentum", "adam-8bit": "8-bit Adam", "lion": "Lion",
           "adafactor": "Adafactor"}


def model_params(model) -> float:
    """Parameter count of a workload's model (catalog id, config.json or inline fields): the model
    card's figure (a config's architecture count), or the total for non-LLMs."""
    return model_origin(model).params


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
                  if w.target_days is not None else F.plural(w.gpus, "GPU"))
        return kind, work, target
    if isinstance(w, Inference):
        kind = f"Inference: {w.weight_precision} weights, {w.kv_precision} KV cache"
        load = (f"{w.requests_per_s:g} requests/s" if w.requests_per_s is not None
                else f"{w.concurrency:g} users in flight")
        work = f"{load}, {w.prompt_tokens:,} prompt → {w.output_tokens:,} output tokens"
        target = f"TTFT ≤ {w.ttft_target_ms:,g} ms, TPOT ≤ {w.tpot_target_ms:,g} ms"
        return kind, work, target
    if w.kind == "job-stream":
        rate = f"{w.jobs_per_day:g} jobs/day" if w.jobs_per_day is not None else f"{w.jobs_per_week:g} jobs/week"
        work = f"{rate} of {F.plural(w.gpus_per_job, 'GPU')} × {w.hours_per_job:g} h ({w.hours_distribution})"
        target = (f"{w.wait_statistic} wait ≤ {w.target_wait_hours:g} h" if w.target_wait_hours is not None else
                  f"utilisation ≤ {w.target_utilisation:.0%}" if w.target_utilisation is not None else
                  F.plural(w.gpus, "GPU") if w.gpus != "rest" else "the rest of its pool")
        return "Job stream (training/fine-tuning jobs)", work, target
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
        rows.append([w.name, w.team, kind, model_origin(model).name if model else "—",
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
    base = alt.Chart(data).encode(x=alt.X("params_billion:Q", title="Parameters (billions)"),
                                  y=alt.Y("workload:N", title=None, sort=None))
    bars = base.mark_bar(color="#1f4e79")
    labels = base.mark_text(align="left", dx=4, color="#1d2733").encode(text=alt.Text("label:N"))
    chart = (bars + labels).properties(width=420, height=28 * len(data))
    return figure(chart, "Model size of each workload")


def _entry(record, is_own: bool) -> str:
    return record.name + (f" ({OWN_LABEL})" if is_own else "")


def summary(scenario: Scenario) -> Html:
    """Description, key facts, hardware choices and the workloads table."""
    hw = scenario.hardware
    own = own_rows(scenario)
    (server, own_server), (store, own_store) = (hardware_record(scenario, "servers", hw.server, own),
                                                hardware_record(scenario, "storage", hw.storage, own))
    gpu, own_gpu = hardware_record(scenario, "accelerators", server.accelerator, own)
    fixed_gpus = sum(w.gpus for w in scenario.workloads if isinstance(w, Training) and w.gpus)
    teams = sorted({w.team for w in scenario.workloads})
    cards = facts([("Workloads", f"{len(scenario.workloads)}"), ("Teams", f"{len(teams)}"),
                   ("GPUs per server", f"{server.gpus} × {gpu.name}"),
                   ("GPUs fixed by the scenario", f"{fixed_gpus:,}" if fixed_gpus else "none")])
    paragraphs = "".join(f"<p>{esc(p)}</p>" for p in scenario.description.splitlines() if p.strip())
    link = hw.scale_out_link or server.compute_nic_link
    link_name = catalog.links[link].name if link in catalog.links else link
    hardware = table(["Choice", "Entry"], [
        ["Server", _entry(server, own_server)], ["Accelerator", _entry(gpu, own_gpu)],
        ["Scale-out link", link_name + ("" if hw.scale_out_link else " (the server's compute NIC)")],
        ["Shared storage", _entry(store, own_store)]], caption="Hardware", css="hardware")
    return Html(f"{paragraphs}{cards}{hardware}{workloads_table(scenario)}{_model_chart(scenario)}")


def assumptions_table(scenario: Scenario, assumptions: dict | None = None, plan=None) -> Html:
    """Every value the plan uses: policies (set by the scenario or defaulted), then every planner
    and engine default from ``assumptions`` (the plan's list; computed from the policies if None); one no
    workload of ``plan`` reads says so in its why."""
    rows, defaults_rows = assumption_rows(scenario, assumptions, plan)
    policies = table(["Assumption", "Value", "Set by", "Why it matters"], rows,
                     caption="Scenario policies", css="assumptions")
    defaults = table(["Assumption", "Value", "Set by", "Why it matters"], defaults_rows,
                     caption="Planner and engine defaults", css="assumptions")
    return Html(f"{policies}{defaults}{own_hardware_table(scenario)}" + note(
        "Defaults are named constants of aisize's modules; change a policy in the scenario file "
        "to override it."))


def own_hardware_table(scenario: Scenario) -> Html:
    """The accelerators, servers and storage systems the scenario brings, with their figures and source."""
    rows = own_row_figures(scenario)
    if not rows:
        return Html("")
    return table(["Table", "Id", "Figures as given", "Source"],
                 [[t, id_, figures, Html(f'<span class="source">{esc(src)}</span>')]
                  for t, id_, figures, src in rows],
                 caption="Hardware given by the scenario (not from aisize's catalog)", css="assumptions")


def used_rows(scenario: Scenario) -> list[tuple[str, object]]:
    """(table name, record) for every catalog row the scenario uses, without repeats; a row the
    scenario brings itself is named "<table> (scenario's own row)"."""
    hw = scenario.hardware
    own = own_rows(scenario)
    server = hardware_record(scenario, "servers", hw.server, own)[0]
    gpu = hardware_record(scenario, "accelerators", server.accelerator, own)[0]
    wanted = [("servers", hw.server), ("accelerators", server.accelerator),
              ("links", gpu.scaleup_link), ("links", server.compute_nic_link),
              ("links", server.storage_nic_link), ("links", hw.scale_out_link),
              # PCIe carries tensor-parallel traffic only where the GPU has no NVLink-class link
              ("links", None if gpu.scaleup_bidirectional_bytes_per_s else f"pcie-gen{gpu.pcie_gen}-x16"),
              ("storage", hw.storage)]
    for w in scenario.workloads:
        model = getattr(w, "model", None)
        if isinstance(model, str):  # a config.json or inline model is listed in models_table
            m = catalog.model(model)
            wanted.append(("transformers" if isinstance(m, catalog.Transformer) else "other_models",
                           model))
            wanted.append(("datasets", getattr(m, "dataset", None)))
        wanted.append(("datasets", getattr(w, "dataset", None)))
    found = {}
    for name, id_ in wanted:
        if id_ and (name, id_) not in found:
            record, is_own = hardware_record(scenario, name, id_, own)
            found[(name, id_)] = (f"{name} ({OWN_LABEL})" if is_own else name, record)
    return [(label, record) for label, record in found.values() if record is not None]


def models_table(scenario: Scenario) -> Html:
    """Where each workload's model came from: a catalog row, a config.json (its model_type) or
    fields written in the scenario, with the source."""
    rows = []
    for w in scenario.workloads:
        if getattr(w, "model", None):
            o = model_origin(w.model)
            rows.append([w.name, o.name, o.origin, Html(f'<span class="source">{esc(o.source)}</span>')])
    return table(["Workload", "Model", "Where it came from", "Source"], rows,
                 caption="Models", css="sources") if rows else Html("")


def sources_table(scenario: Scenario) -> Html:
    """Where each model came from, then the source of every hardware, link and dataset figure the
    scenario uses, as plain text."""
    rows = [[name.replace("_", " "), r.id, r.name, Html(f'<span class="source">{esc(r.source)}</span>')]
            for name, r in used_rows(scenario)]
    return Html(models_table(scenario) + table(["Table", "Id", "Entry", "Source"], rows,
                                               caption="Catalog and scenario rows", css="sources"))
