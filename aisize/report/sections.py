"""Report sections as HTML fragments: what the report notebook's cells display.

Each section is a renderer taking a :class:`~aisize.report.context.ReportContext`
(the scenario and its plan) and returning :class:`Html` (shown by Jupyter
through ``_repr_html_``). Renderers live in small modules by area; this module
holds the registry :data:`SECTIONS`, the numbering and the title page. Every
text from a user or a file is escaped; sources are plain text, never links, so
a report makes no request to any host.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from pathlib import Path

from aisize import __version__
from aisize.report.accuracy import accuracy
from aisize.report.cluster_sections import cost, jobqueue, placement
from aisize.report.compare import compare
from aisize.report.contents import DEFAULT_TITLE, HEADINGS, check_sections
from aisize.report.context import ReportContext, as_context
from aisize.report.fleet_sections import fleet
from aisize.report.infra_sections import network, storage
from aisize.report.kvtier_sections import applies as kv_tiers_apply
from aisize.report.kvtier_sections import kv_tiers
from aisize.report.markup import Html, drawing_ahead, esc, figure, number, table
from aisize.report.plan_sections import bom, executive
from aisize.report.queue_sections import blender, queueing
from aisize.report.serving_sections import inference
from aisize.report.scenario_sections import (POLICY_TEXT, assumptions_table, model_params, sources_table,
                                             summary, used_rows, workloads_table)
from aisize.report.training_sections import training
from aisize.scenario import DEFAULT_PRESET, Scenario, load
from aisize.scenario import preset as load_preset

__all__ = ["SECTIONS", "DEFAULT_TITLE", "Html", "esc", "table", "figure", "number", "model_params",
           "POLICY_TEXT", "used_rows", "summary", "workloads_table", "assumptions_table", "sources_table",
           "check_sections", "section", "title_page", "context", "load_scenario", "origin", "setup",
           "ReportContext"]


def _always(ctx: ReportContext) -> bool:
    return True


# name -> (renderer, applies): a section that does not apply (no inference workloads for "inference") is
# left out of the contents and the numbering. Names, order and headings: aisize.report.contents.
_RENDERERS: dict[str, tuple[Callable[[ReportContext], Html], Callable[[ReportContext], bool]]] = {
    "executive": (executive, _always),
    "compare": (compare, lambda c: c.other is not None),
    "summary": (lambda c: summary(c.scenario), _always),
    "bom": (bom, _always),
    "training": (training, lambda c: bool(c.plan.training)),
    "inference": (inference, lambda c: bool(c.plan.inference)),
    "kv-tiers": (kv_tiers, kv_tiers_apply),
    "placement": (placement, _always),
    "jobqueue": (jobqueue, lambda c: bool(c.plan.job_streams)),
    "fleet": (fleet, lambda c: c.plan.fleet is not None),
    "storage": (storage, _always),
    "network": (network, _always),
    "queueing": (queueing, _always),
    "blender": (blender, _always),
    "cost": (cost, _always),
    "assumptions": (lambda c: assumptions_table(c.scenario, c.plan.assumptions, c.plan), _always),
    "sources": (lambda c: sources_table(c.scenario), _always),
    "accuracy": (accuracy, _always),
}
# name -> (heading, renderer, applies), in report order
SECTIONS: dict[str, tuple[str, Callable[[ReportContext], Html], Callable[[ReportContext], bool]]] = {
    name: (heading, *_RENDERERS[name]) for name, heading in HEADINGS.items()}


def load_scenario(scenario_path: str = "", preset: str = DEFAULT_PRESET) -> Scenario:
    """The scenario a report is about: the file if a path is given, else the preset."""
    return load(scenario_path) if scenario_path else load_preset(preset or DEFAULT_PRESET)


def context(scenario: Scenario, compare_path: str = "") -> ReportContext:
    """The scenario and its plan, computed once for all sections (and scenario B's plan to compare with)."""
    ctx = as_context(scenario)
    if compare_path:
        from aisize.plan import plan

        ctx = ReportContext(ctx.scenario, ctx.plan, plan(load(compare_path)))
    return ctx


def origin(scenario_path: str = "", preset: str = "") -> str:
    """How the title page names the input: the file's name, or the preset."""
    return Path(scenario_path).name if scenario_path else f"preset {preset or DEFAULT_PRESET}"


def setup() -> None:
    """Make any chart a notebook cell displays render as static SVG (the default loads a CDN), and start
    the helper process that draws the report's charts (:mod:`aisize.report.svg`; a no-op when the
    notebook started it before its imports). Altair's schema checks of each chart are off: the tests
    check every chart builder's output, and vl-convert still refuses a bad spec. (The accuracy
    appendix's tables and charts come from :mod:`aisize.validation.store` once computed.)"""
    import altair as alt

    from aisize.report import svg

    svg.start()
    alt.renderers.enable("svg")
    alt.utils.schemapi.disable_debug_mode()


def _order(ctx: ReportContext, selected: Iterable[str]) -> list[str]:
    return [n for n in check_sections(selected) if SECTIONS[n][2](ctx)]


def title_page(scenario: Scenario | ReportContext, *, title: str = DEFAULT_TITLE, customer: str = "",
               origin: str = "", sections: Iterable[str] = tuple(SECTIONS),
               date: datetime.date | None = None) -> Html:
    """The cover page: title, customer, scenario, date, version and contents."""
    ctx = as_context(scenario)
    date = date or datetime.date.today()
    who = f'<p class="customer">Prepared for {esc(customer)}</p>' if customer else ""
    contents = "".join(f"<li>{esc(SECTIONS[n][0])}</li>" for n in _order(ctx, sections))
    meta = table([], [["Scenario", ctx.scenario.name], ["Input", origin or "—"],
                      ["Date", date.isoformat()], ["Generated by", f"aisize {__version__}"]],
                 css="meta")
    return Html(f'<section class="aisize-title"><h1>{esc(title or DEFAULT_TITLE)}</h1>{who}'
                f'<p class="scenario">{esc(ctx.scenario.name)}</p>{meta}'
                f'<h3>Contents</h3><ol class="contents">{contents}</ol></section>')


def section(name: str, scenario: Scenario | ReportContext, selected: Iterable[str]) -> Html | None:
    """Section ``name`` with its numbered heading, or None when it is not selected or does not apply."""
    ctx = as_context(scenario)
    order = _order(ctx, selected)
    if name not in order:
        return None
    heading, render, _ = SECTIONS[name]
    with drawing_ahead() as place:  # the helper draws each chart while the section builds the rest
        body = place(render(ctx))
    return Html(f'<section class="aisize-section" id="{esc(name)}">'
                f"<h2>{order.index(name) + 1}. {esc(heading)}</h2>{body}</section>")
