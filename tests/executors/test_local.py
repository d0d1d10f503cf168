import os
import uuid

from conftest import FIXTURES
from klineage.backends.cpu import CpuBackend
from klineage.executors import LocalExecutor, using
from klineage.gate import GateSession
from klineage.runs import Budget, Meter, RunDir
from klineage.workload import KernelState, load_kernel


def test_prebuild_fills_the_build_cache_and_keeps_failures_for_the_gate(axpy, tmp_path):
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    tag = uuid.uuid4().hex  # a source no earlier run has built
    good = plain.with_source(plain.source + f"\n/* {tag} */\n")
    broken = plain.with_source(plain.source + f"\n#error {tag}\n")
    specs = [s.materialize(tmp_path / name, axpy) for name, s in (("good", good), ("broken", broken))]
    backend = CpuBackend()

    LocalExecutor(build_workers=2).prebuild(backend, specs)

    again_good, again_broken = (backend.build(spec) for spec in specs)
    assert again_good.ok and again_good.cached
    assert not again_broken.ok and again_broken.cached and tag in again_broken.log


def test_with_several_gpus_each_is_a_slot_with_its_own_pinned_worker():
    executor = LocalExecutor(gpus=["3", "5"])
    assert executor.slots("cuda") == 2 and executor.remote("cuda")
    assert executor.slots("cpu") == 1 and not executor.remote("cpu")
    seen = dict(executor.map(os.getenv, ["CUDA_VISIBLE_DEVICES"] * 4, "cuda"))
    assert sorted(seen) == [0, 1, 2, 3] and set(seen.values()) == {"3", "5"}


class TwoSlots(LocalExecutor):
    """Two timing slots, jobs still in this process; records each batch it is given."""

    def __init__(self):
        super().__init__()
        self.batches = []

    def slots(self, device):
        return 2

    def remote(self, device):
        return False

    def map(self, job, items, device="cpu"):
        self.batches.append(len(items))
        return super().map(job, items, device)


def test_gate_ahead_fills_the_slots_and_charges_each_when_its_turn_comes(axpy, tmp_path, null_gate):
    plain = KernelState.from_spec(load_kernel(axpy, "plain"))
    states = [plain.with_source(plain.source + f"\n/* {i} */\n") for i in range(3)]
    run = RunDir(tmp_path / "run")
    meter = Meter(Budget.parse("gate_runs=4"), log=run.log)
    session, executor = GateSession(run, axpy, null_gate, meter=meter), TwoSlots()
    with using(executor):
        session.gate_ahead(states)
        assert executor.batches == [2] and meter.spent.gate_runs == 0
        session.check(states[0]), session.check(states[1]), session.check(states[0])
        assert executor.batches == [2] and meter.spent.gate_runs == 2, "cached, charged once each"
    fresh = [plain.with_source(plain.source + f"\n/* more {i} */\n") for i in range(2)]
    one_left = Meter(Budget.parse("gate_runs=1"), log=run.log)
    with using(executor):
        GateSession(run, axpy, null_gate, meter=one_left).gate_ahead(fresh)
    assert executor.batches == [2], "with one gate run left, nothing is gated ahead"


def test_optimize_with_two_slots_takes_the_steps_and_spends_the_budget_of_one(tmp_path, null_gate):
    from klineage.optimize import OptimizeOptions, optimize
    from klineage.workload import load_workload

    dot = load_workload(FIXTURES / "dot")
    options = OptimizeOptions(method="rules-table", budget=Budget.parse("gate_runs=4"), gate=null_gate)

    def run(executor, where):
        with using(executor):
            record = optimize(dot, load_kernel(dot, "naive"), None, options,
                              runs_root=tmp_path / where).record
        return [(s["verdict"], s["kept"]) for s in record["steps"]], record["spent"]["gate_runs"]

    two = TwoSlots()
    taken = run(two, "two")
    assert taken == run(LocalExecutor(), "one") and len(taken[0]) == 2
    assert 2 in two.batches, "candidates were gated side by side"


def test_admission_with_two_slots_gives_the_trials_and_spend_of_one(tmp_path, null_gate):
    from klineage.editors import get_editor
    from klineage.runs import Run, RunMeta
    from klineage.skills.admission import Context, admit
    from klineage.skills.card import Rewrite
    from klineage.workload import load_workload
    from skills.conftest import omp_card

    card = omp_card(admitted=False, rewrite=Rewrite(pass_name="insert_omp_parallel",
                                                    feature="omp_parallel"))

    def trials(executor, where):
        run = Run.create(tmp_path / where, RunMeta(kind="test", name="admission"))
        contexts = []
        for name, variant in [("axpy", "plain"), ("axpy", "slow"), ("dot", "naive"),
                              ("scale", "naive")]:
            workload = load_workload(FIXTURES / name)
            contexts.append(Context(workload, KernelState.from_spec(load_kernel(workload, variant)),
                                    f"{name}/{variant}", run.gate(workload, null_gate)))
        with using(executor):
            admitted = admit(card, contexts, get_editor("rules"), max_trials=4)
        return [(t.target, t.verdict) for t in admitted.verification], run.meter.spent.gate_runs

    two = TwoSlots()
    assert trials(two, "two") == trials(LocalExecutor(), "one")
    assert two.batches[0] == 2, "axpy's and scale's trial kernels gated side by side"
