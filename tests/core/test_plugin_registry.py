"""The registry engines and importers share: built-ins first and in order, registrations replace by name,
a version that moves with every change, and entry points read once until `refresh`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_loopguard.core._registry import Registry
from pytest_loopguard.engines import ENGINE_ORDER, ENGINES, Engine, registry
from pytest_loopguard.engines.base import register_engine
from pytest_loopguard.engines.loop_guard import LoopGuard
from pytest_loopguard.engines.read_tracker import ReadTracker

GROUP = "loopguard.engines.test-registry"  # a group no installed package declares


def fresh() -> Registry[Engine]:
    return Registry("engine", Engine, GROUP, "ENGINE", builtins={
        "loop_guard": "pytest_loopguard.engines.loop_guard:ENGINE",
        "read_tracker": "pytest_loopguard.engines.read_tracker:ReadTracker",
    })


class Mine(Engine):
    name = "mine"


class OtherLoopGuard(Engine):
    name = "loop_guard"


def test_builtins_first_in_order_then_registrations() -> None:
    reg = fresh()
    assert reg.register(Mine) is Mine  # a decorator returns the class
    assert reg.classes() == {"loop_guard": LoopGuard, "read_tracker": ReadTracker, "mine": Mine}
    assert list(reg.classes()) == ["loop_guard", "read_tracker", "mine"]
    assert reg.builtins() == [LoopGuard, ReadTracker] and reg.builtin_names == ("loop_guard", "read_tracker")


def test_a_registration_replaces_by_name_in_place_and_moves_the_version() -> None:
    reg = fresh()
    reg.classes()
    before = reg.version
    reg.register(OtherLoopGuard)
    assert reg.version != before
    assert list(reg.classes().items())[:1] == [("loop_guard", OtherLoopGuard)]  # a built-in keeps its place
    assert reg.builtins()[0] is LoopGuard


def test_classes_is_a_copy() -> None:
    reg = fresh()
    reg.classes().clear()
    assert list(reg.classes()) == ["loop_guard", "read_tracker"]


def test_what_cannot_be_registered() -> None:
    reg = fresh()
    with pytest.raises(TypeError, match=r"expected a subclass of Engine, got <class .pathlib\.Path.>"):
        reg.register(Path)

    class Nameless(Engine):
        pass

    with pytest.raises(ValueError, match="Nameless has no `name`"):
        reg.register(Nameless)


def test_refresh_keeps_what_code_registered() -> None:
    reg = fresh()
    reg.register(Mine)
    before = reg.version
    reg.refresh()
    assert reg.version != before
    assert list(reg.classes()) == ["loop_guard", "read_tracker", "mine"]
    assert reg.installed() == [] and reg.older_plugins() == []


def test_the_engine_registry_is_this_registry() -> None:
    # `external` (a guard process) is built in and consulted after the others: not in ENGINE_ORDER
    assert ENGINES.builtin_names == (*ENGINE_ORDER, "external")
    assert registry() == ENGINES.classes()
    assert register_engine == ENGINES.register  # the older name, kept
    assert [cls.name for cls in ENGINES.builtins()] == [*ENGINE_ORDER, "external"]


def test_get_answers_built_in_and_registered_names_without_reading_the_entry_points(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    reads: list[str] = []
    real = importlib.metadata.entry_points

    def counted(**kwargs: Any) -> Any:
        reads.append(kwargs.get("group", ""))
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", counted)
    reg = fresh()
    assert reg.get("read_tracker") is ReadTracker and reads == []
    reg.register(OtherLoopGuard)
    assert reg.get("loop_guard") is OtherLoopGuard and reads == []  # what code registered wins, as in classes()
    assert reg.get("nowhere") is None and reads == [GROUP]  # an unknown name reads them, once
    assert reg.get("nowhere") is None and reg.get("mine") is None and reads == [GROUP]
    assert reg.get("read_tracker") is reg.classes()["read_tracker"]


def test_a_built_in_policy_never_imports_importlib_metadata() -> None:
    # reading the entry points imports importlib.metadata (email, zipfile, csv, ...) and scans every installed
    # distribution: tens of ms an agent embedding the Guard, and `loopguard run` on a built-in policy, never need
    import subprocess
    import sys

    script = ("import sys\nfrom pytest_loopguard import Guard, Session, resolve_policy\n"
              "for name in ('default', 'roo', 'hermes', 'cline'):\n    Guard(resolve_policy(name))\n"
              "Session('default')\nprint('importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
