"""The comparison report: two scenarios side by side (``aisize compare A B --report DIR``).

The same report notebook renders it, with ``compare_path`` set to scenario B:
the "compare" section then shows :func:`aisize.present.comparison.comparison_table`
(differences highlighted) and a chart of B's changes, followed by A's own sections.
"""

from __future__ import annotations

from pathlib import Path

from aisize import charts
from aisize.present.comparison import change_shown, comparison_table, difference_shown, shown
from aisize.report.context import ReportContext
from aisize.report.markup import Html, block, esc, figure, para

SECTIONS = ("compare", "executive", "bom", "placement", "jobqueue", "cost", "assumptions", "sources")


def compare(ctx: ReportContext) -> Html:
    """A (this report's scenario) beside B, rows that differ highlighted, the better plan named."""
    a, b = ctx.plan, ctx.other
    t = comparison_table(a, b)
    ca, cb = t.columns[3], t.columns[4]
    rows = []
    for r in t.to_dict("records"):
        cells = [r["metric"], r["unit"], shown(r[ca], r["unit"]), shown(r[cb], r["unit"]),
                 difference_shown(r["difference"], r["unit"]), change_shown(r["change"]), r["better"]]
        cls = ' class="differs"' if r["differs"] else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in ("Figure", "Unit", ca, cb, "B - A", "Change", "Better"))
    style = "<style>tr.differs td {background:#fff4d6; font-weight:600}</style>"
    body = (f'{style}<table class="aisize-table numeric compare"><caption>A: {esc(a.scenario_name)}; '
            f"B: {esc(b.scenario_name)} (highlighted: the figures that differ)</caption><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")
    differs = int(t["differs"].sum())
    intro = para(f"{differs} of {len(t)} figures differ. The sections after this one describe A.")
    chart = figure(charts.comparison(t), "Change of B from A for every numeric figure that differs, coloured by the "
                                     "plan that is better on it.") if t["change"].notna().any() else ""
    return Html(intro + block(Html(body)) + block(chart))


def render_comparison(a_path, b_path, *, out_dir=".", fmt: str = "html", customer=None) -> list[Path]:
    """Render the comparison report of scenario files ``a_path`` and ``b_path``; returns the written paths."""
    from aisize.report import render
    from aisize.report.parameters import slug

    name = f"compare-{slug(Path(a_path).stem)}-{slug(Path(b_path).stem)}"[:100]
    result = render(scenario_path=a_path, fmt=fmt, out_dir=out_dir, title="AI cluster comparison report",
                    customer=customer, sections=list(SECTIONS), name=name, compare_path=b_path)
    return [p for p in (result.html_path, result.pdf_path) if p is not None]
