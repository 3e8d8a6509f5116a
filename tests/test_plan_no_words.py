"""The planner writes no sentences (issue 47 item 4: formulas -> planner, no text -> presentation).

Every f-string in aisize/plan/*.py is parsed with ast; one is allowed only where its words are an error's
(inside ``raise``, inside a ``checks.*`` call, whose ``why`` is worded only past a limit, or in a
``check_``/``_check`` function, which only refuses input), where it is an identifier (no space in its literal
text: a field path "workloads.{i}.pool", a key "ttft{suffix}_seconds", a link id "pcie-gen{n}-x16"), or where
:data:`ALLOWED` names its function with why. Anything else fails: the sentence belongs in aisize.present, worded
from a typed value (see aisize/plan/service_notes.py and aisize/present/service_text.py for the pattern).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLAN = Path(__file__).resolve().parents[1] / "aisize" / "plan"

# (module, function) -> why its f-strings stay. Labels first (data a customer reads as a name), then the words
# still built in the planner (each needs a typed value and a wording in present, and is listed so
# that it cannot spread; remove the entry when the module is worded).
ALLOWED = {
    # labels: identifiers of a bill-of-materials line, a table cell or a time slot, not sentences
    ("bom.py", "bom_table"): "BOM item labels ('server X (pool)', 'compute NIC <link>'): the line's name in the "
                             "customer's bill of materials and the exported CSV's item column",
    ("bom.py", "placement_table"): "the 'holds' cell of the placement table: 'workload: GPUs' per workload (a label)",
    ("costing.py", "_capital"): "priced BOM item labels ('server X (pool)', 'compute fabric switch <id>'): the "
                                "names of the BOM's lines, by which a customer matches a price to a line",
    ("timeline.py", "hours"): "a time slot's name ('06-18 h', 'phase, 06-18 h'): a label of the day's pieces",
    ("timeline.py", "labels"): "a time slot's name ('phase, 06-18 h'): a label of the day's pieces",
    ("timeline.py", "build_timeline"): "the timeline table's 'hours' cell ('6-18 h'): a label",
    ("service_day.py", "scale_up_reads"): "a storage workload's name ('<service> scale-ups'): a label",
    ("storage.py", "*"): "storage workloads' names ('<job> checkpoints', '<service> model loading'): labels",
    ("kvtiers.py", "*"): "a KV tier's path label ('8 x <link>', 'N x <drive> per server, then the host links'): "
                         "the tier table's path cell",
    # error words: built beside the raise that uses them
    ("errors.py", "*"): "the words of plan()'s errors (the module's purpose: error messages naming the workload)",
    ("pools.py", "*"): "Candidate.why: the words of plan()'s error for a workload no pool fits",
    ("placement.py", "*"): "the words of the placement's refusals (errors raised by plan())",
    ("cluster.py", "_candidates"): "the reasons joined into plan()'s error for a workload no pool fits",
}


def _enclosing(tree):
    """Each node's enclosing function name ('' at module level) and whether it is in an error context."""
    out = {}

    def visit(node, func, error):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            name = getattr(node, "name", "<lambda>")
            func, error = name, error or name.startswith(("check_", "_check"))
        if isinstance(node, ast.Raise):
            error = True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "checks"):
            error = True
        out[id(node)] = (func, error)
        for child in ast.iter_child_nodes(node):
            visit(child, func, error)

    visit(tree, "", False)
    return out


def _is_identifier(node: ast.JoinedStr) -> bool:
    return not any(isinstance(v, ast.Constant) and any(c.isspace() for c in str(v.value)) for v in node.values)


def words_in_plan():
    """(module, function, line, text) of every f-string the rules above do not allow."""
    found, used = [], set()
    for path in sorted(PLAN.glob("*.py")):
        tree = ast.parse(path.read_text())
        where = _enclosing(tree)
        specs = {id(n.format_spec) for n in ast.walk(tree)  # a format spec ('.3g') is an f-string too
                 if isinstance(n, ast.FormattedValue) and n.format_spec is not None}
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr) or id(node) in specs:
                continue
            func, error = where[id(node)]
            if error or _is_identifier(node):
                continue
            key = next((k for k in ((path.name, func), (path.name, "*")) if k in ALLOWED), None)
            if key:
                used.add(key)
                continue
            found.append((path.name, func, node.lineno, ast.unparse(node)[:120]))
    return found, used


def test_the_planner_writes_no_sentences():
    found, _ = words_in_plan()
    assert not found, ("sentences built in aisize/plan (make the value typed, word it in aisize.present; or, for a "
                       "label, list it in ALLOWED with why):\n" + "\n".join(f"  {m}:{n} in {f}(): {t}"
                                                                     for m, f, n, t in found))


def test_every_allowance_is_still_needed():
    _, used = words_in_plan()
    stale = set(ALLOWED) - used
    assert not stale, f"ALLOWED names functions with no f-string left to allow: {sorted(stale)}; remove them"


def test_the_rule_catches_a_sentence(tmp_path, monkeypatch):
    """The check can fail: a planner module with a sentence outside an error is found; one in a raise is not."""
    (tmp_path / "x.py").write_text("def f(n):\n    note = f'the fleet holds {n} replicas'\n"
                                   "    if n < 0:\n        raise ValueError(f'n={n} is below 0')\n"
                                   "    return note, f'workloads.{n}.pool'\n")
    monkeypatch.setattr(__import__(__name__), "PLAN", tmp_path)
    found, _ = words_in_plan()
    assert [(m, f, line) for m, f, line, _ in found] == [("x.py", "f", 2)]
