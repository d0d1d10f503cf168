"""The importer's pure pieces: dimension expressions from probe runs, and the init rule."""

from __future__ import annotations

from klineage.workload.kernelbench._fit import drivers, fit_dim
from klineage.workload.kernelbench._values import init_for


def _runs(formula, base, axis, steps=(1, 2, 3, 7)):
    observations = [(dict(base), formula(base))]
    for step in steps:
        values = dict(base, **{axis: base[axis] + step})
        observations.append((values, formula(values)))
    return observations


def test_a_literal_dimension_has_no_drivers():
    base = {"A": 11, "B": 13}
    runs = {a: _runs(lambda v: 3, base, a)[1:] for a in base}
    assert drivers((base, 3), runs) == []
    assert fit_dim([(base, 3)], []) == 3


def test_equal_file_values_are_still_told_apart():
    # both constants are 4096 in the file; the probe moves them one at a time
    base = {"M": 11, "N": 13}
    runs = {a: _runs(lambda v: v["N"], base, a)[1:] for a in base}
    assert drivers((base, 13), runs) == ["N"]


def test_affine_and_strided_dimensions():
    base = {"H": 23, "K": 11}
    assert fit_dim(_runs(lambda v: v["H"] - 2, base, "H"), ["H"]) == "H-2"
    assert fit_dim(_runs(lambda v: 2 * v["H"], base, "H"), ["H"]) == "2*H"
    assert fit_dim(_runs(lambda v: (v["H"] - 3) // 2 + 1, base, "H"), ["H"]) in ("(H-1)//2", "(H-3)//2+1")


def test_a_strided_window_over_two_axes():
    base = {"K": 11, "H": 23}

    def conv(v):
        return (v["H"] - v["K"]) // 2 + 1
    runs = _runs(conv, base, "K")[:4] + _runs(conv, base, "H")[1:]
    assert fit_dim(runs, ["K", "H"]) == "(H-K+2)//2"


def test_products_and_sums_of_axes():
    base = {"A": 11, "B": 13}
    runs = _runs(lambda v: v["A"] * v["B"], base, "A")[:3] + _runs(lambda v: v["A"] * v["B"], base, "B")[1:3]
    assert fit_dim(runs, ["A", "B"]) == "A*B"
    runs = _runs(lambda v: v["A"] + v["B"], base, "A")[:3] + _runs(lambda v: v["A"] + v["B"], base, "B")[1:3]
    assert fit_dim(runs, ["A", "B"]) == "A+B"


def test_an_inexpressible_dimension_is_none():
    base = {"A": 11}
    assert fit_dim(_runs(lambda v: v["A"] ** 2, base, "A"), ["A"]) is None


def test_init_rule():
    assert init_for("float32", {"min": -3.9, "max": 4.1, "mean": 0.01, "std": 1.002})[0] == "normal"
    assert init_for("float32", {"min": 0.0001, "max": 0.9999, "mean": 0.5, "std": 0.29})[0] == \
        "uniform:0:1"
    assert init_for("float32", {"min": 1.0, "max": 1.0, "mean": 1.0, "std": 0.0})[0] == "uniform:0.5:1.5"
    assert init_for("float32", {"min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0})[0] == "uniform:-0.5:0.5"
    assert init_for("int64", {"min": 0, "max": 9, "mean": 4.5, "std": 2.9})[0] == "randint:0:10"


def test_far_moves_tell_apart_floors_that_agree_near_the_probe():
    # an 11-wide pooling window over height 19: h//11 and (h-2)//10 agree on 19..35
    base = {"H": 19}
    steps = (1, 2, 3, 5, 7, 11, 16, 23, 41, 60, 97)
    assert fit_dim(_runs(lambda v: v["H"] // 11, base, "H", steps), ["H"]) == "H//11"
    assert fit_dim(_runs(lambda v: v["H"] // 11, base, "H", (1, 2, 3, 7, 16)), ["H"]) != "H//11"


def test_channels_per_group_is_a_quotient():
    base = {"C": 64, "G": 4}
    runs = [(dict(base), 16), ({"C": 128, "G": 4}, 32), ({"C": 64, "G": 8}, 8), ({"C": 64, "G": 16}, 4)]
    assert fit_dim(runs, ["C", "G"]) == "C//G"


def test_a_model_slow_at_every_size_keeps_its_smallest_as_quick():
    """On a busy machine even the smallest size ran past the quick limit, none was kept, and the
    import failed with an IndexError."""
    import time
    from types import ModuleType

    import torch

    from klineage.workload.kernelbench._sizes import QUICK_SECONDS, quick_axes

    module = ModuleType("slow_problem")

    class Model(torch.nn.Module):
        def forward(self, x):
            time.sleep(QUICK_SECONDS * 1.2)
            return x * 2

    module.Model, module.N = Model, 65536
    module.get_inputs = lambda: [torch.randn(module.N)]
    module.get_init_inputs = lambda: []
    quick, note = quick_axes(module, {"N": 65536}, ["N"], {"in:0": ["N"], "out:0": ["N"]})
    assert quick == {"N": 16} and "ms on 1 CPU thread" in note


def test_a_slow_first_call_does_not_make_the_smallest_size_quick():
    """torch's first forward in a process took 333 ms at batch 1 x 1 x 1 on a quiet machine: the
    smallest size was kept as quick, and a workload of one-element calls was written."""
    import time
    from types import ModuleType

    import torch

    from klineage.workload.kernelbench._sizes import QUICK_SECONDS, quick_axes

    module = ModuleType("warming_problem")
    calls = []

    class Model(torch.nn.Module):
        def forward(self, x):
            calls.append(x.numel())
            if len(calls) == 1:
                time.sleep(QUICK_SECONDS * 1.3)  # a first call's warm-up
            return x * 2

    module.Model, module.N = Model, 65536
    module.get_inputs = lambda: [torch.randn(module.N)]
    module.get_init_inputs = lambda: []
    quick, _ = quick_axes(module, {"N": 65536}, ["N"], {"in:0": ["N"], "out:0": ["N"]})
    assert quick["N"] > 16


def test_a_bias_behind_a_relu_is_found_used_at_one_element():
    """At batch 1, in 1, out 1 the Linear's one output sat below zero before and after the bias
    was bumped, so the bias was called unused and left out of the workload; the kernel read an
    input that was not there (SIGSEGV, CI and here, 2026-12-05)."""
    import torch

    from conftest import REPO
    from klineage.workload.kernelbench._probe import _used_weights
    from klineage.workload.kernelbench._runs import load

    module = load(REPO / "examples" / "kernelbench" / "problems" / "1_linear_relu.py")
    values = {"batch_size": 1, "in_features": 1, "out_features": 1}
    for seed in range(4):
        torch.manual_seed(seed)
        used = _used_weights(module, values, {"proj.weight": "proj_weight", "proj.bias": "proj_bias"})
        assert used == ["proj.weight", "proj.bias"], seed
