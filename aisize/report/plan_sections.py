"""Executive summary (headline figures and the plan's findings) and the bill of materials."""

from __future__ import annotations

import math

from aisize import catalog
from aisize import format as F
from aisize.present.findings import finding_text
from aisize.present.network_text import bom_table
from aisize.report.context import ReportContext
from aisize.report.markup import (DASH, Html, block, count, days, duration, esc, facts, note, para,
                                  sig, table)
from aisize.report.training_sections import time_range_days

SEVERITY_LABEL = {"problem": "Problem", "warning": "Warning", "info": "Note"}
ASSUMPTIONS_PREFIX = "assumptions used:"


def _name(table_name: str, id_: str) -> str:
    record = catalog.TABLES[table_name].get(id_)
    return record.name if record is not None else id_


def headline(ctx: ReportContext) -> str:
    """The plan in one sentence: GPUs, servers, racks, power, storage."""
    p = ctx.plan
    gpu, server = _name("accelerators", p.accelerator), _name("servers", p.server)
    s = p.storage
    return (f"The plan needs {F.plural(p.gpus, 'GPU')} in {F.plural(p.servers, 'server')} ({server}, {gpu}), "
            f"{count(p.racks)} rack{'' if p.racks == 1 else 's'} and {sig(p.power_watts / 1e3)} kW at "
            f"maximum server power, with {s.units:g} × {_name('storage', s.system)} for shared storage.")


def workload_lines(ctx: ReportContext) -> list[str]:
    """One sentence per GPU workload: training time (with its published-MFU range) or serving fleet."""
    lines = []
    for t in ctx.plan.training:
        r = time_range_days(t)
        spread = f" (range {days(r.low_days)} to {days(r.high_days)} days)" if r is not None else ""
        target = f", target {t.target_days:g} days" if t.target_days is not None else ""
        lines.append(f"{t.name}: {days(t.training_days)} days on {F.plural(t.gpus, 'GPU')}{target}{spread}.")
    for i in ctx.plan.inference:
        lines.append(f"{i.name}: {F.serving_shape(i)} = {F.plural(i.gpus, 'GPU')} for {i.requests_per_s:g} requests/s, "
                     f"p95 latency {duration(i.latency_p95_seconds)} (target "
                     f"{duration(i.latency_target_seconds)}).")
    for d in ctx.plan.dataprep:
        lines.append(f"{d.name}: runs on the shared storage (no GPUs).")
    return lines


def finding_rows(ctx: ReportContext) -> list[list]:
    """(severity, area, text) rows; the long list of assumptions is replaced by a pointer to its table."""
    rows = []
    for f in ctx.plan.findings:
        text = finding_text(f)
        if f.code == "assumptions.used":
            text = (f"{ASSUMPTIONS_PREFIX} {len(ctx.plan.assumptions)} values, each listed with its "
                    "value in the Assumptions section")
        badge = Html(f'<span class="sev sev-{esc(f.severity)}">{esc(SEVERITY_LABEL.get(f.severity, f.severity))}'
                     "</span>")
        rows.append([badge, f.area, text])
    return rows


def executive(ctx: ReportContext) -> Html:
    """Headline figures, what each workload gets, and every finding of the plan (problems first)."""
    p = ctx.plan
    longest = max((t.training_days for t in p.training), default=None)
    cards = [("GPUs", count(p.gpus)), ("Servers", count(p.servers)), ("Racks", count(p.racks)),
             ("Power [kW]", sig(p.power_watts / 1e3)),
             ("Storage units", f"{p.storage.units:g}"),
             ("Longest training [days]", days(longest) if longest is not None else DASH)]
    problems = sum(f.severity == "problem" for f in p.findings)
    warnings = sum(f.severity == "warning" for f in p.findings)
    verdict = (f"{problems} problem{'' if problems == 1 else 's'} and {warnings} "
               f"warning{'' if warnings == 1 else 's'} need attention." if problems or warnings
               else "No problems or warnings: the plan fits as sized.")
    items = "".join(f"<li>{esc(line)}</li>" for line in workload_lines(ctx))
    findings = table(["Severity", "Area", "Finding"], finding_rows(ctx), caption="Findings",
                     css="findings")
    return Html(f"{facts(cards)}{para(headline(ctx), verdict)}<ul class=\"aisize-list\">{items}</ul>"
                f"{findings}")


def _quantity(value, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if unit in ("kW", "TB"):
        return sig(value)
    return f"{value:,g}" if isinstance(value, float) and not value.is_integer() else count(value)


def _item(text: str, ctx: ReportContext) -> str:
    """The BOM's item with catalog ids spelled out: "GPU h100-sxm" -> "GPU H100 SXM5 80GB (h100-sxm)"."""
    p = ctx.plan
    ids = {p.accelerator: "accelerators", p.server: "servers", p.network.compute_link: "links",
           p.network.storage_link: "links", p.storage.system: "storage"}
    words = [f"{_name(ids[w], w)} ({w})" if w in ids else w for w in text.split(" ")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def bom(ctx: ReportContext) -> Html:
    """The bill of materials, then the share of each GPU workload."""
    df = bom_table(ctx.plan)
    rows = [[_item(r["item"], ctx), _quantity(r["quantity"], r["unit"]), r["unit"]]
            for r in df.to_dict("records")]
    main = table(["Item", "Quantity", "Unit"], rows, caption="Bill of materials", css="bom")
    names = [c for c in df.columns if c not in ("item", "quantity", "unit")]
    shares = df.dropna(subset=names, how="all") if names else df.iloc[0:0]
    per = [[name] + [_quantity(r[name], r["unit"]) for r in shares.to_dict("records")] for name in names]
    heads = ["Workload"] + [f"{_item(r['item'], ctx).split(' (')[0]} [{r['unit']}]"
                            for r in shares.to_dict("records")]
    split = table(heads, per, caption="Share of each GPU workload", css="bom-split") if per else Html("")
    return Html(block(main, note("Workloads share servers where they fit together or run at different times "
                                 "(see Placement and timeline), so their shares can add up to more than the "
                                 "installed GPUs. Switches and storage are shared.")) + block(split))
