"""Issue 49 (screenshot review, Network tab): the Network tab, the report and the bill of materials tell one
truth about the compute fabric: one link count (growth ports get no cable) and one reason for NICs with no
fabric, shown next to the cards."""

from __future__ import annotations

import re
from html import unescape

import pytest

from aisize.app import build_app
from aisize.app.sections import network as section
from aisize.network.fabric import Nics, cables, choose_fabric
from aisize.plan import plan
from aisize.plan.network import UnusedNics
from aisize.present.network_text import bom_table, unused_nics_sentence, unused_nics_text
from aisize.scenario import preset

PRESETS = ("xe9680-genai", "serving-at-scale", "agentic-coding")


@pytest.fixture(scope="module")
def plans():
    return {name: plan(preset(name)) for name in PRESETS}


@pytest.fixture(scope="module")
def app():
    return build_app(display=False)


def _bom(p, start: str):
    t = bom_table(p)
    [row] = t[t["item"].str.startswith(start)].to_dict("records")
    return row


def _fabric_row(table_html: str, label: str) -> tuple[float, float]:
    """(compute, storage) of one row of the Network tab's Fabrics table."""
    m = re.search(rf"<tr><td>{re.escape(label)}</td><td>([^<]*)</td><td>([^<]*)</td></tr>", unescape(table_html))
    assert m, label
    return tuple(float(v.replace(",", "")) for v in m.groups())


def test_growth_ports_get_no_cable():
    # 7 servers x 8 rails = 56 NIC ports; 25 % growth sizes the fabric for 56 x 1.25 = 70 ports on 64-port
    # switches; whatever design wins, only the 56 NICs in use are cabled today
    c = choose_fabric(7, Nics(8, 8, 50e9), 64, growth=0.25)
    assert c.ports_sized_for == 70 and c.tree.endpoints == 70
    assert c.tree.endpoint_cables == 56
    assert c.links == cables(c.tree) == 56 + c.tree.leaf_spine_cables + c.tree.spine_core_cables


def test_serving_at_scale_buys_the_links_its_fabric_table_shows(plans):
    # 10 DGX H100 x 8 NDR NICs = 80 endpoints, +25 % growth = 100 ports on 64-port switches: a two-tier
    # fat tree of ceil(100 / 32) = 4 leaves (32 down, 32 up), ceil(4 x 32 / 64) = 2 spines, 4 x 32 = 128
    # leaf-spine cables (Al-Fares et al. 2008, section 3); 80 + 128 = 208 links bought. The tab showed
    # "endpoint cables 100" (the growth ports as cables), 228 in all, against the BOM's 208.
    p = plans["serving-at-scale"]
    n = p.network
    assert (n.compute_nics, n.compute_fabric["endpoints"], n.compute_fabric["switches"]) == (80, 100, 6)
    assert n.compute_fabric["endpoint_cables"] == 80 and n.compute_fabric["leaf_spine_cables"] == 128
    assert n.compute_links == 208 == _bom(p, "compute fabric links")["quantity"]
    assert n.compute_nics_unused == 0 and n.unused_nics is None and unused_nics_text(n.unused_nics) == ""


@pytest.mark.parametrize("name", PRESETS)
def test_fabric_cables_equal_the_bom_and_the_priced_links(plans, name):
    p = plans[name]
    n = p.network
    assert cables(n.compute_fabric) == n.compute_links == _bom(p, "compute fabric links")["quantity"]
    priced = {x.item: x.quantity for x in p.cost.capital_lines}
    assert priced.get("compute fabric optics and cables", 0.0) == n.compute_links
    assert priced["storage fabric optics and cables"] == n.storage_links == cables(n.storage_fabric)


@pytest.mark.parametrize("name", ["xe9680-genai", "agentic-coding"])
def test_nics_without_a_fabric_carry_the_plans_reason(plans, name):
    # xe9680-genai: 2 XE9680 x 8 NICs = 16; agentic-coding: 15 DGX B200 x 8 = 120; neither spans servers
    p = plans[name]
    n = p.network
    assert n.compute_fabric["switches"] == 0 and n.compute_nics == {"xe9680-genai": 16, "agentic-coding": 120}[name]
    assert n.no_compute_fabric and n.compute_nics_unused == n.compute_nics
    assert n.unused_nics == UnusedNics(n.compute_nics, tuple(pool.name for pool in p.pools), True)
    why = unused_nics_text(n.unused_nics)
    assert why == "in the servers; unused: no workload spans servers, so no compute fabric is bought"
    assert _bom(p, "compute NIC")["item"] == f"compute NIC {n.compute_link} ({why})"  # the BOM words the same value
    assert _bom(p, "compute fabric links")["quantity"] == 0


@pytest.mark.parametrize("name", PRESETS)
def test_the_network_tab_shows_the_reason_and_the_bom_links(app, plans, name):
    app.preset.value = name
    tab = app.open_tab("Network")
    n = app.state.plan.network
    expected = plans[name].network
    assert (n.compute_links, n.unused_nics) == (expected.compute_links, expected.unused_nics)
    compute, storage = _fabric_row(tab.fabric.value, section.LINKS_ROW)
    assert (compute, storage) == (n.compute_links, n.storage_links)
    parts = [_fabric_row(tab.fabric.value, section.FABRIC_ROWS[k])[0]
             for k in ("endpoint_cables", "leaf_spine_cables", "spine_core_cables")]
    assert sum(parts) == _bom(plans[name], "compute fabric links")["quantity"]
    why = unescape(tab.why.value)
    if n.compute_fabric["switches"] == 0 and n.compute_nics > 0:
        assert f"{n.compute_nics:,} compute NICs {unused_nics_text(n.unused_nics)}" in why
        assert "NIC rate per GPU (no fabric)" in tab.figures.value
        assert "no compute fabric bought" in unescape(tab.result.value)
        assert "buys none" in unescape(tab.explorer_heading.value)
    else:
        assert why == "" and "Scale-out per GPU" in tab.figures.value
        assert "scale-out rate" in unescape(tab.explorer_heading.value)


@pytest.mark.parametrize("name", ["xe9680-genai", "serving-at-scale"])
def test_the_reports_network_section_reads_the_same_links_and_reason(plans, name):
    from aisize.report.context import ReportContext
    from aisize.report.infra_sections import network

    p = plans[name]
    n = p.network
    shown = unescape(str(network(ReportContext(preset(name), p))))
    assert f"<td>Links bought (optics, cables)</td><td>{n.compute_links:,.0f}</td><td>{n.storage_links:,.0f}</td>" \
        in shown
    if n.unused_nics:
        assert f"{unused_nics_sentence(n)}." in shown
    else:
        assert "compute NICs in the servers" not in shown


@pytest.mark.parametrize("unused, words", [
    (UnusedNics(16, ("default",), True), "no workload spans servers"),
    (UnusedNics(16, ("inference",), False), "no workload of pool inference spans servers"),
    (UnusedNics(32, ("inference", "batch"), False), "no workload of pools inference, batch spans servers")])
def test_the_wording_reproduces_the_planners_old_sentence(unused, words):
    # the sentence plan/network.py built before the reason was typed (issue 47 item 4)
    assert unused_nics_text(unused) == f"in the servers; unused: {words}, so no compute fabric is bought"


@pytest.mark.parametrize("name", PRESETS)
def test_the_json_keeps_the_reason_in_words(plans, name):
    import json

    from aisize.present.export import to_json

    n = plans[name].network
    data = json.loads(to_json(plans[name]))["network"]
    assert "unused_nics" not in data and data["compute_nics_unused"] == n.compute_nics_unused
    assert data["compute_nics_unused_reason"] == unused_nics_text(n.unused_nics)
