r"""stuck_detector: whole-history loop detection as OpenHands (V0 and SDK) and Gemini CLI do it (PRESETS.md).

Setting `detector` picks one of three rule sets, written below one after the other:

- `openhands` (V0 `controller/stuck.py`): a history of actions (calls, agent messages) and observations
  (results, condensations); after every step that adds an event, five patterns are tried and the first
  that holds stops the run.
- `openhands_sdk` (software-agent-sdk `stuck_detector.py`): the last `window` events after the last user
  message; a nudge (`warn`) at `action_error` identical failing calls, then four stop rules.
- `gemini` (gemini-cli `loopDetectionService.ts`): a cycle of 1–5 call keys repeated 5 times in the last
  25 calls, or a 50-character chunk of the model's text recurring 10 times close together; the first
  detection of a prompt blocks (or warns on text), the second stops. In JavaScript's terms (core/_js.py):
  `JSON.stringify` keys, UTF-16 lengths, JavaScript's `\s`, `\d` and `.` in the markdown patterns.

Each rule set keeps only what its rules can look at: V0 the last 6 actions and observations, 3 agent
messages and 10 condensations; the SDK its window; Gemini 25 keys and a 5,000-character buffer.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..core._identity import is_flat, key_part, ordered_js_json
from ..core._js import utf8_form, utf16
from ..core._model import Action, Verdict
from ..core.hookspecs import hookimpl
from ._repeated_text import CODE_FENCE, DIVIDER, STRUCTURE, ChunkIndex
from .base import Engine
from .settings.stuck_detector import Settings

if TYPE_CHECKING:
    from collections.abc import Hashable

    from ..core._model import LLMCall, Message, ToolCall, ToolResult
    from ..core._runcontext import RunContext, Turn

__all__ = ["ENGINE", "Settings", "StuckDetector"]

NAME = "stuck_detector"



StuckSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class _Rules:
    """One detector's history and rules; the engine forwards the events it gets."""

    def __init__(self, settings: StuckSettings, run: RunContext) -> None:
        self.settings = settings
        self.run = run

    def before_call(self, call: ToolCall) -> Verdict | None:
        return None

    def after_call(self, call: ToolCall, result: ToolResult, turn: Turn | None) -> Verdict | None:
        return None

    def agent_text(self, text: str, *, llm: bool) -> Verdict | None:
        return None

    def turn_start(self, turn: Turn) -> None:
        return None

    def user_message(self) -> None:
        return None

    def condensation(self) -> Verdict | None:
        return None


def _thought(call_index: int, turn: Turn | None) -> str:
    """The words of the response that made the call: on the turn's first call only."""
    if call_index == 0 and turn is not None and turn.llm is not None:
        return turn.llm.text or ""
    return ""


def _result_text(result: ToolResult) -> str:
    text = result.result_text
    return text if text is not None else ""


def _stop(rule: str, repeats: int | None = None, **data: Any) -> Verdict:
    if repeats is not None:
        data["repeats"] = repeats
    return Verdict(NAME, Action.STOP, f"{NAME}.{rule}", f"Agent got stuck in a loop ({rule})", data)


# ---- openhands (V0) -------------------------------------------------------------------------------
class _Action(NamedTuple):
    """A V0 action: a call (key = tool + canonical arguments) or an agent message (key = its text)."""

    message: bool
    key: str
    thought: str = ""
    edit_head: tuple[str, ...] | None = None  # first 3 lines of an `edit_file_by_replace(` cell
    edit_long: bool = False  # that cell has more than 2 lines


def _same_action(recent: _Action, other: _Action) -> bool:
    """V0's equality, the most recent action on the left (it decides the edit exception)."""
    if recent.message != other.message:
        return False
    if recent.edit_head is not None and other.edit_head is not None:
        # two edits of the same place with new replacement text are the same action (thoughts ignored)
        return recent.edit_long and recent.edit_head == other.edit_head
    return recent.key == other.key and recent.thought == other.thought


_CONDENSATION: tuple[Hashable, ...] = ("condensation",)
_UNTERMINATED = "SyntaxError: unterminated string literal (detected at line"
_SYNTAX_MESSAGES = ("SyntaxError: invalid syntax. Perhaps you forgot a comma?", "SyntaxError: incomplete input")


def _jupyter_footer(lines: list[str]) -> bool:
    return lines[-1].startswith("[Jupyter Python interpreter:") and lines[-2].startswith(
        "[Jupyter current working directory:"
    )


def _syntax_errors(texts: list[str]) -> bool:
    """V0's test that three IPython cells failed with the same syntax error at the same place."""
    split = [t.strip().split("\n") for t in texts]
    if all(len(lines) >= 3 and _jupyter_footer(lines) for lines in split):
        third = [lines[-3] for lines in split]
        if _UNTERMINATED in third[0] and all(t == third[0] for t in third):
            return True
    for marker in _SYNTAX_MESSAGES:
        if not all(len(lines) >= 6 and lines[0].strip().startswith("Cell In[1], line") for lines in split):
            return False
        firsts = [lines[0].strip() for lines in split]
        third = [lines[-3] for lines in split]
        if (
            all(f == firsts[0] for f in firsts)
            and all(_jupyter_footer(lines) and marker in lines[-3] for lines in split)
            and all(t == third[0] for t in third)
        ):
            return True
    return False


class _OpenHands(_Rules):
    """OpenHands V0: five patterns over the (filtered) history, tried after every event."""

    def __init__(self, settings: StuckSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self._command_tools = frozenset(settings.command_tools)
        self._ipython_tools = frozenset(settings.ipython_tools)
        self._reset()

    def _reset(self) -> None:
        self._events = 0  # events in the filtered history
        self._actions: deque[_Action] = deque(maxlen=6)
        self._observations: deque[tuple[Hashable, ...]] = deque(maxlen=6)
        self._last_observation = 0  # event number of the latest observation (0: none)
        # agent messages: (event number, text, event number of the latest observation before it)
        self._messages: deque[tuple[int, str, int]] = deque(maxlen=3)
        # per condensation: whether the event just before it was a condensation too
        self._condensations: deque[bool] = deque(maxlen=10)
        self._after_condensation = False

    # ---- events --------------------------------------------------------------------------------------
    def _add_action(self, action: _Action) -> None:
        self._events += 1
        self._actions.append(action)
        if action.message:
            self._messages.append((self._events, action.key, self._last_observation))
        self._after_condensation = False

    def _add_observation(self, observation: tuple[Hashable, ...]) -> None:
        self._events += 1
        self._observations.append(observation)
        self._last_observation = self._events
        condensation = observation is _CONDENSATION
        if condensation:
            self._condensations.append(self._after_condensation)
        self._after_condensation = condensation

    def _call_action(self, call: ToolCall, thought: str) -> _Action:
        code = call.args.get("code")
        if call.tool in self._ipython_tools and isinstance(code, str) and "edit_file_by_replace(" in code:
            lines = code.split("\n")
            return _Action(False, call.fingerprint, thought, tuple(lines[:3]), len(lines) > 2)
        return _Action(False, call.fingerprint, thought)

    def _observation(self, call: ToolCall, result: ToolResult) -> tuple[Hashable, ...]:
        exit_code = result.exit_code
        if not result.ok and exit_code is None:
            return ("error", result.error or "")
        if call.tool in self._command_tools:
            return ("command", key_part(call.args.get("command")), exit_code or 0)
        if call.tool in self._ipython_tools:
            return ("ipython", call.tool, _result_text(result))
        return ("output", call.tool, _result_text(result))

    def after_call(self, call: ToolCall, result: ToolResult, turn: Turn | None) -> Verdict | None:
        index = len(turn.results) - 1 if turn is not None else 0
        self._add_action(self._call_action(call, _thought(index, turn)))
        self._add_observation(self._observation(call, result))
        return self._check()

    def agent_text(self, text: str, *, llm: bool) -> Verdict | None:
        self._add_action(_Action(True, text))
        return self._check()

    def user_message(self) -> None:
        if not self.settings.headless:  # the GUI server looks only after the last user message
            self._reset()

    def condensation(self) -> Verdict | None:
        self._add_observation(_CONDENSATION)
        return self._check()

    # ---- rules ---------------------------------------------------------------------------------------
    def _check(self) -> Verdict | None:
        if self._events < 3:
            return None
        # rules 1 and 2 need the last action equal to the one before it, rule 4 to the one two before it:
        # most events have neither, and skip building the newest-first lists
        actions = self._actions
        repeating = len(actions) >= 2 and (
            _same_action(actions[-1], actions[-2]) or (len(actions) >= 3 and _same_action(actions[-1], actions[-3])))
        a = list(reversed(actions)) if repeating else []  # most recent first
        o = list(reversed(self._observations)) if repeating else []
        # 1. four equal actions, each with an equal observation
        if (len(a) >= 4 and len(o) >= 4 and all(_same_action(a[0], x) for x in a[1:4])
                and all(x == o[0] for x in o[1:4])):
            return _stop("repeating_action_observation", 4)
        # 2. three equal actions, each answered by an error (or the same syntax error in IPython)
        if len(a) >= 3 and len(o) >= 3 and all(_same_action(a[0], x) for x in a[1:3]):
            last = o[:3]
            if all(x[0] == "error" for x in last) or (
                all(x[0] == "ipython" for x in last) and _syntax_errors([str(x[2]) for x in last])
            ):
                return _stop("repeating_action_error", 3)
        # 3. the agent said the same thing three times with no observation in between
        if len(self._messages) == 3:
            (first, first_text, _), (_, middle_text, _), (_, last_text, seen) = self._messages
            if first_text == last_text and middle_text == last_text and seen < first:
                return _stop("monologue", 3)
        # 4. A B A B A B in both actions and observations
        if (self._events >= 6 and len(a) >= 6 and len(o) >= 6
                and all(_same_action(a[i], a[j]) for i in (0, 1) for j in (i + 2, i + 4))
                and all(o[i] == o[j] for i in (0, 1) for j in (i + 2, i + 4))):
            return _stop("repeating_action_observation_pattern", 3)
        # 5. condensation after condensation: the context window keeps overflowing
        if (self._events >= 10 and len(self._condensations) == 10
                and any(self._condensations[i] for i in range(1, 10))):
            return _stop("context_window_error", 2)
        return None


# ---- openhands_sdk --------------------------------------------------------------------------------
# history events: ("action", tool + canonical arguments, thought), ("observation", *observation),
# ("message",), ("nudge",); observations: ("error", text) or ("output", tool, text, exit code)
_MESSAGE: tuple[Hashable, ...] = ("message",)
_NUDGE: tuple[Hashable, ...] = ("nudge",)


class _OpenHandsSDK(_Rules):
    """The SDK: a nudge at `action_error` identical failing calls, then four stop rules over the window."""

    def __init__(self, settings: StuckSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        # a user message starts the window afresh, so the window is simply the tail since the last one
        self._window: deque[tuple[Hashable, ...]] = deque(maxlen=settings.window)
        self._observation_count = 0
        self._nudged = 0  # the observation (by count) a nudge was given for; 0: none

    def _split(self, n: int) -> tuple[list[tuple[Hashable, ...]], list[tuple[Hashable, ...]]]:
        """The last n actions and the last n observations of the window, each most recent first."""
        actions: list[tuple[Hashable, ...]] = []
        observations: list[tuple[Hashable, ...]] = []
        for event in reversed(self._window):
            if event[0] == "action" and len(actions) < n:
                actions.append(event)
            elif event[0] == "observation" and len(observations) < n:
                observations.append(event)
        return actions, observations

    def _error_streak(self, n: int) -> int:
        actions, observations = self._split(n)
        streak = 0
        for action, observation in zip(actions, observations, strict=False):
            if action != actions[0] or observation[1] != "error":
                break
            streak += 1
        return streak

    def after_call(self, call: ToolCall, result: ToolResult, turn: Turn | None) -> Verdict | None:
        index = len(turn.results) - 1 if turn is not None else 0
        self._window.append(("action", call.fingerprint, _thought(index, turn)))
        exit_code = result.exit_code
        if not result.ok and exit_code is None:
            self._window.append(("observation", "error", result.error or ""))
        else:
            self._window.append(("observation", "output", call.tool, _result_text(result), exit_code))
        self._observation_count += 1
        # the SDK checks once per model response: after the turn's last call
        if turn is not None and len(turn.results) < len(turn.calls):
            return None
        return self._check()

    def agent_text(self, text: str, *, llm: bool) -> Verdict | None:
        self._window.append(_MESSAGE)
        return self._check()

    def user_message(self) -> None:
        self._window.clear()

    def _check(self) -> Verdict | None:
        s = self.settings
        window = self._window
        # 1. the nudge comes first, once per observation, and stands in for the stuck check
        if self._nudged != self._observation_count and self._error_streak(s.action_error + 1) == s.action_error:
            self._nudged = self._observation_count
            actions, observations = self._split(1)
            name = str(actions[0][1]).split("\x1f", 1)[0]  # the streak is not 0: both exist
            error = str(observations[0][2])
            window.append(_NUDGE)
            return Verdict(
                NAME, Action.WARN, f"{NAME}.action_error_nudge",
                f"You've called `{name}` with the same arguments {s.action_error} times in a row and gotten the "
                f"same error each time: {error}. Repeating the exact same call again will not work — review the "
                "error message and either correct the arguments or try a different approach.",
                {"tool": name, "count": s.action_error, "error": error},
            )
        # 2. the stuck check
        if len(window) < min(s.action_observation, s.action_error, s.monologue):
            return None
        n = max(s.action_observation, s.action_error + 1)
        actions, observations = self._split(n)
        k = s.action_observation
        if (len(actions) >= k and len(observations) >= k and all(x == actions[0] for x in actions[1:k])
                and all(x == observations[0] for x in observations[1:k])):
            return _stop("repeating_action_observation", k)
        streak = self._error_streak(n)
        if streak > s.action_error:
            return _stop("repeating_action_error", streak)
        if len(window) >= s.monologue:
            count = 0
            for event in reversed(window):
                if event is _NUDGE:
                    continue
                if event is not _MESSAGE:
                    break
                count += 1
            if count >= s.monologue:
                return _stop("monologue", count)
        p = s.alternating_pattern
        if len(window) >= p:
            actions, observations = self._split(p)
            if (len(actions) == p and len(observations) == p
                    and all(actions[i] == actions[i + 2] for i in range(p - 2))
                    and all(observations[i] == observations[i + 2] for i in range(p - 2))):
                return _stop("alternating_action_observation", p // 2)
        return None


# ---- gemini ---------------------------------------------------------------------------------------
_FEEDBACK = (
    "System: Potential loop detected. Details: {details}. Please take a step back and confirm you're making "
    "forward progress. If not, analyze your previous actions and try a different approach."
)


class _Gemini(_Rules):
    """Gemini CLI: repeated cycles of call keys, and chanting (a chunk of text recurring close together)."""

    def __init__(self, settings: StuckSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self._keys: deque[str] = deque(maxlen=settings.tool_history)
        self._detections = 0  # per prompt
        self._code_block = False  # survives a new prompt (Gemini's reset leaves it)
        self._cut_turn: int | None = None  # the turn whose later calls were never received
        self._cut_next_turn = False  # a content detection on an llm step cuts the turn it starts
        self._chunks = ChunkIndex(settings.chunk_size, settings.content_buffer)  # the content check's text

    def _detection(self, rule: str, details: str, data: dict[str, Any]) -> Verdict:
        self._detections += 1
        data["detections"] = self._detections
        if self._detections > 1:  # LoopDetected: the request is halted
            return Verdict(NAME, Action.STOP, f"{NAME}.{rule}", f"Loop detected again in this prompt: {details}.", data)
        action: Literal[Action.BLOCK, Action.WARN] = Action.BLOCK if rule == "tool_loop" else Action.WARN
        return Verdict(NAME, action, f"{NAME}.{rule}", _FEEDBACK.format(details=details), data)

    def _cut(self) -> Verdict:
        return Verdict(
            NAME, Action.BLOCK, f"{NAME}.turn_cut",
            "Not run: the response was cut off at a loop detection before this call was received.",
            {"turn": self._cut_turn},
        )

    def before_call(self, call: ToolCall) -> Verdict | None:
        turn = self.run.turn
        if self._cut_turn is not None and turn is not None and turn.index == self._cut_turn:
            return self._cut()
        self._chunks.clear()
        s = self.settings
        keys = self._keys
        # Gemini's key is JSON.stringify of the arguments: the call's as-written identity on flat ones
        keys.append(call.ordered_fingerprint if is_flat(call.args) else call.tool + "\x1f" + ordered_js_json(call.args))
        n = len(keys)
        for k in s.cycle_lengths:
            span = k * s.cycle_repeats
            if n < span:
                continue
            if all(keys[i] == keys[i + k] for i in range(n - span, n - k)):
                if turn is not None:
                    self._cut_turn = turn.index
                return self._detection(
                    "tool_loop",
                    f"the last {span} tool calls repeat a cycle of {k} call{'s' if k > 1 else ''} "
                    f"{s.cycle_repeats} times",
                    {"tool": call.tool, "cycle": k, "repeats": s.cycle_repeats},
                )
        return None

    def turn_start(self, turn: Turn) -> None:
        if self._cut_next_turn:
            self._cut_next_turn = False
            self._cut_turn = turn.index

    def agent_text(self, text: str, *, llm: bool) -> Verdict | None:
        verdict = self._content(text)
        if verdict is not None and verdict.action == Action.WARN:
            if llm:
                self._cut_next_turn = True
            elif self.run.turn is not None:
                self._cut_turn = self.run.turn.index
        return verdict

    def user_message(self) -> None:
        self._keys.clear()
        self._chunks.clear()
        self._detections = 0
        self._cut_turn = None
        self._cut_next_turn = False

    def _content(self, text: str) -> Verdict | None:
        s = self.settings
        text = utf16(text)  # JavaScript's string: lengths and positions count UTF-16 code units (an emoji is two)
        fences = text.count(CODE_FENCE)
        divider = DIVIDER.fullmatch(text) is not None
        if fences or divider or any(p.search(text) for p in STRUCTURE):
            self._chunks.clear()
        was_in_code = self._code_block
        if fences % 2:
            self._code_block = not self._code_block
        if was_in_code or self._code_block or divider:
            return None
        found = self._chunks.add(text, s.content_threshold, self._chanting)
        if found is None:
            return None
        chunk, count = found
        return self._detection(
            "content_loop", f"the same {s.chunk_size} characters were repeated {s.content_threshold} times",
            {"chunk": utf8_form(chunk), "count": count},  # as Node writes it: half an emoji is U+FFFD
        )

    def _chanting(self, seen: list[int], buffer: str, base: int) -> bool:
        """Whether a chunk's latest `content_threshold` positions are a loop: close together on average, and
        few distinct texts between one and the next."""
        s = self.settings
        threshold = s.content_threshold
        tail = seen[-threshold:]
        if (tail[-1] - tail[0]) / (threshold - 1) > s.max_average_distance:
            return False
        return len({buffer[p - base:q - base] for p, q in pairwise(tail)}) <= s.max_distinct_periods


_RULE_SETS: dict[str, type[_Rules]] = {"openhands": _OpenHands, "openhands_sdk": _OpenHandsSDK, "gemini": _Gemini}


class StuckDetector(Engine[StuckSettings]):
    """Feeds the run's calls, results, texts and condensations to the chosen rule set.

    The OpenHands detectors never block: their `stop` on a tool step means the call ran and the run ends
    after it. After a stop the engine says nothing more.
    """

    name = NAME
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "stuck_detector.repeating_action_observation",
        "stuck_detector.repeating_action_error",
        "stuck_detector.monologue",
        "stuck_detector.repeating_action_observation_pattern",
        "stuck_detector.context_window_error",
        "stuck_detector.action_error_nudge",
        "stuck_detector.alternating_action_observation",
        "stuck_detector.tool_loop",
        "stuck_detector.content_loop",
        "stuck_detector.turn_cut",
    )

    def __init__(self, settings: StuckSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self._rules = _RULE_SETS[settings.detector](settings, run)
        self._gemini = settings.detector == "gemini"
        self._stopped = False
        self._condensed = False

    def _out(self, verdict: Verdict | None) -> Verdict | None:
        if self._stopped:
            return None
        if verdict is not None and verdict.action == Action.STOP:
            self._stopped = True
        return verdict

    @hookimpl
    def loopguard_before_call(self, call: ToolCall) -> Verdict | None:
        return self._out(self._rules.before_call(call))

    @hookimpl
    def loopguard_after_call(self, call: ToolCall, result: ToolResult | None, blocked: bool) -> Verdict | None:
        if blocked or result is None:  # a call that did not run adds nothing
            return None
        return self._out(self._rules.after_call(call, result, self.run.turn))

    @hookimpl
    def loopguard_turn_start(self, turn: Turn) -> Verdict | None:
        self._rules.turn_start(turn)
        llm = turn.llm
        # OpenHands: a response without calls is an agent message (Gemini reads every text in llm_result)
        if self._gemini or turn.calls or llm is None or not llm.text or llm.failed:
            return None
        return self._out(self._rules.agent_text(llm.text, llm=True))

    @hookimpl
    def loopguard_llm_result(self, llm: LLMCall) -> Verdict | None:
        if not self._gemini or llm.failed or not llm.text:
            return None
        return self._out(self._rules.agent_text(llm.text, llm=True))

    @hookimpl
    def loopguard_before_llm(self) -> None:
        self._condensed = False  # a new model call: at most one condensation event per llm step

    @hookimpl
    def loopguard_compacted(self) -> Verdict | None:
        if self._condensed:  # compacted before the call and again after its overflow: one event
            return None
        self._condensed = True
        return self._out(self._rules.condensation())

    @hookimpl
    def loopguard_message(self, message: Message) -> Verdict | None:
        if message.origin not in (None, "user"):  # the harness's or another agent's words: not this history
            return None
        if message.role == "user":
            self._rules.user_message()
            return None
        if message.role == "assistant":
            return self._out(self._rules.agent_text(message.text, llm=False))
        return None


ENGINE = StuckDetector
