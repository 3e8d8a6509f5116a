"""A preset's plan as JSON with its services moved step by step, in one process (the caches a slider keeps), for the
slider tests that compare plans made with and without a shortcut."""

from __future__ import annotations

from aisize.plan import plan
from aisize.scenario import from_dict, preset, to_dict
from aisize.present.export import to_json


def plans_json(steps, name: str = "xe9680-genai", rate_given_only: bool = True) -> list[str]:
    """to_json of preset ``name``'s plan with its inference services updated by each dict of ``steps`` in turn
    (only the services given a request rate, unless ``rate_given_only`` is False)."""
    out = []
    for given in steps:
        data = to_dict(preset(name))
        for w in data["workloads"]:
            if w["kind"] == "inference" and (w.get("requests_per_s") or not rate_given_only):
                w.update(given)
        out.append(to_json(plan(from_dict(data))))
    return out
