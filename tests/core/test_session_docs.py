"""docs/runtime.md stays true: every python block runs as written, and every session method is documented."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.live import _adapters as adapters
from pytest_loopguard.live._session import Session

DOC = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"
TEXT = DOC.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block-{i}" for i in range(len(BLOCKS))])
def test_every_python_block_runs_as_written(block: str) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block, "<docs/runtime.md>", "exec"), namespace)


def test_the_example_loop_is_a_complete_agent_loop_that_the_policy_stops() -> None:
    loop = BLOCKS[0]
    for needed in ("Session(", "before_llm()", "llm_result(", "before_call(", "after_call(", "replay(load(path))"):
        assert needed in loop


def test_every_public_session_method_and_adapter_is_documented() -> None:
    methods = [n for n in dir(Session) if not n.startswith("_") and callable(getattr(Session, n))]
    for name in methods:
        assert f"{name}(" in TEXT, f"Session.{name} is not in docs/runtime.md"
    for name in adapters.__all__:
        if callable(getattr(adapters, name)) and name[0].islower():
            assert f"`{name}(" in TEXT, f"adapters.{name} is not in docs/runtime.md"
