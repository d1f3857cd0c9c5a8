"""Agent logs are untrusted too: deep JSON inside a log (a tool call's argument string) is kept as text
with the reason, never parsed by recursion into a crash or an internal error."""

from __future__ import annotations

from pytest_loopguard.core._limits import MAX_DEPTH
from pytest_loopguard.importers.build import parse_arguments


def test_deep_argument_text_is_kept_raw_with_the_reason() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    args, extra = parse_arguments(deep)
    assert args == {} and extra == {"x-arguments": deep,
                                    "x-arguments-error": f"nested deeper than {MAX_DEPTH} levels"}


def test_argument_text_at_the_depth_limit_is_parsed() -> None:
    inner = MAX_DEPTH - 1
    args, extra = parse_arguments('{"a": ' + "[" * inner + "]" * inner + "}")
    assert extra == {} and list(args) == ["a"]
