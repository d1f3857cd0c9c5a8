"""FakeLLM: scripts, provider errors with real wording, its own context overflow, faults and behaviours."""

from __future__ import annotations

import math

import pytest

from loopguard_simulators import FakeLLM, ForgetfulReader, PingPong, Poller, ProviderError, Retrier
from loopguard_simulators.llm import Fault, parse_faults, parse_script, provider_error
from pytest_loopguard.core._conversation import Entry, PromptView
from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.errors import ScenarioError


def view_of(*entries: Entry, window: int = 0) -> PromptView:
    view = PromptView(window_tokens=window)
    for e in entries:
        view.append(e)
    return view


def test_script_plays_turns_in_order_then_a_final_answer() -> None:
    llm = FakeLLM([{"tool": "read_file", "args": {"path": "a"}},
                   {"calls": [{"tool": "x"}, {"tool": "y", "args": {"n": 1}}], "text": "two at once"},
                   {"answer": "finished", "success": False}])
    view = view_of()
    first = llm.respond(view, 0)
    assert first.calls == (ToolCall.of("read_file", {"path": "a"}),)
    second = llm.respond(view, 1)
    assert [c.tool for c in second.calls] == ["x", "y"] and second.text == "two at once"
    third = llm.respond(view, 2)
    assert third.final and third.text == "finished" and third.success is False
    assert llm.respond(view, 3).text == "Script finished."  # past the script: the default final answer


def test_repeat_expands_a_turn() -> None:
    turns = parse_script([{"tool": "browser_snapshot", "repeat": 3}, {"answer": "ok"}])
    assert len(turns) == 4 and turns[0] == turns[2]


def test_output_tokens_price_the_assistant_message_as_the_guard_renders_it() -> None:
    reply = FakeLLM([{"tool": "read_file", "args": {"path": "a.py"}, "text": "Reading."}]).respond(view_of(), 0)
    rendered = 'Reading.\nread_file({"path":"a.py"})'
    assert reply.output_tokens == math.ceil(len(rendered) / 4)


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("500", "The server had an error while processing your request"),
        ("529", "Overloaded"),
        ("429", "Rate limit reached"),
        ("timeout", "operation timed out"),
        ("connection_reset", "Connection reset by peer"),
    ],
)
def test_scripted_errors_carry_the_providers_wording(kind: str, words: str) -> None:
    llm = FakeLLM([{"error": kind}, {"answer": "ok"}])
    with pytest.raises(ProviderError) as err:
        llm.respond(view_of(), 0)
    assert words in err.value.message
    assert llm.respond(view_of(), 0).text == "ok"  # the error consumed its script step


def test_custom_error_text() -> None:
    with pytest.raises(ProviderError, match=r"^teapot$"):
        FakeLLM([{"error": {"message": "teapot"}}]).respond(view_of(), 0)


def test_overflow_wording_openai_and_anthropic() -> None:
    openai = provider_error("overflow", provider="openai", window=8192, tokens=9000).message
    assert openai.startswith("This model's maximum context length is 8192 tokens. However, your messages "
                             "resulted in 9000 tokens")
    anthropic = provider_error("overflow", provider="anthropic", window=200000, tokens=210000).message
    assert anthropic == "prompt is too long: 210000 tokens > 200000 maximum"


def test_the_model_raises_overflow_itself_when_the_view_exceeds_its_window() -> None:
    llm = FakeLLM([{"answer": "ok"}], window_tokens=10, provider="anthropic")
    big = view_of(Entry("user", "x" * 44))  # ceil(44 / 4) = 11 tokens > 10
    with pytest.raises(ProviderError, match=r"prompt is too long: 11 tokens > 10 maximum"):
        llm.respond(big, 0)
    # the script step was not consumed: a compacted view gets it
    assert llm.respond(view_of(Entry("user", "x" * 40)), 0).text == "ok"
    assert llm.prompt_tokens == [11, 10]


def test_faults_fail_the_given_model_calls() -> None:
    llm = FakeLLM(behaviour=PingPong(ToolCall.of("a"), ToolCall.of("b")), faults=[Fault(2, "503", times=2)])
    view = view_of()
    assert llm.respond(view, 0).calls[0].tool == "a"
    for _ in range(2):
        with pytest.raises(ProviderError, match="503"):
            llm.respond(view, 1)
    assert llm.respond(view, 1).calls[0].tool == "b"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([{"think": "hmm"}], "agent.script[0]"),
        ([{"tool": "a", "answer": "b"}], "agent.script[0]"),
        ([{}], "agent.script[0]"),
        ([{"error": "418"}], "agent.script[0].error"),
        ([{"tool": "a", "repeat": 0}], "agent.script[0].repeat"),
        ([{"calls": []}], "agent.script[0].calls"),
        ("not a list", "agent.script"),
    ],
)
def test_bad_script_steps_are_scenario_errors(raw: object, field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_script(raw)
    assert err.value.field == field


def test_bad_faults_are_scenario_errors() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_faults([{"at": 1, "kind": "404"}])
    assert err.value.field == "agent.errors[0].kind"


# ---- behaviours ----------------------------------------------------------------------------------------
def read_result(path: str, replaced: bool = False) -> Entry:
    return Entry("tool", f"File: {path} (lines 1-2 of 2)\n     1|x", tool="read_file", replaced=replaced)


def test_forgetful_reader_reads_what_it_cannot_see_then_answers() -> None:
    reader = ForgetfulReader(("a.py", "b.py"))
    assert reader.next_turn(view_of(), 0).calls == (ToolCall.of("read_file", {"path": "a.py"}),)
    assert reader.next_turn(view_of(read_result("a.py")), 1).calls[0].args["path"] == "b.py"
    # a read replaced in the view (a placeholder or summary) is not seen: read again
    assert reader.next_turn(view_of(read_result("a.py", replaced=True), read_result("b.py")), 2).calls[0].args[
        "path"] == "a.py"
    assert reader.next_turn(view_of(read_result("a.py"), read_result("b.py")), 3).final


def test_forgetful_reader_trusts_an_injected_read_list_only_when_told() -> None:
    injected = Entry("user", "[Files already read …]\n- a.py (offset 1, limit 500)", replaced=True)
    view = view_of(injected, read_result("b.py"))
    assert ForgetfulReader(("a.py", "b.py")).next_turn(view, 0).calls[0].args["path"] == "a.py"
    assert ForgetfulReader(("a.py", "b.py"), trusts_read_list=True).next_turn(view, 0).final


def test_poller_navigates_polls_until_ready_clicks_then_answers() -> None:
    poller = Poller(target=2, url="https://x.example")
    assert poller.next_turn(view_of(), 0).calls[0].tool == "browser_navigate"
    nav = Entry("tool", "Navigated", tool="browser_navigate")
    assert poller.next_turn(view_of(nav), 1).calls[0].tool == "browser_snapshot"
    loading = Entry("tool", '- status "Loading… 50%" [busy]', tool="browser_snapshot")
    assert poller.next_turn(view_of(loading), 2).calls[0].tool == "browser_snapshot"
    ready = Entry("tool", '- status "Ready"', tool="browser_snapshot")
    assert poller.next_turn(view_of(ready), 3).calls == (ToolCall.of("browser_click", {"index": 2}),)
    failed = Entry("tool", "Failed to click element [2]: stale", tool="browser_click")
    assert poller.next_turn(view_of(ready, failed), 4).calls[0].tool == "browser_snapshot"
    clicked = Entry("tool", "Clicked button 'Go'.", tool="browser_click")
    assert poller.next_turn(view_of(ready, clicked), 5).final


def test_retrier_repeats_its_call_then_gives_up() -> None:
    call = ToolCall.of("browser_click", {"index": 4})
    retrier = Retrier(call, attempts=2)
    assert [retrier.next_turn(view_of(), i).calls for i in range(2)] == [(call,), (call,)]
    last = retrier.next_turn(view_of(), 2)
    assert last.final and last.success is False


def test_ping_pong_alternates() -> None:
    a, b = ToolCall.of("a"), ToolCall.of("b")
    pp = PingPong(a, b, turns=3)
    assert [pp.next_turn(view_of(), i).calls for i in range(3)] == [(a,), (b,), (a,)]
    assert pp.next_turn(view_of(), 3).final


def test_unknown_behaviour_parameter_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match="unknown parameter") as err:
        Poller.from_params({"target": 1, "colour": "red"}, "agent")
    assert err.value.field == "agent"


def test_a_model_needs_a_script_or_a_behaviour() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        FakeLLM()
