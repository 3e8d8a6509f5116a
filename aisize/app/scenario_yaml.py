"""The scenario's YAML for the page's download link, rebuilt only where a field changed.

Every edit changes the scenario, and its whole YAML (``aisize.scenario.dumps``: 0.5 ms of a slider move) was
written again for the link. A block mapping's YAML is its keys' texts one after another, each written alone at the
same column, and a block sequence's under a mapping key (PyYAML writes it unindented) its items'. So the text of
each top-level field and of each workload is kept with the field's ``repr`` (type-exact: 1, 1.0 and True differ
in YAML) and written again only when that changes: a slider move writes one workload or one section. Where the
emitter's text would not be the sum of its pieces, the whole is written as ``dumps`` writes it: a container met
twice (PyYAML writes an anchor and an alias) or a piece that ends its document ("...").
``tests/test_app_scenario_yaml.py`` compares the text with ``dumps`` for every preset and edits of every kind.
"""

from __future__ import annotations

import yaml

# as aisize.scenario.io.dumps writes it (libyaml's emitter where PyYAML has it)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(data) -> str:
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def _shared(data, seen: set) -> bool:
    """Whether a list or dict occurs twice under ``data`` (by identity: PyYAML's anchors)."""
    if isinstance(data, (dict, list)):
        if id(data) in seen:
            return True
        seen.add(id(data))
        return any(_shared(v, seen) for v in (data.values() if isinstance(data, dict) else data))
    return False


class ScenarioYaml:
    """``text(fields)``: ``yaml.dump`` of a scenario's dict (``to_dict``) as ``dumps`` writes it, from kept pieces."""

    def __init__(self):
        self._kept: dict[tuple, tuple[str, str]] = {}  # where -> (repr of the value, its YAML)

    def _piece(self, where: tuple, value, data) -> str:
        key = repr(value)
        kept = self._kept.get(where)
        if kept is None or kept[0] != key:
            kept = self._kept[where] = (key, _dump(data))
        return kept[1]

    def text(self, fields: dict) -> str:
        if not isinstance(fields, dict) or not fields or _shared(fields, set()):
            return _dump(fields)
        out = []
        for name, value in fields.items():
            if name == "workloads" and isinstance(value, list) and value:
                out.append(_dump({name: None}).replace(" null\n", "\n"))
                out += [self._piece((name, k), w, [w]) for k, w in enumerate(value)]
            else:
                out.append(self._piece((name,), value, {name: value}))
        if any(piece.endswith("...\n") for piece in out[:-1]) or not all(piece.endswith("\n") for piece in out):
            return _dump(fields)
        return "".join(out)
