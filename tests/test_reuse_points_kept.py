"""A length spread's points and p95, kept by the distribution's value (issue 51 item 2: every probe of a length-CV
move asked them again of the same two distributions): the same arrays and figure as asked afresh, read-only, and
another distribution's own."""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import lengths as L
from aisize.serving import reuse


@pytest.mark.parametrize("dist", [L.lognormal(1200.0, 0.8), L.lognormal(1200.0, 1.5), L.fixed(300.0),
                                  L.empirical([100, 400, 2000], [0.5, 0.3, 0.2])])
def test_kept_points_and_p95_are_the_distributions(dist):
    reuse._POINTS.clear()
    xs, ws = reuse._points(dist)
    fresh = dist.points()
    assert xs.tobytes() == np.asarray(fresh[0], dtype=float).tobytes()
    assert ws.tobytes() == np.asarray(fresh[1], dtype=float).tobytes()
    assert not xs.flags.writeable and not ws.flags.writeable
    assert reuse._points(dist)[0] is xs  # kept
    assert reuse._p95(dist) == float(dist.quantile(0.95))


def test_another_spread_has_its_own():
    reuse._POINTS.clear()
    a, b = L.lognormal(1200.0, 0.8), L.lognormal(1200.0, 0.9)
    assert reuse._points(a)[0].tobytes() != reuse._points(b)[0].tobytes()
    assert reuse._p95(a) < reuse._p95(b)
