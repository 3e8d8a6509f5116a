"""Names that follow the app's edits: a loaded scenario's title, description and workload names describe
what was loaded, so once a control changes what they describe they are marked or renamed (issue 49.4).

:func:`follow` derives them afresh from the scenario as loaded (``origin``) at each edit, so marks never
pile up and an edit undone takes its mark away. A workload whose name carries its model's size ("Chat
assistant 8B") takes the new model's size; any other name of a workload whose model changed is marked.
"""

from __future__ import annotations

import re

from aisize import catalog
from aisize.report.provenance import model_origin

MAX_NAME = 80  # aisize.scenario.model.Name
MAX_DESCRIPTION = 4000
NOT_IN_NAME = re.compile(r"[^\w .,:'()/+-]")  # what a scenario Name may not hold
SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?[bB](?!\w)")  # "8B", "70b", "1.5B" as a word
EDITED = "Edited in the app since it was loaded:"
HEADLINE = (("hardware", "server"), ("hardware", "storage"), ("hardware", "scale_out_link"))
SHOWN_PATHS = 4  # other changed settings named in the description


def clean(text: str, limit: int = MAX_NAME) -> str:
    """``text`` as a scenario name allows: its characters, at most ``limit`` long."""
    return re.sub(r"\s+", " ", NOT_IN_NAME.sub(" ", text)).strip()[:limit].strip()


def model_label(model) -> str:
    """A validated workload model in a few words: its catalog id, or where it came from."""
    if isinstance(model, str):
        return model
    o = model_origin(model)
    where = getattr(model, "hf_config", None) or getattr(model, "id", None) or o.name
    return f"{where} ({o.name}, {o.params / 1e9:.3g} B parameters)"


def size_of(model) -> tuple[str, float]:
    """(size as a name writes it, e.g. "70B"; parameters in billions) of a validated workload model."""
    o = model_origin(model)
    billions = o.params / 1e9
    texts = [model] if isinstance(model, str) else [getattr(model, "hf_config", "") or "", getattr(model, "id", "")]
    for text in texts + [o.name]:
        # a name's size is rounded ("70B" for 70.6e9): a token within a fifth of the count is the model's size
        for found in SIZE.findall(text or ""):
            if abs(float(found) - billions) <= 0.2 * billions:
                return f"{found}B", billions
    return f"{billions:.3g}B", billions


def renamed(name: str, old, new) -> str:
    """Workload ``name`` (written for model ``old``) once its model is ``new``: the size it names replaced
    by the new one's, or else marked."""
    if old == new:
        return name
    (_, old_b), (new_size, _) = size_of(old), size_of(new)
    for match in SIZE.finditer(name):
        if abs(float(match.group(1)) - old_b) <= 0.2 * old_b:
            return clean(name[:match.start()] + new_size + name[match.end():])
    mark = " " + clean(f"(edited: model {model_label(new)})", MAX_NAME - 11)
    return clean(name[:MAX_NAME - len(mark)] + mark)


def _leaves(value, prefix=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, prefix + (k,))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            yield from _leaves(v, prefix + (i,))
    else:
        yield prefix, value


def _changed_paths(origin: dict, data: dict) -> list[tuple]:
    """Paths of the leaves that differ, but for names and descriptions (what :func:`follow` writes)."""
    before, after = dict(_leaves(origin)), dict(_leaves(data))
    skip = {("name",), ("description",)}
    changed = [p for p in before.keys() | after.keys() if p not in skip
               and not (len(p) == 3 and p[0] == "workloads" and p[2] == "name") and before.get(p) != after.get(p)]
    return sorted(changed, key=str)  # the few that changed, not every leaf (runs on each slider move)


def _server_name(scenario, id_: str) -> str:
    own = {r.id: r.name for r in scenario.hardware.servers}
    return own.get(id_) or (catalog.servers[id_].name if id_ in catalog.servers else id_)


def changes(origin, scenario, origin_data: dict, data: dict) -> tuple[list[str], str]:
    """The edits from ``origin`` to ``scenario`` (validated, with their dicts), in words: (the changes of what a
    title or description names: server, storage, link, models; the other settings changed, or "")."""
    said, paths = [], _changed_paths(origin_data, data)
    names = [w["name"] for w in data["workloads"]]
    for path in HEADLINE:
        if path in paths:
            old, new = origin_data[path[0]][path[1]], data[path[0]][path[1]]
            if path[1] == "server":
                said.append(f"server now {_server_name(scenario, new)} (was {_server_name(origin, old)})")
            else:
                said.append(f"{path[1].replace('_', '-')} now {new} (was {old})")
    for a, b in zip(origin.pools, scenario.pools):
        if a.server != b.server:
            said.append(f"pool {b.name}'s server now {_server_name(scenario, b.server)} (was {a.server})")
    for a, b, name in zip(origin.workloads, scenario.workloads, names):
        old, new = getattr(a, "model", None), getattr(b, "model", None)  # a job stream names no model
        if old != new:
            if old is None or new is None:  # the workload changed kind
                said.append(f"{name} now a {b.kind} workload (was {a.kind})")
            else:
                said.append(f"{name}'s model now {model_label(new)} (was {model_label(old)})")
    if len(origin.workloads) != len(scenario.workloads):
        said.append(f"{len(scenario.workloads)} workloads (was {len(origin.workloads)})")
    told = set(HEADLINE) | {("pools", i, "server") for i in range(len(scenario.pools))}
    other = [p for p in paths if p not in told and not (p[0] == "workloads" and len(p) > 2 and p[2] == "model")]
    if other:
        shown = [f"{names[p[1]]}: {'.'.join(map(str, p[2:]))}" if p[0] == "workloads" and len(p) > 2
                 and isinstance(p[1], int) and p[1] < len(names) else ".".join(map(str, p)) for p in other]
        more = ", …" if len(shown) > SHOWN_PATHS else ""
        return said, f"{len(other)} other setting{'s' * (len(other) != 1)} ({', '.join(shown[:SHOWN_PATHS])}{more})"
    return said, ""


def follow(origin, origin_data: dict, scenario, data: dict) -> dict:
    """``data`` (the dict of validated ``scenario``) with its title, description and workload names derived
    from the loaded ``origin`` (and its dict): renamed where a name says the model's size, marked as edited."""
    out = dict(data)
    if len(origin.workloads) == len(scenario.workloads):
        names = [renamed(a.name, getattr(a, "model", None), getattr(b, "model", None))
                 for a, b in zip(origin.workloads, scenario.workloads)]
        if len(set(names)) == len(names):  # a rename that would repeat a name is left as loaded
            out["workloads"] = [dict(w, name=n) for w, n in zip(data["workloads"], names)]
    said, other = changes(origin, scenario, origin_data, out)
    out["name"], out["description"] = origin_data["name"], origin_data["description"]
    if said or other:
        out["name"] = _title(origin_data["name"], said[0] if said else "")
        note = f"{EDITED} {'; '.join(said + [other] if other else said)}."
        room = MAX_DESCRIPTION - len(note) - 2
        out["description"] = (origin_data["description"][:max(room, 0)] + "\n\n" + note)[-MAX_DESCRIPTION:].strip()
    return out


def _title(name: str, first: str) -> str:
    """``name`` marked "(edited: first change)", or "(edited)" where there is none or it does not fit; a
    name marked already (a saved, edited scenario loaded again) keeps its mark."""
    if "(edited" in name:
        return name
    first = first.split(" (was ")[0]
    for mark in ([f" (edited: {first})"] if first else []) + [" (edited)"]:
        mark = " " + clean(mark)
        if len(name) + len(mark) <= MAX_NAME:
            return clean(name + mark)
    return clean(name[:MAX_NAME - 9] + " (edited)")
