from __future__ import annotations

import numpy as np
import pytest

from klineage.workload import generate_inputs, poison_value
from klineage.workload.inputs import check_init


def test_inputs_are_seeded_and_distinct(axpy):
    a = generate_inputs(axpy, {"N": 64}, seed=3)
    b = generate_inputs(axpy, {"N": 64}, seed=3)
    c = generate_inputs(axpy, {"N": 64}, seed=4)
    assert np.array_equal(a["x"], b["x"])
    assert not np.array_equal(a["x"], c["x"])
    assert not np.array_equal(a["x"], a["z"])  # each input draws its own stream
    assert a["x"].dtype == np.float32


def test_single_element_inputs_are_never_zero(axpy):
    for seed in range(50):
        assert generate_inputs(axpy, {"N": 1}, seed)["x"].any()


@pytest.mark.parametrize(("init", "dtype"), [("normal", "int32"), ("uniform:2:1", "float32"),
                                             ("bernoulli", "float32"), ("zeros", "float32")])
def test_bad_inits(init, dtype):
    with pytest.raises(ValueError):
        check_init(init, dtype)


def test_poison_values():
    assert np.isnan(poison_value("bfloat16", 0))
    assert poison_value("int32", 0) != poison_value("int32", 1)
    assert poison_value("bool", 0) not in (0, 1)
