"""The fake LLM: plays a script of turns or a behaviour that reacts to its prompt view, with real providers' errors.

    FakeLLM(script=[{"tool": "browser_snapshot"}, {"error": "500"}, {"answer": "done"}])
    FakeLLM(behaviour=ForgetfulReader(("a.py", "b.py")), window_tokens=8000)

It counts its prompt tokens with the view's own counter and raises the provider's context-overflow error
itself when the view exceeds its window, before consulting the script (so the same step is answered once
the view was compacted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol, cast, final

from pytest_loopguard.core._conversation import Entry, PromptView, chars_over_four
from pytest_loopguard.core._limits import MAX_SCENARIO_COUNT, MAX_TURNS
from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.errors import ScenarioError, brief

from .protocols import ModelReply, ProviderError, is_count

__all__ = [
    "BEHAVIOURS",
    "PROVIDER_ERRORS",
    "Behaviour",
    "FakeLLM",
    "Fault",
    "ForgetfulReader",
    "PingPong",
    "Poller",
    "Retrier",
    "ScriptTurn",
    "overflow_message",
    "parse_faults",
    "parse_script",
    "provider_error",
]

# Errors as the providers word them (status-prefixed as the OpenAI/Anthropic SDKs render them; the Rust
# clients of Spacebot and claw-code render transport failures as reqwest does).
PROVIDER_ERRORS: Final[Mapping[str, tuple[int | None, str]]] = {
    "500": (500, "Error code: 500 - The server had an error while processing your request. Sorry about that!"),
    "502": (502, "Error code: 502 - Bad gateway"),
    "503": (503, "Error code: 503 - The engine is currently overloaded, please try again later"),
    "529": (529, "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}"),
    "429": (429, "Error code: 429 - Rate limit reached for gpt-4o in organization org-sim on tokens per min (TPM): "
                 "Limit 30000, Used 29512, Requested 1893. Please try again in 2.81s."),
    "408": (408, "Error code: 408 - Request Timeout"),
    "timeout": (None, "error sending request for url (https://api.openai.com/v1/chat/completions): "
                      "operation timed out"),
    "connection_reset": (None, "error sending request for url (https://api.anthropic.com/v1/messages): "
                               "connection error: Connection reset by peer (os error 104)"),
    "invalid_request": (400, "Error code: 400 - Invalid value for 'tool_choice': no function named 'browse'."),
}
PROVIDERS: Final = ("openai", "anthropic")


def overflow_message(provider: str, window: int, tokens: int) -> str:
    """The provider's context-window error for a prompt of `tokens` against `window`."""
    if provider == "anthropic":
        return f"prompt is too long: {tokens} tokens > {window} maximum"
    return (f"This model's maximum context length is {window} tokens. However, your messages resulted in "
            f"{tokens} tokens. Please reduce the length of the messages.")


def provider_error(kind: str, *, provider: str = "openai", window: int = 8192, tokens: int = 0) -> ProviderError:
    """The error of a catalogue `kind` (`overflow` uses the provider's wording and the numbers given)."""
    if kind == "overflow":
        return ProviderError(overflow_message(provider, window, max(tokens, window + 1)), status=400)
    status, message = PROVIDER_ERRORS[kind]
    return ProviderError(message, status=status)


# ---- script ------------------------------------------------------------------------------------------
@final
@dataclass(frozen=True, slots=True)
class ScriptTurn:
    """One scripted model call: tool calls (with optional text), a final answer, or a provider error."""

    calls: tuple[ToolCall, ...] = ()
    text: str | None = None
    answer: str | None = None
    success: bool = True
    error: str | None = None  # a PROVIDER_ERRORS kind or "overflow"
    error_text: str | None = None  # a custom provider message


_TURN_KEYS: Final = ("tool", "args", "calls", "text", "answer", "success", "error", "repeat")


def _call(raw: Any, field: str) -> ToolCall:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("tool"), str) or not raw["tool"]:
        raise ScenarioError("expected a call {tool: NAME, args: {...}}", field=field)
    unknown = set(raw) - {"tool", "args"}
    if unknown:
        raise ScenarioError(f"unknown key(s) {sorted(unknown)}; a call has tool and args", field=field)
    args = raw.get("args") or {}
    if not isinstance(args, Mapping):
        raise ScenarioError("expected a mapping of arguments", field=f"{field}.args")
    return ToolCall.of(raw["tool"], args)


def parse_script(raw: Any, field: str = "agent.script") -> tuple[ScriptTurn, ...]:
    """Script turns from their mapping form; `repeat: N` on a turn plays it N times.

    Kinds: `{tool, args}` (one call), `{calls: [...], text}` (parallel calls), `{answer, success}` (final
    answer), `{error: KIND}` or `{error: {message: TEXT}}` (a provider error).
    """
    if not isinstance(raw, list):
        raise ScenarioError("expected a list of turns", field=field)
    turns: list[ScriptTurn] = []
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise ScenarioError("expected a mapping (a turn)", field=where)
        unknown = set(item) - set(_TURN_KEYS)
        if unknown:
            raise ScenarioError(f"unknown key(s) {brief(sorted(map(str, unknown)))}; expected {', '.join(_TURN_KEYS)}",
                                field=where)
        kinds = [k for k in ("tool", "calls", "answer", "error") if k in item]
        if len(kinds) != 1:
            raise ScenarioError("a script turn needs exactly one of tool, calls, answer, error "
                                f"(found {', '.join(kinds) or 'none'})", field=where)
        repeat = item.get("repeat", 1)
        if not is_count(repeat, 1, MAX_TURNS - len(turns)):
            # a script longer than the longest run never plays to its end: refuse it before building it
            raise ScenarioError(f"expected a count ≥ 1 that keeps the script within {MAX_TURNS} turns, "
                                f"got {brief(repeat)}", field=f"{where}.repeat")
        text = item.get("text")
        if text is not None and not isinstance(text, str):
            raise ScenarioError("expected a string", field=f"{where}.text")
        kind = kinds[0]
        if kind == "tool":
            turn = ScriptTurn(calls=(_call({"tool": item["tool"], "args": item.get("args")}, where),), text=text)
        elif kind == "calls":
            calls = item["calls"]
            if not isinstance(calls, list) or not calls:
                raise ScenarioError("expected a non-empty list of calls", field=f"{where}.calls")
            turn = ScriptTurn(calls=tuple(_call(c, f"{where}.calls[{j}]") for j, c in enumerate(calls)), text=text)
        elif kind == "answer":
            if not isinstance(item["answer"], str):
                raise ScenarioError("expected the final answer's text", field=f"{where}.answer")
            success = item.get("success", True)
            if not isinstance(success, bool):
                raise ScenarioError("expected true or false", field=f"{where}.success")
            turn = ScriptTurn(answer=item["answer"], success=success)
        else:
            turn = _error_turn(item["error"], f"{where}.error")
        turns.extend([turn] * repeat)
    return tuple(turns)


def _error_turn(raw: Any, field: str) -> ScriptTurn:
    if isinstance(raw, Mapping) and isinstance(raw.get("message"), str) and set(raw) == {"message"}:
        return ScriptTurn(error_text=raw["message"])
    kind = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
    if kind is None or (kind != "overflow" and kind not in PROVIDER_ERRORS):
        known = ", ".join(["overflow", *PROVIDER_ERRORS])
        raise ScenarioError(f"unknown provider error {brief(raw)}; expected one of {known} or {{message: TEXT}}",
                            field=field)
    return ScriptTurn(error=kind)


@final
@dataclass(frozen=True, slots=True)
class Fault:
    """Provider errors injected into a behaviour's run: model calls `at` .. `at + times - 1` (1-based) fail."""

    at: int
    kind: str
    times: int = 1


def parse_faults(raw: Any, field: str = "agent.errors") -> tuple[Fault, ...]:
    if not isinstance(raw, list):
        raise ScenarioError("expected a list of {at, kind, times}", field=field)
    faults = []
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"at", "kind", "times"} or "at" not in item:
            raise ScenarioError("expected {at: CALL, kind: KIND, times: N}", field=where)
        at, times = item["at"], item.get("times", 1)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in (at, times)):
            raise ScenarioError("at and times are counts ≥ 1", field=where)
        kind = str(item.get("kind", "500"))
        if kind != "overflow" and kind not in PROVIDER_ERRORS:
            raise ScenarioError(f"unknown provider error {brief(kind)}", field=f"{where}.kind")
        faults.append(Fault(at, kind, times))
    return tuple(faults)


# ---- behaviours --------------------------------------------------------------------------------------
class Behaviour(Protocol):
    """A model policy that decides each turn from what the prompt view shows."""

    def next_turn(self, view: PromptView, turn: int) -> ModelReply: ...


def _last_tool_entry(view: PromptView) -> Entry | None:
    for entry in reversed(view.entries):
        if entry.role == "tool":
            return entry
    return None


class _Params:
    """Parameter checking shared by the behaviours: names, types and defaults."""

    PARAMS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def check(cls, params: Mapping[str, Any], field: str) -> None:
        unknown = set(params) - set(cls.PARAMS)
        if unknown:
            raise ScenarioError(f"unknown parameter(s) {sorted(unknown)}; expected {', '.join(cls.PARAMS)}",
                                field=field)


@final
class ForgetfulReader(_Params):
    """Seed 001's reader: each turn reads the first of its files whose content it cannot see; then finishes.

    A file's content is visible when the view holds a full `read_file` result of it (not a dedup placeholder
    nor a summary). With `trusts_read_list`, a file named in a message a compaction put in the view (the list
    of files already read that Hermes injects) counts as seen.
    """

    PARAMS = ("files", "answer", "trusts_read_list")

    def __init__(self, files: Sequence[str], answer: str = "I have read every file.", *,
                 trusts_read_list: bool = False) -> None:
        self.files = tuple(files)
        self.answer = answer
        self.trusts_read_list = trusts_read_list
        self._headers = {path: f"File: {path} (" for path in self.files}

    @classmethod
    def from_params(cls, params: Mapping[str, Any], field: str) -> ForgetfulReader:
        cls.check(params, field)
        files = params.get("files")
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            raise ScenarioError("expected a non-empty list of paths", field=f"{field}.files")
        return cls(files, str(params.get("answer", "I have read every file.")),
                   trusts_read_list=bool(params.get("trusts_read_list", False)))

    def seen(self, view: PromptView) -> set[str]:
        seen: set[str] = set()
        for entry in view.entries:
            if entry.role == "tool":
                if entry.tool == "read_file" and not entry.replaced:
                    seen.update(p for p, h in self._headers.items() if entry.text.startswith(h))
            elif self.trusts_read_list and entry.replaced:  # a summary or a message injected after compaction
                seen.update(p for p in self.files if p in entry.text)
        return seen

    def next_turn(self, view: PromptView, turn: int) -> ModelReply:
        seen = self.seen(view)
        for path in self.files:
            if path not in seen:
                return ModelReply((ToolCall.of("read_file", {"path": path}),), text=f"Reading {path}.")
        return ModelReply(text=self.answer)


@final
class Poller(_Params):
    """Polls a page with snapshots until it shows ready, then clicks `target` and finishes.

    It navigates to `url` first (when given), re-snapshots after a failed or blocked click, and keeps polling
    while snapshots are blocked (a stubborn poller: what a loop guard must cope with).
    """

    PARAMS = ("url", "target", "answer", "ready_marker")

    def __init__(self, target: int, url: str | None = None, answer: str = "Clicked it.",
                 ready_marker: str = 'status "Ready"') -> None:
        self.target = target
        self.url = url
        self.answer = answer
        self.ready_marker = ready_marker

    @classmethod
    def from_params(cls, params: Mapping[str, Any], field: str) -> Poller:
        cls.check(params, field)
        target = params.get("target")
        if isinstance(target, bool) or not isinstance(target, int):
            raise ScenarioError("expected the index of the element to click", field=f"{field}.target")
        url = params.get("url")
        if url is not None and not isinstance(url, str):
            raise ScenarioError("expected a URL", field=f"{field}.url")
        return cls(target, url, str(params.get("answer", "Clicked it.")),
                   str(params.get("ready_marker", 'status "Ready"')))

    def next_turn(self, view: PromptView, turn: int) -> ModelReply:
        snapshot = ToolCall.of("browser_snapshot")
        last = _last_tool_entry(view)
        if last is None:
            if self.url is not None:
                return ModelReply((ToolCall.of("browser_navigate", {"url": self.url}),))
            return ModelReply((snapshot,))
        if last.tool == "browser_click":
            if last.text.startswith("Clicked"):
                return ModelReply(text=self.answer)
            return ModelReply((snapshot,), text="The click failed; taking a fresh snapshot.")
        if last.tool == "browser_snapshot" and not last.replaced and self.ready_marker in last.text:
            return ModelReply((ToolCall.of("browser_click", {"index": self.target}),))
        return ModelReply((snapshot,), text="Still loading; polling again.")


def _forever_or_count(params: Mapping[str, Any], key: str, field: str) -> int | None:
    """An optional count of a behaviour's turns: None (left out) means forever."""
    value = params.get(key)
    if value is not None and not is_count(value, 1):
        raise ScenarioError(f"expected a count ≥ 1 and ≤ {MAX_SCENARIO_COUNT} (or leave it out: forever)",
                            field=f"{field}.{key}")
    return cast(int | None, value)


def _shows_verdict(entry: Entry | None) -> bool:
    """Whether a tool result as the agent sees it carries a guard's warning or block (their messages' words)."""
    return entry is not None and ("Warning:" in entry.text or entry.text.startswith("Error: Blocked"))


@final
class Retrier(_Params):
    """Repeats one call `attempts` times whatever it returns (forever when None), then gives up.

    With `heeds`, it changes course once a result it sees carries a warning or block: it makes `instead` (when
    given) and then gives up, so a simulated run shows whether a verdict was heeded (`loopguard eval --heeded`).
    """

    PARAMS = ("call", "attempts", "answer", "heeds", "instead")

    def __init__(self, call: ToolCall, attempts: int | None = None, answer: str = "I could not do it.", *,
                 heeds: bool = False, instead: ToolCall | None = None) -> None:
        self.call = call
        self.attempts = attempts
        self.answer = answer
        self.heeds = heeds
        self.instead = instead
        self._made = 0
        self._changed = False  # whether it made `instead` after heeding a verdict

    @classmethod
    def from_params(cls, params: Mapping[str, Any], field: str) -> Retrier:
        cls.check(params, field)
        attempts = _forever_or_count(params, "attempts", field)
        heeds = params.get("heeds", False)
        if not isinstance(heeds, bool):
            raise ScenarioError("expected true or false", field=f"{field}.heeds")
        instead = _call(params["instead"], f"{field}.instead") if params.get("instead") is not None else None
        return cls(_call(params.get("call"), f"{field}.call"), attempts,
                   str(params.get("answer", "I could not do it.")), heeds=heeds, instead=instead)

    def next_turn(self, view: PromptView, turn: int) -> ModelReply:
        if self.heeds and (self._changed or _shows_verdict(_last_tool_entry(view))):
            if self.instead is not None and not self._changed:
                self._changed = True
                return ModelReply((self.instead,), text="The guard warned me; trying another way.")
            return ModelReply(text=self.answer, success=False)
        if self.attempts is not None and self._made >= self.attempts:
            return ModelReply(text=self.answer, success=False)
        self._made += 1
        return ModelReply((self.call,), text="Trying again." if self._made > 1 else None)


@final
class PingPong(_Params):
    """Alternates two calls, a, b, a, b …, for `turns` turns (forever when None), then finishes."""

    PARAMS = ("a", "b", "turns", "answer")

    def __init__(self, a: ToolCall, b: ToolCall, turns: int | None = None, answer: str = "Done.") -> None:
        self.a, self.b = a, b
        self.turns = turns
        self.answer = answer
        self._made = 0

    @classmethod
    def from_params(cls, params: Mapping[str, Any], field: str) -> PingPong:
        cls.check(params, field)
        turns = _forever_or_count(params, "turns", field)
        return cls(_call(params.get("a"), f"{field}.a"), _call(params.get("b"), f"{field}.b"),
                   turns, str(params.get("answer", "Done.")))

    def next_turn(self, view: PromptView, turn: int) -> ModelReply:
        if self.turns is not None and self._made >= self.turns:
            return ModelReply(text=self.answer)
        call = self.a if self._made % 2 == 0 else self.b
        self._made += 1
        return ModelReply((call,))


BEHAVIOURS: Final[Mapping[str, Any]] = {
    "forgetful_reader": ForgetfulReader,
    "poller": Poller,
    "retrier": Retrier,
    "ping_pong": PingPong,
}


# ---- the model ---------------------------------------------------------------------------------------
@final
class FakeLLM:
    """A scripted or behaviour-driven model with a context window and real providers' error wording."""

    def __init__(
        self,
        script: Sequence[ScriptTurn] | Sequence[Mapping[str, Any]] | None = None,
        *,
        behaviour: Behaviour | None = None,
        window_tokens: int | None = None,
        provider: str = "openai",
        faults: Sequence[Fault] = (),
        final_answer: str = "Script finished.",
    ) -> None:
        if (script is None) == (behaviour is None):
            raise ValueError("give a script or a behaviour (exactly one)")
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
        turns: tuple[ScriptTurn, ...] = ()
        if script is not None:
            given = list(script)
            turns = tuple(t for t in given if isinstance(t, ScriptTurn))
            if len(turns) != len(given):
                turns = parse_script(given)
        self.script = turns
        self.behaviour = behaviour
        self.window_tokens = window_tokens
        self.provider = provider
        self.faults = tuple(faults)
        self.final_answer = final_answer
        self.calls = 0  # model calls answered or failed
        self.prompt_tokens: list[int] = []  # the view's tokens at each model call
        self._next = 0  # next script turn

    def respond(self, view: PromptView, turn: int) -> ModelReply:
        self.calls += 1
        tokens = view.tokens()
        self.prompt_tokens.append(tokens)
        window = self.window_tokens
        if window is not None and tokens > window:
            raise ProviderError(overflow_message(self.provider, window, tokens), status=400)
        for fault in self.faults:
            if fault.at <= self.calls < fault.at + fault.times:
                raise provider_error(fault.kind, provider=self.provider, window=window or 8192, tokens=tokens)
        if self.behaviour is not None:
            return self._priced(self.behaviour.next_turn(view, turn))
        if self._next >= len(self.script):
            return self._priced(ModelReply(text=self.final_answer))
        step = self.script[self._next]
        self._next += 1
        if step.error_text is not None:
            raise ProviderError(step.error_text)
        if step.error is not None:
            raise provider_error(step.error, provider=self.provider, window=window or 8192, tokens=tokens)
        if step.answer is not None:
            return self._priced(ModelReply(text=step.answer, success=step.success))
        return self._priced(ModelReply(step.calls, text=step.text))

    @staticmethod
    def _priced(reply: ModelReply) -> ModelReply:
        """The reply with its output tokens: the assistant message as the Guard renders it, ceil(chars / 4)."""
        if reply.output_tokens is not None:
            return reply
        parts = ([reply.text] if reply.text else []) + [f"{c.tool}({c.ordered})" for c in reply.calls]
        return ModelReply(reply.calls, reply.text, max(1, chars_over_four("\n".join(parts))), reply.success)
