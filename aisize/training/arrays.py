"""Sums of broadcast arrays in the order that keeps the layout search fast.

The layout grid has a dozen axes; most terms of a step time or a memory total depend on a few
of them. Adding the small arrays first builds the full-size array once, at the last additions,
instead of at every one (numpy allocates each intermediate at its broadcast shape).
"""

from __future__ import annotations

import numpy as np


def add(*terms):
    """The sum of ``terms`` (scalars or arrays that broadcast), smallest first."""
    ordered = sorted(terms, key=np.size)
    total = ordered[0]
    for t in ordered[1:]:
        total = total + t
    return total
