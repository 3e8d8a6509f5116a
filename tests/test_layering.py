"""The package's layers (docs/DESIGN.md, ../shared/ARCHITECTURE.md): formulas never import presentation.

Formula packages (serving, training, memory, models, network, storage, queueing, cost, fleet, kernels,
catalog, calibrate and the base modules) may not import the presentation (app, charts, report, format,
cli, present), the planner, the scenario schema or validation; the planner may not import presentation
either (it writes no text: :mod:`aisize.present` turns a plan into words). The imports that break the rule
today are listed below with why, so that none is added unseen and each can be struck off when it is moved.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "aisize"
PRESENTATION = {"app", "charts", "report", "format", "cli", "present"}
FORMULAS = {"serving", "training", "memory", "models", "network", "storage", "queueing", "cost", "fleet",
            "kernels", "catalog", "calibrate", "units", "checks", "precision", "compute", "host", "cache", "lazy"}
ABOVE_FORMULAS = PRESENTATION | {"plan", "scenario", "validation"}

# (module, imported layer): why it is allowed for now. Each is debt, not design.
KNOWN = {
    ("calibrate/cli.py", "format"): "the `aisize calibrate` command's own text (a CLI inside calibrate)",
    ("fleet/profile.py", "scenario"): "reads a load-profile CSV through the scenario's one file gate (paths.py)",
    # The planner writes no text (issue 47 item 4): its findings, tables and bases are typed and worded in present.
    # What is left are errors it raises where the input enters, naming the refused value in the unit a user reads.
    ("plan/pools.py", "format"): "Candidate.why, the words of plan()'s error for a workload no pool fits (bytes_gpu)",
    ("plan/service_day.py", "format"): "the error refusing adapters that fill the KV cache names both in GiB",
}


def _imported_layers(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "aisize":
                out |= {a.name for a in node.names}
            elif node.module.startswith("aisize."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("aisize.")}
    return out


def _violations():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        top = rel.split("/")[0].removesuffix(".py")
        forbidden = ABOVE_FORMULAS if top in FORMULAS else (PRESENTATION if top == "plan" else set())
        for layer in sorted(_imported_layers(path) & forbidden):
            found[(rel, layer)] = True
    return found


def test_formulas_never_import_presentation_or_the_planner():
    new = sorted(set(_violations()) - set(KNOWN))
    assert not new, ("imports across layers (formulas -> presentation/planner/scenario, planner -> "
                     f"presentation): {new}; move the code down a layer, or list it in KNOWN with why")


def test_the_list_of_known_exceptions_holds_no_stale_entry():
    stale = sorted(set(KNOWN) - set(_violations()))
    assert not stale, f"these imports are gone: strike them from KNOWN: {stale}"


def test_the_check_sees_an_import_across_layers(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("from aisize import format as F\nimport aisize.report.cli\nfrom aisize.serving import estimate\n")
    assert _imported_layers(f) == {"format", "report", "serving"}
