"""A column of shapes (the sizing screen's :class:`~aisize.serving.shapes.ShapeGrid`) keeps its layout when its arrays
are read-only (``aisize.serving.iteration_shape._frozen``), and every figure is then the one of a layout made for the
call, to the bit and type: the screen's solves ask ``iteration_time`` of the same column at every step."""

from __future__ import annotations

import numpy as np

from aisize import serving
from aisize.serving import iteration as I
from aisize.serving import iteration_shape as IS
from aisize.serving import sizing
from aisize.serving.estimate import replica_of
from aisize.serving.shapes import ReplicaShape, ShapeGrid
from screen_case import choose, cold_shapes

STEP = dict(decode_sequences=np.array([[1.0, 40.0, 300.0]]), decode_context=1200.0,
            prefill_tokens=np.array([[0.0, 900.0, 4000.0]]), prefill_prompts=np.array([[0.0, 1.0, 4.0]]),
            prompt_tokens=1000.0)


def _rep():
    return replica_of(serving.estimate("llama-3-70b", "h100-sxm", tensor_parallel=4, weight_precision="fp8",
                                       kv_precision="fp8", input_tokens=1000, output_tokens=300, requests_per_s=1.0))


def _column(frozen: bool, shapes=((1, 1, 1), (2, 1, 1), (4, 2, 1), (8, 1, 2))):
    grid = ShapeGrid.of([ReplicaShape(tp, dp, pp) for tp, dp, pp in shapes], 9e11)
    return sizing._read_only(grid) if frozen else grid


def _figures(it) -> dict:
    return {k: (type(v), np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes())
            for k, v in list(vars(it).items()) + [("seconds", it.seconds)] if k != "overlap" and v is not None}


def _time(rep, grid):
    return I.iteration_time(rep.costs, rep.rates, rep.calibration, **STEP, **grid.kwargs())


def test_a_read_only_column_keeps_its_layout_with_the_figures_of_one_made_for_the_call():
    rep = _rep()
    IS._LAYOUTS.clear()
    made = _time(rep, _column(False))  # writeable: made for the call, not kept
    assert not IS._LAYOUTS
    cold = _time(rep, _column(True))
    assert len(IS._LAYOUTS) == 1
    kept = _time(rep, _column(True))  # another column of the same numbers: the kept layout
    assert len(IS._LAYOUTS) == 1
    assert _figures(cold) == _figures(made) and _figures(kept) == _figures(made)


def test_columns_differing_in_a_number_its_type_or_its_axes_keep_layouts_of_their_own():
    rep = _rep()
    IS._LAYOUTS.clear()
    a = _time(rep, _column(True))
    b = _time(rep, _column(True, ((1, 1, 1), (2, 1, 1), (4, 2, 1), (8, 2, 2))))  # one number differs
    assert len(IS._LAYOUTS) == 2 and _figures(a) != _figures(b)
    assert _figures(b) == _figures(_time(rep, _column(False, ((1, 1, 1), (2, 1, 1), (4, 2, 1), (8, 2, 2)))))
    # the same bytes along another axis: (4, 1) and (1, 4) columns broadcast differently
    col = _column(True)
    row = ShapeGrid(*(np.array(getattr(col, f).ravel()).reshape(1, -1) for f in
                      ("tensor_parallel", "attention_dp", "pipeline_parallel", "stage_link_bytes_per_s")))
    sizing._read_only(row)
    step = dict(STEP, decode_sequences=np.array([[1.0], [40.0], [300.0]]), prefill_tokens=900.0, prefill_prompts=1.0)
    on_rows = I.iteration_time(rep.costs, rep.rates, rep.calibration, **step, **row.kwargs())
    assert len(IS._LAYOUTS) == 3 and np.shape(on_rows.seconds) == (3, 4)
    writeable = ShapeGrid(*(np.array(getattr(row, f)) for f in
                            ("tensor_parallel", "attention_dp", "pipeline_parallel", "stage_link_bytes_per_s")))
    assert _figures(on_rows) == _figures(I.iteration_time(rep.costs, rep.rates, rep.calibration, **step,
                                                          **writeable.kwargs()))
    # integers of the same values: a key of their own, the same figures (each enters as float64)
    ints = ShapeGrid(*(getattr(col, f).astype(np.int64) for f in ("tensor_parallel", "attention_dp",
                                                                  "pipeline_parallel", "stage_link_bytes_per_s")))
    sizing._read_only(ints)
    assert _figures(_time(rep, ints)) == _figures(a) and len(IS._LAYOUTS) == 4


def _fleet():
    fleet = choose(*cold_shapes())
    return repr(fleet)  # every figure of the choice, its ranked shapes' rates among them (floats' repr: their bits)


def test_the_screen_on_kept_layouts_chooses_as_on_layouts_made_for_each_call(monkeypatch):
    IS._LAYOUTS.clear()
    kept = _fleet()
    assert any(type(x) is IS._Frozen for key in IS._LAYOUTS for x in key[4:]), "the screen's column kept"
    monkeypatch.setattr(sizing, "_read_only", lambda grid: grid)  # writeable columns: a layout made for each call
    IS._LAYOUTS.clear()
    made = _fleet()
    assert not any(type(x) is IS._Frozen for key in IS._LAYOUTS for x in key[4:])
    assert kept == made


def test_a_read_only_view_of_a_writeable_array_is_not_kept_and_a_broadcast_view_does_not_warn():
    """A kept layout may alias its arrays, so a column is kept only if nothing it views can change: a read-only
    view of a writeable array is not (its base may be written), and a view ``np.broadcast_arrays`` made of a
    writeable array is asked nothing that makes numpy warn (its own flag is never read)."""
    import warnings
    base = np.array([[1.0], [2.0]])
    view = base[:, :]
    view.flags.writeable = False
    assert IS._frozen(view) is view  # not a key: the base can still change
    base.flags.writeable = False
    assert isinstance(IS._frozen(view), IS._Frozen)
    wide, _ = np.broadcast_arrays(np.array([1.0, 2.0]), np.zeros((3, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert IS._frozen(wide) is wide
    column = _column(True).tensor_parallel
    assert isinstance(IS._frozen(column), IS._Frozen)  # the screen's columns (views of their own arrays) are kept
