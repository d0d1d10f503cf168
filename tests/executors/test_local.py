import os
import uuid

from klineage.backends.cpu import CpuBackend
from klineage.executors import LocalExecutor
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
