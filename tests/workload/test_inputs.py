from __future__ import annotations

import numpy as np
import pytest

from klineage.workload import generate_inputs, poison_value
from klineage.workload.inputs import check_init, check_rounds, draw_values
from klineage.workload.model import TensorSpec


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
                                             ("bernoulli", "float32"), ("zeros", "float32"),
                                             ("normal:0:0", "float32"), ("normal|sorted", "float32")])
def test_bad_inits(init, dtype):
    with pytest.raises(ValueError):
        check_init(init, dtype)


def test_a_shaping_is_for_check_inits_and_must_be_known():
    check_init("normal|sorted", "float32", shaped=True)
    with pytest.raises(ValueError, match="unknown shaping"):
        check_init("normal|reversed", "float32", shaped=True)


@pytest.mark.parametrize("init", ["normal:100:0.5", "uniform:-3:3|sorted", "|constant_rows",
                                  "randint:0:1000|duplicates"])
def test_check_inits_draw_what_they_name(init):
    spec = TensorSpec(name="x", shape=(6, 50), dtype="int32" if "randint" in init else "float32", init=init)
    values = draw_values(spec, (6, 50), np.random.default_rng(1))
    if init.startswith("normal:100"):
        assert 95 < values.mean() < 105 and values.std() < 1
    elif init.endswith("sorted"):
        assert (np.diff(values, axis=-1) >= 0).all() and (values.min() < -2) and (values.max() > 2)
    elif init.endswith("constant_rows"):
        assert (values == values[:, :1]).all() and len(np.unique(values[:, 0])) == 6
    else:
        assert len(np.unique(values)) <= 8


def test_each_check_round_draws_the_inputs_that_have_one(axpy):
    x, z = axpy.inputs
    inputs = (x.model_copy(update={"check_inits": ("normal:5:1", "|sorted")}),
              z.model_copy(update={"check_inits": ("uniform:0:1",)}))
    rounds = check_rounds(axpy.model_copy(update={"inputs": inputs}))
    drawn = [[s.init for s in specs] for specs, _ in rounds]
    assert drawn == [["normal:5:1", "uniform:0:1"], ["|sorted", ""]]
    assert rounds[1][1] == "x = '|sorted'"
    assert check_rounds(axpy) == []


def test_poison_values():
    assert np.isnan(poison_value("bfloat16", 0))
    assert poison_value("int32", 0) != poison_value("int32", 1)
    assert poison_value("bool", 0) not in (0, 1)
