"""Every example test in docs/strategies.md runs, so the documentation stays true."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "strategies.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
PRELUDE, EXAMPLES = BLOCKS[0], BLOCKS[1:]


def test_every_strategy_is_documented_with_an_example() -> None:
    from pytest_loopguard.pytest import _strategies as strategies

    text = DOC.read_text(encoding="utf-8")
    callables = [n for n in strategies.__all__ if callable(getattr(strategies, n))]
    for name in callables:
        assert f"`{name}(" in text, f"{name} is not documented"
        assert any(f"lgst.{name}(" in block for block in EXAMPLES), f"{name} has no example"


@pytest.mark.parametrize("block", EXAMPLES, ids=[re.search(r"def (\w+)", b).group(1) for b in EXAMPLES])  # type: ignore[union-attr]
def test_documented_example_passes(block: str) -> None:
    namespace: dict[str, Any] = {}
    # a pseudo file name: hypothesis then keys its example database on the function name, not its source
    exec(compile(PRELUDE + block, "<docs/strategies.md>", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests
    for test in tests:
        test()
