"""Plain-text summary of a plan (the CLI's default output) and parsing of ``--vary`` specs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from aisize import format as F
from aisize.plan.bom import placement_groups, timeline_table
from aisize.present.cost_text import verdict
from aisize.present.jobstreams import job_streams_table
from aisize.present.network_text import bom_table
from aisize.present.export import cost_table, workloads_table
from aisize.present.figures import gpus_busy
from aisize.present.findings import finding_text
from aisize.units import GB, GiB


def _money(x: float | None) -> str:
    return str(F.usd(float("inf") if x is None else x))


def cost_lines(p) -> list[str]:
    """The cost headline: capital, operating, $/GPU-hour, per run, per M tokens, break-even."""
    c, busy = p.cost, gpus_busy(p)
    out = [f"  capital {_money(c.capital_usd)}, operating {_money(c.operating_usd_per_year)}/year, "
           f"{_money(c.usd_per_gpu_hour)} per GPU-hour over {c.life_years:g} years "
           f"({busy.label}: {F.pct(busy.value)})",
           f"  {verdict(c)}"]  # buy or rent against the same GPU rented, with the break-even (present.cost_text)
    out += [f"  {t['workload']}: {_money(t['usd'])} per run ("
            + ("unbounded" if t["gpu_hours"] is None else F.sig(t["gpu_hours"])) + " GPU-hours)" for t in c.training]
    out += [f"  {i['workload']}: {_money(i['usd_per_million_tokens'])} per million output tokens at the planned "
            f"load ({_money(i['usd_per_million_tokens_at_capacity'])} at full capacity)" for i in c.inference]
    out += [f"  {j['workload']}: {_money(j['usd_per_job'])} per job, {_money(j['usd_per_job_with_idle'])} with "
            "the partition's idle time" for j in c.job_streams]
    if c.assumed:
        out.append(f"  prices that are assumptions to replace: {', '.join(c.assumed)}")
    return out


def _text(frame, title_column: str | None = None) -> str:
    """A table as aligned text within the terminal's width, human headers and formatted cells
    (:func:`aisize.format.text_table`): wider tables wrap their text cells or become one block per row."""
    return F.text_table(frame, title_column=title_column)


def _finding(f) -> str:
    return f"  [{f.severity}] {f.area}: {finding_text(f)}"


def _memory_cell(i) -> str:
    """A service's memory per GPU [GiB]; disaggregated: both pools, labelled (the plan's memory items are a decode
    GPU's; a prefill GPU of another shape holds its own weights, which may be the larger)."""
    decode = i.memory_per_gpu_bytes["total_bytes"] / GiB
    est = i.pools_estimate if i.serving_mode == "disaggregated" else None
    weights = est.weights_per_gpu_bytes if est is not None else {}
    if "prefill" not in weights:
        return F.num(decode)
    return f"decode {F.num(decode)}; prefill ≥ {F.num(weights['prefill'] / GiB)} (its weights alone)"


def _vs_target(value_s: float, target_s: float) -> str:
    return f"{F.num(value_s * 1e3)} / {F.num(target_s * 1e3)}"


def workload_tables(p) -> list[tuple[str, pd.DataFrame, dict]]:
    """The Summary's workloads, one compact table per kind with the columns a reader decides on, key ones first
    ((title, frame, headers)); every figure is the plan's (the full table of every figure is workloads.csv)."""
    out = []
    if p.training:
        out.append(("Training", pd.DataFrame([{
            "workload": t.name, "model": t.model, "gpus": t.gpus, "servers": t.servers,
            # the headline first, its range beside it (a range alone hid the figure every other surface states)
            "days": (f"{F.num(t.training_days)} ({F.span(t.days_low, t.days_high)})" if t.days_low != t.days_high
                     else F.num(t.training_days)),
            "mfu_assumed": t.mfu_assumed,
            "memory_per_gpu_gib": t.memory_bytes["total_bytes"] / GiB, "memory_fits": t.memory_fits,
            "goodput": t.goodput} for t in p.training]),
            {"days": "time [days] (range)"}))
    if p.inference:
        rows = [{"workload": i.name, "model": i.model, "gpus": i.gpus, "servers": i.servers,
                 "shape": F.serving_shape(i), "slo": i.slo_statistic,
                 "ttft": _vs_target(i.ttft_at_statistic_seconds, i.ttft_target_seconds),
                 "tpot": _vs_target(i.tpot_at_statistic_seconds, i.tpot_target_seconds),
                 "utilisation": i.utilisation, "memory_per_gpu_gib": _memory_cell(i), "memory_fits": i.fits}
                for i in p.inference]
        out.append(("Inference", pd.DataFrame(rows),
                    {"slo": "SLO statistic", "ttft": "TTFT / target [ms]", "tpot": "TPOT / target [ms]"}))
    if p.job_streams:
        out.append(("Job streams", pd.DataFrame([{
            "workload": j.name, "gpus": j.gpus, "servers": len(p.placement.assignment[j.name]["servers"]),
            "utilisation": j.utilisation, "wait_mean": F.duration(j.wait_mean_seconds),
            "wait_p95": F.duration(j.wait_p95_seconds)} for j in p.job_streams]),
            {"wait_mean": "wait, mean", "wait_p95": "wait, p95"}))
    if p.dataprep:
        out.append(("Data preparation", pd.DataFrame([{
            "workload": d.name, "read_gb_per_s": d.read_bytes_per_s / GB, "write_gb_per_s": d.write_bytes_per_s / GB}
            for d in p.dataprep]), {}))
    return out


def _used(s) -> str:
    """' (1.0 % used at the peak)': how much of what the units supply their sizing constraint uses."""
    u = s.utilisation.get(s.binding)
    return f" ({F.pct(u)} used at the peak)" if u is not None else ""


def summary_text(p) -> str:
    """A compact text report: totals, bill of materials, placement, timeline, cost, workloads, findings and
    the assumptions in sentences with their units; every line within :data:`aisize.format.WIDTH`."""
    from aisize.present.assumption_text import assumption_sentences

    s = p.storage
    pools = ", ".join(f"{x.servers} x {x.server}" + (f" ({x.name})" if len(p.pools) > 1 else "") for x in p.pools)
    lines = [f"{p.scenario_name}",
             f"  {F.plural(p.gpus, 'GPU')} ({p.accelerator}) in {pools}, {F.plural(p.racks, 'rack')}, "
             f"{F.power(p.power_watts)} at most; at most {F.plural(p.gpus_busy_peak, 'GPU')} busy at once",
             f"  storage {s.system} ({s.scope}): {F.plural(s.units, 'unit')}, sized by {s.binding}{_used(s)}; "
             f"read mean {F.rate(s.read_bytes_per_s)} (peak {F.rate(s.read_peak_bytes_per_s)}), write mean "
             f"{F.rate(s.write_bytes_per_s)} (peak {F.rate(s.write_peak_bytes_per_s)}), "
             f"{F.sig(s.read_iops + s.write_iops)} IO/s mean, "
             f"raw capacity needed {F.bytes_si(s.capacity_bytes['raw_bytes'])}"
             + (f", IO latency p95 {F.duration(s.latency_p95_seconds)}" if s.read_iops + s.write_iops > 0 else
                ", no IO at the mean: latency unloaded"), "", "Bill of materials"]
    lines.append(_text(bom_table(p)))
    lines += [f"  compute fabric: {p.network.fabric_reason}"]
    lines += ["", f"Placement ({p.placement.method})"]
    lines.append(_text(placement_groups(p)))
    lines += ["", "Timeline", _text(timeline_table(p))]
    if p.job_streams:
        lines += ["", "Job streams", _text(job_streams_table(p))]
    lines += ["", "Cost (USD)"] + cost_lines(p)
    lines += ["", _text(cost_table(p))]
    lines += ["", "Workloads", _text(workloads_table(p), title_column="workload")]
    lines += ["", "Findings"]
    lines += [_finding(f) for f in p.findings if f.area != "assumptions"]
    lines += [_finding(f) for f in p.findings if f.area == "assumptions" and f.code != "assumptions.used"]
    scenario = getattr(p, "scenario", None)
    if scenario is not None:
        lines += ["", "Assumptions (policies, then the planner's and engines' defaults)"]
        lines += [f"  {line}" for line in assumption_sentences(scenario, p.assumptions, p)]
    return F.fit_lines("\n".join(lines)) + "\n"


def _value(text: str):
    """A --vary value as YAML reads a scalar (1, 0.5, true, eth-10g); anything else stays text."""
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # e.g. "=" or "!!python/name:x": a plain string the scenario check will judge
    return v if isinstance(v, (int, float, str, bool)) else text


MAX_VARY = 1e15  # beyond every scenario field's range, and within float64's exact integers
MAX_VARY_VALUES = 1000  # plans in one sweep, as LO:HI:N or a comma list


def parse_vary(spec: str) -> tuple[str, list]:
    """``PATH=LO:HI:N`` (N values from LO to HI; whole numbers stay whole) or ``PATH=a,b,c``."""
    path, sep, rest = spec.partition("=")
    if not sep or not path or not rest:
        raise ValueError(f"--vary {spec!r} is not allowed: write PATH=LO:HI:N or PATH=a,b,c")
    if rest.count(":") == 2 and "," not in rest:
        lo, hi, n = (_value(x) for x in rest.split(":"))
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and abs(x) <= MAX_VARY
                   for x in (lo, hi)) or not isinstance(n, int) or not 1 <= n <= MAX_VARY_VALUES:
            raise ValueError(f"--vary {spec!r} is not allowed: LO and HI must be numbers from -1e15 to 1e15 "
                             f"and N a whole number from 1 to {MAX_VARY_VALUES}")
        values = np.linspace(lo, hi, n)
        if isinstance(lo, int) and isinstance(hi, int):
            return path, sorted({int(round(v)) for v in values})
        return path, [float(v) for v in values]
    values = [x.strip() for x in rest.split(",") if x.strip()]
    if len(values) > MAX_VARY_VALUES:
        raise ValueError(f"--vary {spec[:80]!r}...: {len(values)} values is not allowed: at most "
                         f"{MAX_VARY_VALUES} values (each is a whole plan)")
    return path, [_value(x) for x in values]
