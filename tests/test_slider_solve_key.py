"""A grid of shapes is keyed by its arrays' bytes (issue 51 item 2: numpy's repr of them was a sixth of a prompt move's
sizing screen), and the key still tells every field's value apart: a wrong hit would be a wrong plan."""

from __future__ import annotations

import numpy as np

from aisize.serving import latency as L
from aisize.serving.shapes import ReplicaShape, ShapeGrid

SHAPES = [ReplicaShape(1), ReplicaShape(2), ReplicaShape(4, attention_dp=2), ReplicaShape(8, pipeline_parallel=2)]


def test_equal_grids_key_equal_and_any_changed_field_differs():
    a, b = ShapeGrid.of(SHAPES, 450e9), ShapeGrid.of(SHAPES, 450e9)
    assert a is not b and L._value(a) == L._value(b)
    assert L._value(a) != L._value(ShapeGrid.of(SHAPES, 900e9))  # the link
    assert L._value(a) != L._value(ShapeGrid.of(SHAPES[:3], 450e9))  # a shape fewer
    assert L._value(a) != L._value(ShapeGrid.of(SHAPES[::-1], 450e9))  # the order
    wider = ShapeGrid(a.tensor_parallel, a.attention_dp, a.pipeline_parallel, a.stage_link_bytes_per_s,
                      expert_parallel=np.array([[1.0], [2.0], [4.0], [8.0]]))
    assert L._value(a) != L._value(wider)  # a field left at its default, then set
    ints = ShapeGrid(a.tensor_parallel.astype(int), a.attention_dp, a.pipeline_parallel, a.stage_link_bytes_per_s)
    assert L._value(a) != L._value(ints)  # 1 from 1.0
    assert L._value(a) != L._value(ReplicaShape(1))  # a grid from a single shape


def test_a_record_of_scalars_keeps_its_repr_key():
    assert L._value(ReplicaShape(2)) == ("ReplicaShape", repr(ReplicaShape(2)))
