"""The openai and anthropic brains against a real HTTP server on loopback, one call at a time."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES
from editors.conftest import config_for
from editors.fake_llm import Action
from klineage.editors import EditContext, get_editor, keep_exchanges
from klineage.errors import BrainError
from klineage.workload import KernelState, load_kernel, load_workload

BRAINS = ["openai", "anthropic"]


@pytest.fixture
def expert():
    workload = load_workload(FIXTURES / "axpy")
    return workload, KernelState.from_spec(load_kernel(workload, "expert"))


@pytest.mark.parametrize("name", BRAINS)
def test_a_good_answer_becomes_a_proposal_with_usage_and_dollars(name, fake_llm, expert, secret_keys):
    workload, state = expert
    answer = get_editor(name, config_for(fake_llm.url)).simplify(state, EditContext(workload=workload))
    assert answer.failures == []
    [proposal] = answer.proposals
    assert proposal.feature == "unroll" and "#pragma GCC unroll" not in proposal.state.source
    assert proposal.edit.params == {"factor": 4} and proposal.edit.sites
    assert answer.usage.calls == 1 and answer.usage.input_tokens > 0 and answer.usage.usd > 0
    prompt = fake_llm.prompts()[0]
    assert state.source.strip() in prompt and "omp_parallel" in prompt and "N=1000003" in prompt
    headers = {k.lower(): v for k, v in fake_llm.headers[0].items()}
    assert secret_keys in (headers.get("authorization", "") + headers.get("x-api-key", ""))


@pytest.mark.parametrize("name", BRAINS)
@pytest.mark.parametrize(("action", "reason"), [
    (Action("answer", "I think removing the pragma is best, but I won't show code."), "no code block"),
    (Action("answer", "FEATURE: unroll\n```c\nint kl_launch(", truncated=True), "never closed"),
    (Action("answer", "FEATURE: warp_magic\n```c\nint x;\n```"), "not a feature in the catalogue"),
])
def test_unusable_answers_are_failures_not_crashes(name, action, reason, fake_llm, expert):
    workload, state = expert
    fake_llm.script.append(action)
    answer = get_editor(name, config_for(fake_llm.url)).simplify(state, EditContext(workload=workload))
    assert answer.proposals == [] and reason in answer.failures[0]
    assert answer.usage.calls == 1


@pytest.mark.parametrize("name", BRAINS)
def test_429_then_success_is_retried(name, fake_llm, expert):
    workload, state = expert
    fake_llm.script.append(Action("status", status=429))
    answer = get_editor(name, config_for(fake_llm.url)).simplify(state, EditContext(workload=workload))
    assert len(fake_llm.requests) == 2, "the 429 was not retried"
    assert answer.proposals and answer.failures == []


@pytest.mark.parametrize("name", BRAINS)
def test_persistent_5xx_is_a_recorded_failure(name, fake_llm, expert):
    workload, state = expert
    fake_llm.script.extend([Action("status", status=503)] * 2)
    brain = get_editor(name, config_for(fake_llm.url, retries=1))
    answer = brain.simplify(state, EditContext(workload=workload))
    assert answer.proposals == [] and "HTTP 503 after 2 attempts" in answer.failures[0]


@pytest.mark.parametrize("name", BRAINS)
def test_a_timeout_is_a_recorded_failure(name, fake_llm, expert):
    workload, state = expert
    fake_llm.script.extend([Action("sleep", seconds=1.5)] * 2)
    brain = get_editor(name, config_for(fake_llm.url, timeout_s=0.3, retries=0))
    answer = brain.simplify(state, EditContext(workload=workload))
    assert answer.proposals == [] and "no answer within 0.3s" in answer.failures[0]


def test_a_run_resumed_after_its_brain_answered_gets_that_answer_back_free(fake_llm, expert, tmp_path):
    # A run killed after the answer and before its step was logged: the resumed run (a new
    # brain on the same run folder) asks the same question and is answered from the run's own
    # record, once, at no charge; anything else, and a failed call, goes to the model.
    workload, state = expert
    ctx = EditContext(workload=workload)
    fake_llm.script.append(Action("status", status=503))
    first = get_editor("openai", config_for(fake_llm.url, retries=0))
    keep_exchanges(first, tmp_path)
    failed, paid = first.simplify(state, ctx), first.simplify(state, ctx)
    assert failed.failures and paid.proposals and paid.usage.calls == 1
    resumed = get_editor("openai", config_for(fake_llm.url, retries=0))
    keep_exchanges(resumed, tmp_path)
    served = resumed.simplify(state, ctx)
    assert len(fake_llm.requests) == 2 and served.usage.calls == 0
    assert served.proposals[0].state.source == paid.proposals[0].state.source
    asked = resumed.simplify(state, ctx)  # the one kept answer was served already
    other = resumed.simplify(state, EditContext(workload=workload, feedback="verdict: slower"))
    assert len(fake_llm.requests) == 4 and asked.usage.calls == other.usage.calls == 1
    assert len((tmp_path / "brain.jsonl").read_text().splitlines()) == 4


@pytest.mark.parametrize("name", BRAINS)
def test_a_server_that_is_gone_stops_with_a_clear_error(name, fake_llm, expert, secret_keys):
    workload, state = expert
    brain = get_editor(name, config_for(fake_llm.url, retries=1))
    fake_llm.stop()
    with pytest.raises(BrainError, match=r"cannot reach the brain at http://127\.0\.0\.1") as info:
        brain.simplify(state, EditContext(workload=workload))
    assert secret_keys not in str(info.value)


def test_lift_text_comes_from_the_model_and_falls_back_on_junk(fake_llm):
    brain = get_editor("openai", config_for(fake_llm.url))
    text, usage = brain.lift({"feature": "omp_simd", "op": "axpy"})
    assert text["name"] == "llm-omp_simd" and usage.calls == 1
    fake_llm.script.append(Action("answer", "no idea"))
    text, _ = brain.lift({"feature": "omp_simd", "op": "axpy"})
    assert text["name"] == "omp-simd-axpy"  # the rules brain's text, not a crash


@pytest.mark.parametrize("name", BRAINS)
def test_materialize_sends_the_whole_card_and_improve_its_memory(name, fake_llm):
    from skills.conftest import omp_card

    workload = load_workload(FIXTURES / "axpy")
    plain = KernelState.from_spec(load_kernel(workload, "plain"))
    brain = get_editor(name, config_for(fake_llm.url))
    card = omp_card()
    answer = brain.materialize(plain, card, EditContext(workload=workload, feedback="verdict: slower"))
    assert answer.failures == [] and [p.feature for p in answer.proposals] == ["omp_parallel"]
    assert "-fopenmp" in answer.proposals[0].state.flags
    prompt = fake_llm.prompts()[-1]
    for text in (card.intent, card.anchor, card.preconditions[0].reason,
                 json.dumps(card.carrier.after)[1:-1], "verdict: slower"):
        assert text in prompt
    answer = brain.improve(plain, EditContext(workload=workload, extra={"knowledge": "unrolling paid 2x"}))
    prompt = fake_llm.prompts()[-1]
    assert "## Knowledge you are given\nunrolling paid 2x" in prompt
    # every method is told the machine and that the flags are its to set (v1 said "What you may
    # use: (nothing)" to none, and a real model never used OpenMP)
    assert "OpenMP is available" in prompt and "What you may use" not in prompt
    assert answer.failures == [] and answer.proposals[0].direction == "improve"


def test_admission_asks_an_llm_again_with_the_compiler_errors(fake_llm, quick, tmp_path):
    from klineage.runs import Run, RunMeta
    from klineage.skills.admission import Context, admit
    from skills.conftest import omp_card

    workload = load_workload(FIXTURES / "axpy")
    plain = KernelState.from_spec(load_kernel(workload, "plain"))
    run = Run.create(tmp_path, RunMeta(kind="test", name="axpy"))
    context = Context(workload=workload, state=plain, label="axpy/plain", gate=run.gate(workload, quick))
    fake_llm.script.append(Action("answer", "FEATURE: omp_parallel\n```c\nint kl_launch( {\n```"))
    card = admit(omp_card(admitted=False), [context], get_editor("openai", config_for(fake_llm.url)))
    assert len(fake_llm.requests) == 2
    assert "verdict: compile_error" in fake_llm.prompts()[1]
    assert "compiler output" in fake_llm.prompts()[1]
    assert card.verification[-1].verdict in {"accepted", "slower"}


def test_a_short_stand_in_key_is_not_redacted_out_of_every_record(monkeypatch):
    from editors.conftest import SECRET
    from klineage.editors._llm import redact

    monkeypatch.setenv("OPENAI_API_KEY", "relay")  # a local server's stand-in, no secret
    assert redact('"model": "relay-model"') == '"model": "relay-model"'
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert redact(f"key {SECRET} here") == "key *** here"
