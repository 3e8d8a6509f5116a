"""Inference services, the data path and shared storage, and the network fabrics."""

from __future__ import annotations

from aisize import catalog, charts
from aisize.present.network_text import unused_nics_sentence
from aisize.report.context import ReportContext
from aisize.report.markup import DASH, Html, block, facts, figure, gb, note, pct, per_s, rate, sig, table
from aisize.report.provenance import hardware_record


def _name(table_name: str, id_: str) -> str:
    record = catalog.TABLES[table_name].get(id_)
    return record.name if record is not None else id_


def _constraint_rows(s) -> list[list]:
    need = {"read": s.read_bytes_per_s, "write": s.write_bytes_per_s, "iops": s.read_iops + s.write_iops,
            "capacity": s.capacity_bytes["raw_bytes"]}
    supply = {"read": s.supply_read_bytes_per_s, "write": s.supply_write_bytes_per_s, "iops": s.supply_iops,
              "capacity": s.supply_capacity_bytes}
    show = {"read": rate, "write": rate, "iops": per_s, "capacity": gb}
    label = {"read": "Read bandwidth", "write": "Write bandwidth", "iops": "IO operations",
             "capacity": "Raw capacity"}
    rows = []
    for k in ("read", "write", "iops", "capacity"):
        u = s.utilisation.get(k)
        rows.append([label[k] + (" (binds)" if k == s.binding else ""), show[k](need[k]),
                     show[k](supply[k]) if supply[k] else "not rated", pct(u) if u is not None else DASH,
                     f"{s.units_by[k]:g}"])
    return rows


def storage(ctx: ReportContext) -> Html:
    """Demand vs supply of the shared storage, capacity, and each training job's data path."""
    s = ctx.plan.storage
    cards = facts([("Storage", _name("storage", s.system)), ("Sized as", f"{s.units:g} × {s.scope}"),
                   ("Binding constraint", s.binding), ("Read / write (average)",
                                                       f"{rate(s.read_bytes_per_s)} / {rate(s.write_bytes_per_s)}")])
    constraints = table(["Constraint", "Need (average)", "Supply", "Utilisation", f"{s.scope.capitalize()}s "
                         "needed"], _constraint_rows(s), caption="Demand against supply", css="numeric")
    why = (f"Supply is {s.units:g} {s.scope}{'' if s.units == 1 else 's'} of "
           f"{_name('storage', s.system)}; a {s.scope}-scoped record "
           + {"system": "gives its rating to the whole cluster.",
              "node": "gives its rating per GPU server.",
              "unit": "is sized in building blocks until every constraint is met.",
              "drive": "is sized in drives until every constraint is met."}.get(s.scope, "."))
    if s.write_assumed:
        why += " The record publishes no write rate: writes are assumed at a share of the read rate."
    cap = s.capacity_bytes
    cap_t = table(["Kept", "Capacity"], [["Datasets", gb(cap["datasets_bytes"])],
                                         ["Checkpoints (retained)", gb(cap["checkpoints_bytes"])],
                                         ["Data preparation", gb(cap["data_preparation_bytes"])],
                                         ["Model repository", gb(cap["model_repository_bytes"])],
                                         ["KV-cache tier", gb(cap.get("kv_cache_bytes", 0.0))],
                                         ["Usable total", gb(cap["usable_bytes"])],
                                         ["Raw (after data protection)", gb(cap["raw_bytes"])]],
                  caption="Capacity", css="numeric narrow")
    jobs = [[j.name, rate(j.ideal_read_bytes_per_s), rate(j.storage_share_bytes_per_s),
             rate(j.network_feed_bytes_per_s), pct(j.link_utilisation), pct(j.stall_fraction),
             f"{sig(j.bottleneck_gpus)}" if j.bottleneck_gpus is not None else "scales per server"]
            for j in s.jobs]
    jobs_t = table(["Training job", "Read need (100 % busy)", "Storage share", "Network feed", "Link use",
                    "Data stall", "Storage limit [GPUs]"], jobs, caption="Data path of each training job",
                   css="numeric")
    out = [cards, block(constraints, note(why)), block(cap_t)]
    if any(cap[k] for k in charts.CAPACITY_ITEMS):
        out.append(block(figure(charts.capacity_breakdown(cap), "What the shared storage keeps, against the "
                                "raw capacity it needs after data protection.")))
    if jobs:
        out.append(block(jobs_t, note("A job stalls when its storage share or its servers' links deliver "
                                      "less than its GPUs read at 100 % busy; the storage limit is the GPU "
                                      "count at which the storage's read supply runs out.")))
    return Html("".join(out))


def _fabric_rows(n) -> list[list]:
    c, st = n.compute_fabric, n.storage_fabric

    def both(key, fmt=lambda v: f"{v:,.0f}"):
        return [fmt(c[key]), fmt(st[key])]

    cables = [f"{x:,.0f}" for x in (n.compute_links, n.storage_links)]  # the BOM's links (growth ports get none)
    return [["Link", f"{_name('links', n.compute_link)} ({n.compute_link})",
             f"{_name('links', n.storage_link)} ({n.storage_link})"],
            ["NICs per server", f"{n.compute_nics_per_server:g}", f"{n.storage_nics_per_server:g}"],
            ["NICs in total", f"{n.compute_nics:,.0f}", f"{n.storage_nics:,.0f}"],
            ["Ports offered (with growth spare)", *both("endpoints")], ["Tiers", *both("tiers")],
            ["Leaf switches", *both("leaves")],
            ["Spine switches", *both("spines")], ["Core switches", *both("cores")],
            ["Switches in total", *both("switches")], ["Links bought (optics, cables)", *cables],
            ["Endpoints a two-tier fabric takes", *both("max_endpoints_two_tier")]]


def network(ctx: ReportContext) -> Html:
    """Scale-up link, compute fabric and storage network, and how busy the training data keeps the links."""
    p, n = ctx.plan, ctx.plan.network
    hw = ctx.scenario.hardware
    scaleup = (f"{_name('links', n.scaleup_link)}: {rate(n.scaleup_per_gpu_bytes_per_s)} per direction per GPU"
               + (f", {n.scaleup_domain} GPUs per domain"
                  if hardware_record(ctx.scenario, "accelerators", p.accelerator)[0].scaleup_link
                  else " (no NVLink: tensor-parallel traffic crosses it)"))
    cards = facts([("NIC rate per GPU (no fabric)" if n.no_compute_fabric else "Scale-out per GPU",
                    rate(n.scaleout_per_gpu_bytes_per_s)),
                   ("Compute NICs", f"{n.compute_nics:,.0f}"), ("Storage NICs", f"{n.storage_nics:,.0f}"),
                   ("Switches", f"{n.compute_fabric['switches'] + n.storage_fabric['switches']:,.0f}")])
    fabric = table(["", "Compute fabric", "Storage network"], _fabric_rows(n),
                   caption="Fabrics (fat tree)", css="numeric fabric")
    links = [[j.name, rate(j.network_feed_bytes_per_s), pct(j.link_utilisation)]
             for j in p.storage.jobs]
    links_t = table(["Training job", "Link feed of its servers", "Used by training data"], links,
                    caption="Training data on the links", css="numeric narrow") if links else Html("")
    return Html(cards + block(table([], [["Scale-up (inside a server)", scaleup],
                                               ["Switch radix", f"{hw.switch_radix} ports"],
                                               ["Oversubscription", f"{hw.oversubscription:g}:1"]],
                                    css="meta"))
                + block(fabric, note("Leaf-spine (and core) counts from the switch radix and the "
                                     "oversubscription; each GPU server's NICs are endpoints."
                                     + (f" {unused_nics_sentence(n)}." if n.unused_nics else "")))
                + block(links_t))
