"""A GPU's generation is one catalog column (issue 47, item 3): serving and training read it from there.

Serving once matched id prefixes ("mi355x" -> cdna4) and training guessed from number formats (fp4 ->
Blackwell), so a GPU had two generations. Now ``architecture`` in data/accelerators.csv is the one truth;
each model maps it to the generations it has constants for, and says what it does with the others.
"""

from __future__ import annotations

import dataclasses

from aisize import catalog
from aisize.serving.hardware import GENERATIONS as SERVING, device, generation as serving_generation
from aisize.training.efficiency import GENERATIONS as TRAINING, generation as training_generation


def test_every_accelerator_names_its_architecture():
    assert all(a.architecture for a in catalog.accelerators)
    arch = {a.id: a.architecture for a in catalog.accelerators}
    assert (arch["h100-sxm"], arch["b300"], arch["mi300x"], arch["mi355x"], arch["l40s"], arch["a100-sxm-80gb"]) \
        == ("hopper", "blackwell", "cdna3", "cdna4", "ada", "ampere")


def test_serving_and_training_agree_wherever_both_are_calibrated():
    for a in catalog.accelerators:
        s = serving_generation(a)
        assert s == (a.architecture if a.architecture in SERVING else None), a.id
        if a.architecture in TRAINING:
            assert training_generation(a) == a.architecture, a.id


def test_the_column_not_the_id_decides():
    h100 = catalog.accelerators["h100-sxm"]
    renamed = dataclasses.replace(h100, id="my-gpu")  # a scenario's own GPU keeps the generation it states
    assert serving_generation(renamed) == "hopper" and device(renamed, "fp8", "fp8").generation == "hopper"
    unnamed = dataclasses.replace(h100, id="h100-sxm-copy", architecture=None)  # an id prefix alone calibrates nothing
    assert serving_generation(unnamed) is None and device(unnamed, "fp8", "fp8").generation is None
    # training falls back to the tensor-core class of its formats, stated in its docstring
    assert training_generation(unnamed) == "hopper"
    assert training_generation(catalog.accelerators["mi355x"]) == "blackwell"  # CDNA4 at Blackwell's constants
