"""Reports: every preset to HTML and PDF, offline HTML, parameter checks before execution,
and a failing cell reported with the partial notebook kept."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import nbformat
import pytest

from aisize import catalog
from aisize import format as F
from aisize.report import NOTEBOOK, ParameterError, ReportError, render
from aisize.report import cli as report_cli
from aisize.report import html as report_html
from aisize.report import pdf as report_pdf
from aisize.report import parameters as P
from aisize.plan import plan
from aisize.report import markup as M
from aisize.report import sections as S
from aisize.report.training_sections import time_range_days
from aisize.scenario import dumps, preset, preset_names
from aisize.present.findings import finding_text

PRESETS = preset_names()
APPENDIX = "xe9680-genai"  # rendered with the accuracy appendix (--accuracy-appendix); the others without
INJECTION = "\"; import os; os.system('touch /tmp/pwned') #"
needs_poppler = pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils not installed")


def squash(text: str) -> str:
    """Text without whitespace, so a table cell wrapped over two lines still matches."""
    return re.sub(r"\s+", "", text)


def expected_params(model_id: str) -> str:
    """The report's rounding of a model's parameter count, from the catalog (the API's value)."""
    m = catalog.model(model_id)
    n = m.published_params if isinstance(m, catalog.Transformer) else m.params
    return M.number(n)


needs_chromium = pytest.mark.skipif(report_pdf.chromium_path() is None,
                                    reason="Chromium not installed (or hidden by AISIZE_CHROMIUM)")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Each preset rendered once to HTML (or the exception it raised), with the browser hidden:
    an HTML report never needs Chromium."""
    out = tmp_path_factory.mktemp("reports")
    results = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(report_pdf.CHROMIUM_ENV, "/nonexistent/chromium")
        for name in PRESETS:
            try:
                results[name] = render(preset=name, fmt="html", out_dir=out, customer="ACME Corp",
                                       keep_notebook=True, accuracy_appendix=name == APPENDIX)
            except Exception as exc:  # reported by the test for that preset
                results[name] = exc
    return results


@pytest.fixture(scope="module")
def printed(rendered):
    """Each preset's HTML report printed to PDF, with the footer ``render`` gives it."""
    pdfs = {}
    for name in PRESETS:
        html_path = result_for(rendered, name).html_path
        footer = " · ".join((S.DEFAULT_TITLE, "ACME Corp", preset(name).name))
        pdfs[name] = report_pdf.to_pdf(html_path, html_path.with_suffix(".pdf"), footer=footer)
    return pdfs


def result_for(rendered, name):
    result = rendered[name]
    if isinstance(result, Exception):
        pytest.fail(f"preset {name} did not render: {result}")
    return result


@pytest.fixture
def no_papermill(monkeypatch):
    """Fail the test if papermill is asked to execute anything."""
    import papermill

    def refuse(*args, **kwargs):
        raise AssertionError("papermill was called although the parameters are invalid")

    monkeypatch.setattr(papermill, "execute_notebook", refuse)


@pytest.mark.slow
@needs_chromium
@needs_poppler
@pytest.mark.parametrize("name", PRESETS)
def test_preset_prints_to_pdf(printed, name):
    pdf_path = printed[name]
    scenario = preset(name)
    assert pdf_path.read_bytes().startswith(b"%PDF-")
    # -raw keeps the text in content order, so a wrapped table cell stays together
    text = subprocess.run(["pdftotext", "-raw", str(pdf_path), "-"], capture_output=True,
                          text=True, check=True).stdout
    flat = squash(text)
    assert squash(scenario.name) in flat
    assert "ACMECorp" in flat
    for w in scenario.workloads:
        assert squash(w.name) in flat, w.name
        if getattr(w, "model", None):  # key figure: the catalog's parameter count, as rounded
            assert squash(expected_params(w.model)) in flat, (w.model, expected_params(w.model))
    info = subprocess.run(["pdfinfo", str(pdf_path)], capture_output=True, text=True,
                          check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))
    # a title page and one page or more per section, not a runaway layout: the sections that every
    # report has (about 27 pages: the assumptions list every serving and training constant, the
    # accuracy appendix charts the Megatron-Core runs and every serving set), and up to two more per
    # workload (its tables and charts) and per service through the day (its day, tenants and pools); the cost
    # section's price table runs onto a page of its own where the storage is priced by its units (29)
    p = plan(scenario)
    sections = [n for n in S.SECTIONS if S.SECTIONS[n][2](S.context(scenario))]
    fleet_services = len(p.fleet.services) if p.fleet is not None else 0
    assert len(sections) + 1 <= pages <= 29 + 2 * len(scenario.workloads) + 2 * fleet_services, pages
    assert "Page1of" in flat  # the footer
    # key figures: the planner's values in the report's rounding
    assert squash(f"The plan needs {F.plural(p.gpus, 'GPU')} in {F.plural(p.servers, 'server')}") in flat
    for t in p.training:
        line = f"{t.name}: {M.days(t.training_days)} days on {F.plural(t.gpus, 'GPU')}"
        line += f", target {t.target_days:g} days" if t.target_days is not None else ""
        r = time_range_days(t)
        if r is not None:  # the planner's time-to-train range (published MFUs, measured spread)
            line += f" (range {M.days(t.days_low)} to {M.days(t.days_high)} days)"
        assert squash(line) in flat, line
    for f in p.findings:
        text = "assumptions used:" if finding_text(f).startswith("assumptions used:") else finding_text(f)
        assert squash(text) in flat, text
    for heading in ("Billofmaterials", "Assumptions", "Sources"):
        assert heading in flat
    assert ("Appendix:accuracy" in flat) == (name == APPENDIX)  # on request only


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_html_is_offline(rendered, name):
    html = result_for(rendered, name).html_path.read_text(encoding="utf-8")
    assert report_html.remote_references(html) == []
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"""(src|href)\s*=\s*["']?[^"'>]*cdn""", html, re.IGNORECASE)
    assert "<script" not in html.lower() and "mathjax" not in html.lower()
    assert "Content-Security-Policy" in html
    # the sources are shown as plain text, never as links
    scenario = preset(name)
    for _, record in S.used_rows(scenario):
        assert record.source in unescape(html)
    assert "<a " not in html


@pytest.mark.slow
@needs_chromium
def test_nothing_is_wider_than_the_printed_page(rendered):
    """A table or chart wider than A4 between the margins makes Chromium shrink every page to fit."""
    from playwright.sync_api import sync_playwright

    mm = 210 - sum(float(report_pdf.MARGIN[k].removesuffix("mm")) for k in ("left", "right"))
    width = round(mm / 25.4 * 96)  # CSS pixels
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(report_pdf.chromium_path()),
                                     args=report_pdf.CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": width, "height": 1000})
        for name in PRESETS:
            page.goto(result_for(rendered, name).html_path.as_uri())
            page.add_style_tag(content=report_pdf.PRINT_CSS)
            page.emulate_media(media="print")
            wide = page.evaluate("""(w) => [...document.querySelectorAll('table, figure, .aisize-facts')]
                .filter(e => e.getBoundingClientRect().right > w + 1)
                .map(e => (e.querySelector('caption') || e).textContent.slice(0, 60))""", width)
            assert wide == [], (name, wide)
        browser.close()


@pytest.mark.slow
def test_charts_are_inline_svg(rendered):
    html = result_for(rendered, "xe9680-genai").html_path.read_text(encoding="utf-8")
    assert '<figure class="aisize-figure"><svg' in html
    assert "<img" not in html


def test_html_is_what_nbconvert_s_own_exporter_writes(rendered):
    """The report's exporter skips nbconvert's BeautifulSoup pass over the page. On a report that pass
    only writes the page out again (no ``<img>`` to give an ``alt``, no cell to make focusable), so
    the two pages agree once ours goes through the same parser."""
    from bs4 import BeautifulSoup

    nb = nbformat.read(result_for(rendered, "xe9680-genai").notebook_path, as_version=4)
    ours, _ = report_html.exporter().from_notebook_node(nb)
    stock, _ = report_html.exporter(stock=True).from_notebook_node(nb)
    assert ours != stock  # the pass was skipped
    assert str(BeautifulSoup(ours, features="html.parser")) == stock


@pytest.mark.slow
def test_executed_notebook_is_kept(rendered):
    result = result_for(rendered, "xe9680-genai")
    nb = nbformat.read(result.notebook_path, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "ACME Corp" in injected[0].source


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)
    assert any("parameters" in c.metadata.get("tags", []) for c in code)


def test_declared_parameters_are_typed():
    assert P.declared_parameters(NOTEBOOK) == {"scenario_path": "str", "preset": "str",
                                               "title": "str", "customer": "str",
                                               "sections": "list", "compare_path": "str"}


@pytest.mark.parametrize("values, match", [
    ({"colour": "red"}, "unknown parameter 'colour'"),
    ({"x=1;import os": 1}, "not a plain identifier"),
    ({"__import__('os')": 1}, "not a plain identifier"),
    ({"title": 5}, "title: expected text"),
    ({"title": INJECTION}, "title: .* not allowed"),
    ({"customer": "a\nb"}, "customer: .* not allowed"),
    ({"sections": "summary"}, None),  # a comma-separated string is a list
    ({"sections": [1, 2]}, r"sections\[0\]: expected text"),
    ({"sections": {"a": 1}}, "sections: expected a list"),
])
def test_validate_names_and_types(values, match):
    if match is None:
        assert P.validate(values, NOTEBOOK) == {"sections": ["summary"]}
    else:
        with pytest.raises(ParameterError, match=match):
            P.validate(values, NOTEBOOK)


@pytest.mark.parametrize("value, type_name, expected", [
    ("3", "int", 3), (2.0, "int", 2), ("0.5", "float", 0.5), (1, "float", 1.0),
    ("true", "bool", True), (False, "bool", False), (["a", "b"], "list", ["a", "b"]),
])
def test_coerce_to_declared_type(value, type_name, expected):
    assert P.coerce("p", value, type_name) == expected


@pytest.mark.parametrize("value, type_name", [
    ("nan", "float"), (float("inf"), "float"), (True, "int"), (2.5, "int"), ("yes", "bool"),
    (object(), "float"), (b"bytes", "str"), ([["nested"]], "list"), ("x" * 2000, "str"),
])
def test_coerce_rejects(value, type_name):
    with pytest.raises(ParameterError, match="^validate failed: p"):
        P.coerce("p", value, type_name)


@pytest.mark.parametrize("kwargs, match", [
    (dict(preset=INJECTION), "preset"),
    (dict(preset="no-such-preset"), "does not exist"),
    (dict(title=INJECTION), "title"),
    (dict(customer=["ACME"]), "customer: expected text"),
    (dict(sections=["summary", "nope"]), "sections: unknown"),
    (dict(sections=[]), "sections: none chosen"),
    (dict(name="../escape"), "name: '../escape' must be a plain file name"),
    (dict(name="sub/report"), "name"),
    (dict(name=".."), "name"),
    (dict(fmt="docx"), "format"),
    (dict(scenario_path="missing.yaml"), "does not exist"),
    (dict(scenario_path="/etc/passwd"), "must be a .yaml/.yml/.json file"),
    (dict(scenario_path="a.yaml", preset="xe9680-genai"), "not both"),
])
def test_bad_parameters_rejected_before_execution(tmp_path, monkeypatch, no_papermill, kwargs, match):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(ParameterError, match=match):
        render(out_dir=out, **kwargs)
    assert not list(tmp_path.rglob("*.ipynb")) and not list(tmp_path.rglob("*.html"))
    assert not Path("/tmp/pwned").exists()


def test_invalid_scenario_file_rejected_before_execution(tmp_path, no_papermill):
    bad = tmp_path / "bad.yaml"
    bad.write_text(dumps(preset("xe9680-genai")).replace("llama-3-8b", "llama-99"))
    with pytest.raises(ParameterError, match="llama-99"):
        render(scenario_path=bad, out_dir=tmp_path / "out")
    assert not list(tmp_path.rglob("*.ipynb"))


def test_output_path_stays_inside(tmp_path):
    assert P.output_path(tmp_path, "report-1.v2", ".pdf") == (tmp_path / "report-1.v2.pdf").resolve()
    for name in ("../x", "a/b", "a\\b", "", ".hidden", "x" * 200, "a..b"):
        with pytest.raises(ParameterError, match="name"):
            P.output_path(tmp_path, name, ".pdf")


@pytest.mark.slow
def test_failing_cell_is_reported_and_partial_notebook_kept(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    nb.cells = [params, nbformat.v4.new_code_cell("ok = 'first cell ran'"),
                nbformat.v4.new_code_cell("raise RuntimeError('boom for ' + preset)\nnever = 1"),
                nbformat.v4.new_code_cell("after = 'not reached'")]
    failing = tmp_path / "failing.ipynb"
    nbformat.write(nb, failing)
    out = tmp_path / "out"
    with pytest.raises(ReportError) as info:
        render(preset="xe9680-genai", fmt="html", out_dir=out, notebook=failing)
    err = info.value
    assert err.step == "execute"
    assert err.cell_index == 2 and err.cell_line == "raise RuntimeError('boom for ' + preset)"
    assert "RuntimeError: boom for xe9680-genai" in str(err) and "cell 2" in str(err)
    assert err.notebook_path == (out / "xe9680-genai.ipynb").resolve() and err.notebook_path.is_file()
    kept = nbformat.read(err.notebook_path, as_version=4)
    assert any(o.get("output_type") == "error" for c in kept.cells for o in c.get("outputs", []))
    assert not (out / "xe9680-genai.html").exists()


def test_sections_escape_user_text():
    scenario = preset("xe9680-genai")
    page = S.title_page(scenario, title="<b>T</b>", customer="O'Brien & <script>x</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page and "O&#x27;Brien &amp;" in page
    assert str(S.table(["h"], [["<i>x</i>"]])).count("&lt;i&gt;") == 1


def test_assumptions_show_every_policy_and_who_set_it():
    scenario = preset("hpe-weka-resnet")  # sets mfu: 0.35
    html = S.assumptions_table(scenario)
    for field in type(scenario.policies).model_fields:
        assert S.POLICY_TEXT[field][0].replace("&", "&amp;") in html
    row = re.search(r"<tr><td>Model FLOPs utilisation \(MFU\)</td><td>(.*?)</td><td>(.*?)</td>", html)
    assert row.groups() == ("35 %", "scenario")
    assert "<td>Target GPU utilisation</td><td>90 %</td><td>default</td>" in html


def test_section_selection_and_numbering():
    scenario = preset("xe9680-genai")
    assert S.section("summary", scenario, ["sources"]) is None
    assert "<h2>2. Sources</h2>" in S.section("sources", scenario, ["sources", "summary"])
    with pytest.raises(ValueError, match="sections: unknown"):
        S.section("sources", scenario, ["bogus"])


def test_sections_that_do_not_apply_are_skipped_and_not_numbered():
    ctx = S.context(preset("llama3-70b-pretrain"))  # training only: no inference section
    chosen = ["executive", "training", "inference", "storage"]
    assert S.section("inference", ctx, chosen) is None
    assert "<h2>3. Data path and storage</h2>" in S.section("storage", ctx, chosen)
    contents = S.title_page(ctx, sections=chosen)
    assert "<li>Training: memory and time</li>" in contents and "<li>Inference</li>" not in contents


def test_remote_reference_detector():
    found = report_html.remote_references(
        '<script src="https://cdn.example/x.js"></script><link href=//cdn.example/a.css>'
        '<style>@import "http://x/y.css"; div{background:url( https://x/i.png )}</style>')
    assert len(found) == 4
    assert report_html.remote_references('<p>see https://example.com/doc.pdf</p><a href="#x">') == []
    assert report_html.remote_references(  # attributes without quotes, srcset, inline style, SVG, script
        '<img src=//x/a.png srcset="a.png 1x, https://x/b.png 2x"><div style="background:url(//x/y)">'
        '<svg><image xlink:href="https://x/z"/></svg><script>fetch("https://x/q")</script>') == [
        "src=//x/a.png", "srcset=https://x/b.png", "style: //x/y", "xlink:href=https://x/z",
        "<script>: https://x/q"]


QUOTED_SNIPPET = ('Their portal embeds <img src="https://cdn.example.com/logo.png"> and links '
                  "<a href='http://example.com/terms'>terms</a> (quoted as text).")


@pytest.mark.parametrize("escaped", [
    '<p>Their portal embeds &lt;img src="https://cdn.example.com/logo.png"&gt;</p>',
    "<p>&lt;a href='http://example.com/terms'&gt;terms&lt;/a&gt;</p>",
    "<td>&lt;style&gt;@import url(https://x/y.css)&lt;/style&gt;</td>",
])
def test_urls_quoted_as_text_are_not_references(escaped):
    assert report_html.remote_references(escaped) == []


@pytest.mark.slow
def test_a_description_quoting_html_with_urls_renders(tmp_path):
    """A description that quotes an HTML snippet once failed the remote-reference check."""
    scenario_file = tmp_path / "quoted.yaml"
    scenario_file.write_text(dumps(preset("xe9680-genai").model_copy(update={"description": QUOTED_SNIPPET})))
    result = render(scenario_path=scenario_file, fmt="html", out_dir=tmp_path / "out", sections=["summary"])
    html = result.html_path.read_text(encoding="utf-8")
    assert report_html.remote_references(html) == []
    assert "&lt;img src=" in html and "https://cdn.example.com/logo.png" in html


def test_cli_rejects_bad_name(tmp_path, capsys, no_papermill):
    parser = argparse.ArgumentParser(prog="aisize")
    report_cli.add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", "--preset", "xe9680-genai", "--out", str(tmp_path),
                              "--name", "../../etc/x"])
    assert args.func(args) == report_cli.EXIT_USAGE
    assert "name: '../../etc/x' must be a plain file name" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_cli_html_with_progress(tmp_path, capsys):
    scenario_file = tmp_path / "my scenario.yaml"
    scenario_file.write_text(dumps(preset("llama3-70b-pretrain")))
    parser = argparse.ArgumentParser(prog="aisize")
    report_cli.add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", str(scenario_file), "--format", "html", "--out",
                              str(tmp_path / "out"), "--title", "Sizing for O'Brien & Co",
                              "--sections", "summary,sources"])
    assert args.func(args) == 0
    captured = capsys.readouterr()
    steps = [line.split()[2] for line in captured.err.splitlines()]
    assert steps == ["validate", "execute", "HTML", "total"]
    html_path = Path(captured.out.strip())
    assert html_path == (tmp_path / "out" / "my-scenario.html").resolve()
    html = html_path.read_text(encoding="utf-8")
    assert "Sizing for O'Brien &amp; Co" in html and "my scenario.yaml" in html
    assert "1. Scenario summary" in html and "2. Sources" in html and "Assumptions</h2>" not in html


@pytest.mark.slow
@needs_chromium
@needs_poppler
@pytest.mark.parametrize("name", ["xe9680-genai", "shared-cluster"])
def test_report_has_cost_placement_and_timeline(printed, name):
    from aisize.report.cluster_sections import usd

    text = subprocess.run(["pdftotext", "-raw", str(printed[name]), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = squash(text)
    p = plan(preset(name))
    for heading in ("Placementandtimeline", "Timeline", "Packing", "Costperyear", "Capitalbybill-of-materialsline",
                    "Operatingcost"):
        assert heading in flat, heading
    assert squash(usd(p.cost.capital_usd)) in flat and squash(usd(p.cost.usd_per_gpu_hour)) in flat
    if p.job_streams:
        assert "Jobqueue" in flat and "Waitvs GPUs".replace(" ", "") in flat


@pytest.mark.slow
@needs_chromium
def test_render_both_writes_html_and_pdf(tmp_path):
    result = render(preset="xe9680-genai", fmt="both", out_dir=tmp_path, customer="ACME Corp",
                    sections=["summary"])
    assert result.html_path.is_file() and result.pdf_path.read_bytes().startswith(b"%PDF-")
    # the folder holds what a customer gets: the executed notebook only with keep_notebook (--keep-notebook)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xe9680-genai.html", "xe9680-genai.pdf"]
    assert result.notebook_path is None


def test_the_accuracy_appendix_is_on_request():
    from aisize.report import customer_sections
    from aisize.report.contents import HEADINGS

    assert customer_sections(None, False) == [n for n in HEADINGS if n != "accuracy"]
    assert customer_sections(None, True)[-1] == "accuracy" and len(customer_sections(None, True)) == len(HEADINGS)
    assert customer_sections(["summary"], False) == ["summary"]
    assert customer_sections(["summary"], True) == ["summary", "accuracy"]
    parser = argparse.ArgumentParser(prog="aisize")
    report_cli.add_report_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", "--preset", "xe9680-genai"])
    assert not args.accuracy_appendix and not args.keep_notebook
    args = parser.parse_args(["report", "--preset", "xe9680-genai", "--accuracy-appendix", "--keep-notebook"])
    assert args.accuracy_appendix and args.keep_notebook


def test_customer_report_leaves_the_appendix_out(rendered):
    other = next(n for n in PRESETS if n != APPENDIX)
    assert "Appendix: accuracy" not in result_for(rendered, other).html_path.read_text(encoding="utf-8")
    assert "Appendix: accuracy" in result_for(rendered, APPENDIX).html_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["pdf", "both"])
def test_pdf_without_a_browser_is_refused_before_execution(tmp_path, monkeypatch, no_papermill, fmt):
    monkeypatch.setenv(report_pdf.CHROMIUM_ENV, str(tmp_path / "no-chromium"))
    with pytest.raises(ParameterError, match="PDF needs Chromium, not found at .*no-chromium.*--format html"):
        render(preset="xe9680-genai", fmt=fmt, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
