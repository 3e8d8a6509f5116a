"""``aisize sweep``'s text: a sweep of one input (:func:`aisize.plan.sweep`'s table) for the terminal."""

from __future__ import annotations

import pandas as pd

from aisize import format as F


def sweep_text(table: pd.DataFrame, path: str) -> str:
    """A sweep (:func:`aisize.plan.sweep`'s table) as text for the terminal: the outputs that change with
    the input in a table (the input's column headed by its path as typed), the ones that do not on a line
    of their own, and a sweep that changes nothing said in words, not as identical rows."""
    outputs = F.table_cells(table.drop(columns=[path]))
    values = [F.cell(v) for v in table[path].tolist()]
    same = {h: cells[0] for h, cells in outputs.items() if cells and all(c == cells[0] for c in cells)}
    changing = {h: cells for h, cells in outputs.items() if h not in same}
    shown_same = "; ".join(f"{h} {v}" for h, v in same.items() if v != "")
    span = f"{values[0]} to {values[-1]}" if len(values) > 1 else values[0] if values else "no value"
    if not changing:
        lines = [f"Varying {path} from {span} ({F.plural(len(values), 'value')}) changes none of the plan's key "
                 f"outputs: every value plans the same.", f"Every value: {shown_same}."]
        lines += _sweep_hint(table, path)
        return F.fit_lines("\n".join(lines)) + "\n"
    frame = pd.DataFrame({path: values} | changing)
    text = F.text_table(frame, shown=True, title_column=path)
    if same:
        text += "\n" + F.fit_lines(f"The same at every value of {path}: {shown_same}.")
    return text + "\n"


def _sweep_hint(table: pd.DataFrame, path: str) -> list[str]:
    """Why a sweep of a training target changed nothing: every job already finishes within the shortest."""
    if not path.endswith(".target_days") or "training_days" not in table:
        return []
    longest, shortest = table["training_days"].max(), pd.to_numeric(table[path], errors="coerce").min()
    if not (longest <= shortest):  # also False for a missing figure
        return []
    return [f"The longest training job takes {F.days(longest)} on the GPUs the plan gives it at every target, "
            f"within the shortest target ({F.days(shortest)}): a longer target cannot save a GPU. Try targets "
            f"below {F.days(longest)} to see the plan grow."]
