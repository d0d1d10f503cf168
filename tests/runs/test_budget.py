import pytest

from klineage.editors import Usage
from klineage.errors import ConfigError
from klineage.runs import Budget, Meter


def test_parse_budget_with_units():
    budget = Budget.parse("gate_runs=40, usd=2.5, wall=10m, tokens=2e6")
    assert (budget.gate_runs, budget.usd, budget.wall_s, budget.tokens) == (40, 2.5, 600.0, 2_000_000)
    assert budget.calls is None
    assert Budget.parse("unlimited").describe() == "unlimited"


@pytest.mark.parametrize(("text", "says"), [("", "empty"), ("  ", "empty"),
                                            ("gate_runs=0", "at least gate_runs=1")])
def test_a_budget_that_allows_nothing_by_mistake_is_refused(text, says):
    # "" used to mean unlimited, and gate_runs=0 still spent one gate run on the start kernel.
    with pytest.raises(ConfigError, match=says):
        Budget.parse(text)


@pytest.mark.parametrize("text", ["gate_runs", "bogus=3", "usd=abc", "gate_runs=4m", "wall=-3"])
def test_bad_budget_is_one_clear_error(text):
    with pytest.raises(ConfigError, match="--budget"):
        Budget.parse(text)


def test_meter_logs_every_charge_and_stops_at_the_limit():
    events = []
    meter = Meter(Budget(gate_runs=2, usd=1.0), log=events.append)
    meter.charge_brain(Usage(calls=1, input_tokens=100, output_tokens=20, usd=0.4), "simplify")
    assert meter.exhausted() is None
    meter.charge_gate("a")
    meter.charge_gate("b")
    assert "gate runs 2 of 2" in meter.exhausted()
    assert [e.kind for e in events] == ["brain", "gate", "gate"]
    assert events[-1].total["input_tokens"] == 100

    resumed = Meter.resume(Budget(usd=0.5), events)
    assert resumed.spent.gate_runs == 2
    resumed.charge_brain(Usage(calls=1, usd=0.2), "lift")
    assert "dollars" in resumed.exhausted()
