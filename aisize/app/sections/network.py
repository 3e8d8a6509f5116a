"""Network: the scale-out link and fabric shape, the fabrics sized, and a collective-time explorer.

The explorer times one collective (:func:`aisize.network.collective_seconds`,
ring) of a chosen payload over a chosen GPU count at the plan's scale-out rate
per GPU; by default a 7B model's BF16 gradients (14 GB) over 8 GPUs. Where the
plan buys no compute fabric, the cards, a note and the explorer's heading say so
(the plan's one reason, which the bill of materials reads too) and the rate is
named as the NICs' own.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
import pandas as pd

from aisize import catalog, charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.network import OPS, collective_seconds
from aisize.present.network_text import unused_nics_sentence
from aisize.units import GB

PAYLOAD_GB_DEFAULT = 14.0  # 7e9 parameters x 2 bytes (BF16 gradients)
GPUS_MIN, GPUS_MAX, GPUS_DEFAULT = 2, 256, 8
CHART_GPUS = np.arange(GPUS_MIN, GPUS_MAX + 1)  # every count the slider offers
RADIX = (32, 36, 40, 48, 64, 128)
FABRIC_ROWS = {"endpoints": "ports offered (with growth spare)", "tiers": "tiers", "leaves": "leaf switches",
               "spines": "spine switches", "cores": "core switches", "switches": "switches in all",
               "endpoint_cables": "endpoint cables (one a port in use)", "leaf_spine_cables": "leaf-spine cables",
               "spine_core_cables": "spine-core cables"}
LINKS_ROW = "links bought (optics, cables)"  # the BOM's line: NetworkPlan.compute_links / storage_links


def result_seconds(op: str, payload_gb: float, gpus, link_bytes_per_s: float):
    """Time of collective ``op`` of ``payload_gb`` GB over ``gpus`` GPUs at ``link_bytes_per_s`` per GPU [s]."""
    return collective_seconds(op, payload_gb * GB, gpus, link_bytes_per_s)


def format_seconds(seconds: float) -> str:
    """A duration for display (:func:`aisize.format.duration`): '612 ms', '1.23 s'."""
    return str(F.duration(seconds))


def why_html(n) -> str:
    """The plan's reason for compute NICs no fabric connects, shown beside the cards ("" when every NIC is cabled)."""
    if n.unused_nics is None:
        return ""
    text = f"{unused_nics_sentence(n)}. The storage network carries data and model loads."
    return f"<p class='aisize-note' data-key='network.unused_nics'>{html.escape(text)}</p>"


def explorer_note(n) -> str:
    """What rate the collective explorer uses: the fabric's, or, with none bought, the NICs' own."""
    if n.no_compute_fabric:
        return (f"at the compute NICs' rate per GPU ({F.rate(n.scaleout_per_gpu_bytes_per_s)}): what a fabric on "
                f"these NICs would give; this plan buys none, so its collectives stay inside one server "
                f"({n.scaleup_link}, {F.rate(n.scaleup_per_gpu_bytes_per_s)} per GPU)")
    return "at the plan's scale-out rate per GPU"


class NetworkSection(Section):
    title = "Network"

    def __init__(self, state):
        links = [l for l in catalog.links if not l.id.startswith(("pcie", "nvlink", "infinity"))]
        self.link = K.dropdown("Scale-out link", [("server's own compute NIC", "")] + [
            (f"{l.id} ({l.bandwidth_per_direction_bytes_per_s * 8 / 1e9:g} Gbit/s)", l.id) for l in links],
            None, "Compute fabric link per NIC (InfiniBand or Ethernet)")
        self.radix = K.dropdown("Switch radix [ports]", list(RADIX), 64, "Ports per fabric switch")
        self.oversub = K.float_slider("Oversubscr. [down:up]", 1.0, 1.0, 8.0, 0.5,
                                      "Leaf downlinks per uplink; 1 is non-blocking", fmt=".1f")
        self.op = K.dropdown("Collective", list(OPS), "all-reduce", "Collective operation (ring algorithm)")
        self.gpus = K.int_slider("GPUs [count]", GPUS_DEFAULT, GPUS_MIN, GPUS_MAX, 1, "GPUs taking part")
        self.payload = K.log_slider("Payload [GB]", PAYLOAD_GB_DEFAULT, 0.01, 2000, "Buffer size: the gradients "
                                    "for all-reduce (parameters x bytes each)")
        self.figures, self.fabric, self.result = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.why, self.explorer_heading = widgets.HTML(), K.heading("Collective time")
        self.chart = K.ChartSlot()
        super().__init__(state)
        self.bind(self.link, lambda: ("hardware", "scale_out_link"), lambda v: v or None)
        self.bind(self.radix, lambda: ("hardware", "switch_radix"), int)
        self.bind(self.oversub, lambda: ("hardware", "oversubscription"), float)
        for knob in (self.op, self.gpus, self.payload):
            knob.observe(lambda _: self.active and self._explore(self.state.plan), names="value")
        left = K.controls_column([self.link, self.radix, self.oversub, self.error])
        explorer = K.controls_column([self.op, self.gpus, self.payload, self.result])
        self.view.children = [widgets.HBox([left, K.figures_column([self.figures, self.why])]), K.heading("Fabrics"),
                              self.fabric, self.explorer_heading,
                              widgets.HBox([explorer, K.figures_column([self.chart.box])])]
        self.quietly(self.sync)

    def link_bytes_per_s(self, plan=None) -> float:
        """Scale-out rate per GPU, per direction, of the plan [B/s]."""
        return (plan or self.state.plan).network.scaleout_per_gpu_bytes_per_s

    def sync(self) -> None:
        hw = self.state.data["hardware"]
        K.assign(self.link, "value", hw["scale_out_link"] or "")
        K.assign(self.radix, "value", hw["switch_radix"])
        K.assign(self.oversub, "value", hw["oversubscription"])

    def update(self, plan) -> None:
        n = plan.network
        idle = n.no_compute_fabric
        K.assign(self.figures, "value", K.cards([
            K.card("network.compute_link", "Compute link", n.compute_link, ""),
            K.card("network.compute_nics", "Compute NICs (unused)" if idle else "Compute NICs", n.compute_nics,
                   "NICs", f"{n.compute_nics_per_server} per server"),
            K.card("network.per_gpu", "NIC rate per GPU (no fabric)" if idle else "Scale-out per GPU",
                   F.rate(n.scaleout_per_gpu_bytes_per_s), "",
                   "Per direction" + ("; no compute fabric is bought, so no traffic crosses servers" if idle else "")),
            K.card("network.scaleup", "Scale-up per GPU", F.rate(n.scaleup_per_gpu_bytes_per_s), "",
                   f"{n.scaleup_link}, per direction, {n.scaleup_domain} GPUs a domain (tensor-parallel traffic)"),
            K.card("network.compute_switches", "Compute switches", n.compute_fabric["switches"], "switches"),
            K.card("network.storage_nics", "Storage NICs", n.storage_nics, "NICs", n.storage_link),
            K.card("network.storage_switches", "Storage switches", n.storage_fabric["switches"], "switches")]))
        K.assign(self.why, "value", why_html(n))
        K.assign(self.explorer_heading, "value", K.heading("Collective time", explorer_note(n)).value)
        rows = [{"": label, "compute fabric": n.compute_fabric[k], "storage fabric": n.storage_fabric[k]}
                for k, label in FABRIC_ROWS.items()]
        rows.append({"": LINKS_ROW, "compute fabric": n.compute_links, "storage fabric": n.storage_links})
        K.assign(self.fabric, "value", K.table(pd.DataFrame(rows)))
        self._explore(plan)

    def _explore(self, plan) -> None:
        op, gpus, payload = self.op.value, self.gpus.value, float(self.payload.value)
        link = self.link_bytes_per_s(plan)
        try:
            seconds = float(result_seconds(op, payload, gpus, link))
        except ValueError as error:
            K.assign(self.result, "value", K.error_html(str(error)))
            return
        whose = " (the NICs' rate; no compute fabric bought)" if plan.network.no_compute_fabric else ""
        K.assign(self.result, "value",
                 f"<p>{html.escape(op)} of {F.bytes_si(payload * GB)} over {gpus} GPUs at "
                 f"{F.rate(link)} per GPU{whose}: "
                 f"<b class='aisize-result'>{format_seconds(seconds)}</b></p>")
        frame = pd.DataFrame({"gpus": CHART_GPUS, "seconds": result_seconds(op, payload, CHART_GPUS, link)})
        self.chart.show(op, lambda: charts.collective_time(frame, op, gpus),
                        data=charts.collective_time_rows(frame, gpus), title=f"{op} time vs GPUs")
