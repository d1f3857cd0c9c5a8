"""The step loader's builders of the frozen model objects: twins (the pure-Python model), else constructors.

Kept apart from the fast reader (`_faststep`) because the twins are Python classes assigned a model class's
`__class__`, which the compiled build cannot make of a compiled module's classes: this module stays Python in
both builds, the reader is compiled in the compiled one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from ..core._frozen import Frozen
from ..core._model import LLMCall, LLMStep, StepExpect, StepSource, ToolCall, ToolResult, ToolStep
from ..core._steps import _StepFields

__all__ = ["new_llm", "new_llm_step", "new_result", "new_tool_step"]

# ---- building the frozen model objects ------------------------------------------------------------------
# A frozen dataclass's __init__ sets each field through object.__setattr__ (a global look-up, an attribute
# look-up and a call per field: 1.4 µs for a Step). The values here are already checked, so each object is
# built as a plain twin with the same slots (ordinary attribute stores), then made the model class by
# assigning __class__: CPython allows that between classes of identical layout, and the result is the
# frozen class through and through. The field lists are checked against the model at import, so a field
# added there cannot be left unset here (tests/core/test_faststep.py compares every field, too). A compiled
# model (the optional mypyc build) has native classes, which have no slots to share: their own constructors
# build them, and are fast there.
_COMMON_FIELDS: Final = ("index", "expect", "t", "line", "extensions", "agent", "source")
_TOOL_FIELDS: Final = ("call", "result", "not_run", "kind")
_LLM_STEP_FIELDS: Final = ("llm", "kind")
_RESULT_FIELDS: Final = ("ok", "text", "error", "tokens", "bytes", "changed", "exit_code")
_LLM_FIELDS: Final = ("input_tokens", "output_tokens", "error", "text")


def _twinnable(cls: type, names: tuple[str, ...], inherited: tuple[str, ...] = ()) -> bool:
    """Whether `cls` adds exactly the slots `names` to its base's (False: a compiled class); its fields must be
    `inherited` + `names`."""
    fields: tuple[str, ...] | None = getattr(cls, "_fields", None)  # a frozen class's (core._frozen): no view made
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(cls))
    if fields != inherited + names:  # a model change: the builders below must set the new field too
        raise RuntimeError(f"faststep builds {cls.__name__} with fields {inherited + names}, the model has {fields}")
    return getattr(cls, "__slots__", None) == names


_TWINS: Final = all([_twinnable(ToolStep, _TOOL_FIELDS, _COMMON_FIELDS),
                     _twinnable(LLMStep, _LLM_STEP_FIELDS, _COMMON_FIELDS),
                     _twinnable(_StepFields, _COMMON_FIELDS),
                     _twinnable(ToolResult, _RESULT_FIELDS), _twinnable(LLMCall, _LLM_FIELDS)])

# A step's twin derives from the steps' common base, as its class does, so the two add the same slots to the
# same base: the layout CPython requires for the __class__ assignment. It stores plainly (no frozen setattr);
# the base is typed Any for it, as mypy takes a frozen dataclass's fields for read-only. A compiled base (a
# native class) takes no Python subclass: the constructors build its steps.
_TwinBase: Any = _StepFields if _TWINS else object


class _ToolStepTwin(_TwinBase):  # type: ignore[misc]  # an Any base: see above
    __slots__ = _TOOL_FIELDS
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__  # both, or CPython keeps the slow setattr slot of the frozen base

    def __init__(self, index: int, call: ToolCall, result: ToolResult | None, expect: StepExpect | None,
                 t: int | None, extensions: dict[str, Any], agent: str | None, source: StepSource | None) -> None:
        self.index = index
        self.call = call
        self.result = result
        self.not_run = None
        self.kind = "tool"
        self.expect = expect
        self.t = t
        self.line = None
        self.extensions = extensions
        self.agent = agent
        self.source = source


class _LLMStepTwin(_TwinBase):  # type: ignore[misc]
    __slots__ = _LLM_STEP_FIELDS
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__  # both, or CPython keeps the slow setattr slot of the frozen base

    def __init__(self, index: int, llm: LLMCall, expect: StepExpect | None, t: int | None,
                 extensions: dict[str, Any], agent: str | None, source: StepSource | None) -> None:
        self.index = index
        self.llm = llm
        self.kind = "llm"
        self.expect = expect
        self.t = t
        self.line = None
        self.extensions = extensions
        self.agent = agent
        self.source = source


# a payload's twin derives from the frozen base, as its class does (the same layout for the __class__ assignment)
_FrozenBase: Any = Frozen


class _ResultTwin(_FrozenBase):  # type: ignore[misc]  # an Any base, as the steps' twins
    __slots__ = _RESULT_FIELDS
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__

    def __init__(self, ok: bool, text: str | None, error: str | None, tokens: int | None, size: int | None,
                 changed: bool, code: int | None) -> None:
        self.ok = ok
        self.text = text
        self.error = error
        self.tokens = tokens
        self.bytes = size
        self.changed = changed
        self.exit_code = code


class _LLMTwin(_FrozenBase):  # type: ignore[misc]
    __slots__ = _LLM_FIELDS
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__

    def __init__(self, input_tokens: int | None, output_tokens: int | None, error: str | None,
                 text: str | None) -> None:
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.error = error
        self.text = text


def _twin_tool_step(index: int, call: ToolCall, result: ToolResult | None, expect: StepExpect | None, t: int | None,
                    extensions: dict[str, Any], agent: str | None, source: StepSource | None) -> ToolStep:
    """A tool step (no line), as `ToolStep(...)` makes it."""
    step: Any = _ToolStepTwin(index, call, result, expect, t, extensions, agent, source)
    step.__class__ = ToolStep
    return step  # type: ignore[no-any-return]


def _twin_llm_step(index: int, llm: LLMCall, expect: StepExpect | None, t: int | None, extensions: dict[str, Any],
                   agent: str | None, source: StepSource | None) -> LLMStep:
    """An llm step (no line), as `LLMStep(...)` makes it."""
    step: Any = _LLMStepTwin(index, llm, expect, t, extensions, agent, source)
    step.__class__ = LLMStep
    return step  # type: ignore[no-any-return]


def _twin_result(ok: bool, text: str | None, error: str | None, tokens: int | None, size: int | None,
                 changed: bool, code: int | None) -> ToolResult:
    result: Any = _ResultTwin(ok, text, error, tokens, size, changed, code)
    result.__class__ = ToolResult
    return result  # type: ignore[no-any-return]


def _twin_llm(input_tokens: int | None, output_tokens: int | None, error: str | None, text: str | None) -> LLMCall:
    llm: Any = _LLMTwin(input_tokens, output_tokens, error, text)
    llm.__class__ = LLMCall
    return llm  # type: ignore[no-any-return]


def _built_tool_step(index: int, call: ToolCall, result: ToolResult | None, expect: StepExpect | None,
                     t: int | None, extensions: dict[str, Any], agent: str | None,
                     source: StepSource | None) -> ToolStep:
    return ToolStep(index, call, result, expect=expect, t=t, extensions=extensions, agent=agent, source=source)


def _built_llm_step(index: int, llm: LLMCall, expect: StepExpect | None, t: int | None, extensions: dict[str, Any],
                    agent: str | None, source: StepSource | None) -> LLMStep:
    return LLMStep(index, llm, expect=expect, t=t, extensions=extensions, agent=agent, source=source)


new_tool_step: Final = _twin_tool_step if _TWINS else _built_tool_step
new_llm_step: Final = _twin_llm_step if _TWINS else _built_llm_step
new_result: Final[Callable[..., ToolResult]] = _twin_result if _TWINS else ToolResult
new_llm: Final[Callable[..., LLMCall]] = _twin_llm if _TWINS else LLMCall
