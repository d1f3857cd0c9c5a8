"""Policies: which engines run with which settings, and the tool table they share.

A policy is built from a preset (YAML data in `presets/`), optionally extended by overrides:

    policy: spacebot                                   # a preset name or alias
    policy: {preset: default, loop_guard: {warn_at: 1, block_at: 2}, dedup: false}
    policy: path/to/policy.yaml                        # a file with the mapping form

Unknown presets, engines and settings are errors; values are checked against the settings' types. A setting
whose type names enum members (`warn_action: Literal[Action.WARN, Action.BLOCK]`) is written as the members'
values (`warn_action: block`) and becomes the member.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, final, get_args, get_origin, get_type_hints

from ..core._classify import Classifier, ToolRule, parse_rules
from ..core._limits import MAX_EXTENDS, MAX_SETTING, MAX_SETTING_ITEMS
from ..core._safeload import parse_yaml, read_text
from ..engines import ENGINE_ORDER, ENGINES, registry
from ..engines.base import SettingError
from ..errors import PolicyError, TraceError, brief

__all__ = [
    "ALIASES",
    "Policy",
    "coerce_settings",
    "corpus_root",
    "preset_names",
    "read_policy_file",
    "resolve_policy",
    "resolving_once",
]

ALIASES: Final[Mapping[str, str]] = types.MappingProxyType({"spacebot": "spacebot-worker"})
_POLICY_KEYS: Final = frozenset({"preset", "extends", "name", "description", "tools", "source"})
_ROOT_MARKERS: Final = ("pyproject.toml", "pytest.ini", "tox.ini", "setup.cfg", ".git")
# the package's own folder, as importlib.resources would name it for a package on disk (the only kind whose
# presets can be globbed), without importing importlib.resources on every command's start-up
_PRESETS_DIR: Final = Path(__file__).parent.parent / "presets"


@final
@dataclass(frozen=True, slots=True, eq=False)
class Policy:
    """A resolved policy: enabled engines (in consultation order) with settings, and the tool table."""

    name: str
    engines: Mapping[str, Any]
    tools: tuple[ToolRule, ...] = ()
    description: str = ""
    source: str = ""
    classifier: Classifier = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "classifier", Classifier(self.tools))

    def settings(self, engine: str) -> Any:
        """The settings of an enabled engine; KeyError when it is not enabled."""
        return self.engines[engine]

    def enabled(self, engine: str) -> bool:
        return engine in self.engines

    def with_overrides(self, overrides: Mapping[str, Any], *, name: str | None = None) -> Policy:
        """A new policy with engine settings overridden (`{engine: {setting: value} | false | true}`)."""
        return _apply(self, overrides, name=name or self.name, source=None)

    def to_dict(self) -> dict[str, Any]:
        """Every enabled engine's full settings, and the tool table: what `loopguard presets` prints."""
        return {
            "name": self.name,
            "description": self.description,
            "engines": {name: _plain_settings(s) for name, s in self.engines.items()},
            "tools": [r.to_dict() for r in self.tools],
        }


def policy_from_dict(raw: Mapping[str, Any], *, source: str | None = None) -> Policy:
    """The Policy that `Policy.to_dict` wrote (every engine's full settings and the tool table): how a policy
    travels whole, e.g. to a guard process told which policy to follow."""
    unknown = set(raw) - {"name", "description", "engines", "tools"}
    if unknown:
        raise PolicyError(f"unknown key(s) {brief(sorted(map(str, unknown)))}; expected name, description, engines, "
                          f"tools", source=source)
    name = _text(raw.get("name", "policy"), "name", source)
    engines = raw.get("engines") or {}
    if not isinstance(engines, Mapping):
        raise PolicyError("expected a mapping {engine: settings}", field="engines", source=source)
    policy = _apply(Policy(name=name, engines={}), engines, name=name, source=source)
    return Policy(name=name, engines=policy.engines, tools=parse_rules(raw.get("tools"), source=source),
                  description=_text(raw.get("description", ""), "description", source))


def _plain_settings(settings: Any) -> dict[str, Any]:
    """A settings instance as plain data: an enum member (an action) as its value, as a policy file writes it."""
    return {k: v.value if isinstance(v, enum.Enum) else v for k, v in dataclasses.asdict(settings).items()}


def _presets_dir() -> Path:
    return _PRESETS_DIR


def preset_names() -> list[str]:
    """Every preset and alias, sorted."""
    names = {p.stem for p in _presets_dir().glob("*.yaml")}
    return sorted(names | set(ALIASES))


def _preset(name: Any) -> Policy:
    """A bundled preset (or alias) by name; a name is never a path."""
    if not isinstance(name, str) or not _bundled(ALIASES.get(name, name)):
        known = preset_names()
        raise PolicyError(f"unknown preset {brief(name)}{_meant(name, known)}; known presets: {', '.join(known)}",
                          field="preset")
    return _build_preset(name, ())


# The presets each presets folder held when last listed. Listing the folder costs ~50 µs, paid per trace
# file by a corpus run; a name found here is confirmed by one lstat, and a name not found lists the folder
# again, so the answer is always the folder's current one (tests point the folder elsewhere and edit it).
_listed: dict[Path, frozenset[str]] = {}


def _bundled(name: str) -> bool:
    """Whether the presets folder holds `name`.yaml (a name is never a path: only the folder's own entries)."""
    folder = _presets_dir()
    known = _listed.get(folder)
    if known is not None and name in known and os.path.lexists(os.path.join(folder, f"{name}.yaml")):
        return True
    known = _listed[folder] = frozenset(p.stem for p in folder.glob("*.yaml"))
    return name in known


@functools.cache
def _build_preset(name: str, chain: tuple[str, ...]) -> Policy:
    canonical = ALIASES.get(name, name)
    path = _presets_dir() / f"{canonical}.yaml"
    if canonical in chain:
        raise PolicyError(f"presets extend each other in a cycle: {' -> '.join((*chain, canonical))}",
                          field="extends", source=str(path))
    if len(chain) >= MAX_EXTENDS:
        raise PolicyError(f"an extends chain longer than {MAX_EXTENDS} presets: {' -> '.join((*chain, canonical))}",
                          field="extends", source=str(path))
    raw = _read_mapping(path, "a preset file")
    unknown = set(raw) - {"extends", "description", "engines", "tools", "source"}
    if unknown:
        raise PolicyError(f"unknown key(s) {brief(sorted(map(str, unknown)))}", source=str(path))
    base_name = raw.get("extends")
    if base_name is not None and (not isinstance(base_name, str) or not _bundled(ALIASES.get(base_name, base_name))):
        raise PolicyError(f"unknown preset {brief(base_name)}", field="extends", source=str(path))
    base = _build_preset(base_name, (*chain, canonical)) if base_name else Policy(name=canonical, engines={})
    engines_raw = raw.get("engines") or {}
    if not isinstance(engines_raw, Mapping):
        raise PolicyError("expected a mapping {engine: settings}", field="engines", source=str(path))
    # A preset lists every engine it enables; engines of the base it does not list stay as the base has them.
    policy = _apply(base, engines_raw, name=canonical, source=str(path))
    tools = parse_rules(raw.get("tools"), source=str(path))
    return Policy(
        name=canonical,
        engines=policy.engines,
        tools=tools + (base.tools if base_name else ()),
        description=_text(raw.get("description", base.description), "description", str(path)).strip(),
        source=_text(raw.get("source", base.source), "source", str(path)).strip(),
    )


def _text(value: Any, field: str, source: str | None) -> str:
    if not isinstance(value, str):
        raise PolicyError(f"expected a string, got {brief(value)}", field=field, source=source)
    return value


def _read_mapping(path: Path, what: str) -> Mapping[str, Any]:
    """A YAML file holding one mapping, read within the limits of `safeload`."""
    try:
        docs = parse_yaml(read_text(path), str(path))
    except TraceError as exc:
        where = f":{exc.line}" if exc.line is not None else ""
        raise PolicyError(exc.problem, source=f"{path}{where}") from None
    raw = docs[0] if len(docs) == 1 else None
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{what} must hold a mapping", source=str(path))
    return raw


def read_policy_file(path: Path) -> Mapping[str, Any]:
    """A policy file's mapping as written (what a recording embeds when the file cannot travel with it)."""
    return _read_mapping(path, "a policy file")


def _meant(name: Any, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the known name closest to a misspelt one, else nothing."""
    if not isinstance(name, str) or len(name) > 100:
        return ""
    from difflib import get_close_matches  # only when a name is wrong

    close = get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def corpus_root(start: Path) -> Path:
    """The folder a trace corpus lives in: the nearest one at or above `start` holding a project marker
    (pyproject.toml, pytest.ini, tox.ini, setup.cfg, .git), else `start` itself."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in _ROOT_MARKERS):
            return folder
    return start


def _policy_file(spec: str, base_dir: Path | None, root: Path | None) -> Path:
    """Where a policy file named in a trace lives: beside the trace, else under the corpus root; never
    taken from the working folder, and never outside the corpus root. Without a trace (a command-line
    option, a library call) the path is taken as given."""
    path = Path(spec)
    if base_dir is None:
        try:
            present = path.exists()
        except OSError:  # a name too long for the file system
            present = False
        if not present:
            raise PolicyError(f"policy file {brief(spec)} not found")
        return path
    top = (root or corpus_root(base_dir)).resolve()
    candidates = [path] if path.is_absolute() else [base_dir / path, top / path]
    for candidate in candidates:
        try:
            found = candidate.resolve()
            exists = found.exists()
        except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop
            continue
        if not found.is_relative_to(top):
            raise PolicyError(f"policy file {brief(spec)} is outside the corpus root {top}")
        if exists:
            return found
    raise PolicyError(f"policy file {brief(spec)} not found beside the trace ({base_dir}) or under {top}")


# The policies resolved so far in a corpus run (`resolving_once`): None outside one.
_resolved: ContextVar[dict[Any, Policy] | None] = ContextVar("loopguard_resolved_policies", default=None)


@contextmanager
def resolving_once(memo: dict[Any, Policy]) -> Iterator[None]:
    """Within the block, a policy file or mapping that `memo` has seen resolves to the Policy it resolved to
    then: a corpus run passes one memo for all its files, so a policy file every trace names is found and read
    once per run, not twice per trace (the loader checks it, the replay uses it). The key is everything the
    result depends on besides the file's text: the spec as written, the trace's folder and the corpus root.
    Failures are not kept: each trace naming a bad policy gets its own error."""
    token = _resolved.set(memo)
    try:
        yield
    finally:
        _resolved.reset(token)


def resolve_policy(spec: Any = None, *, base_dir: Path | None = None, root: Path | None = None) -> Policy:
    """A Policy from None (the `default` preset), a preset name, a YAML path, a mapping or a Policy.

    A policy file named by a trace is looked up beside the trace (`base_dir`), then under the corpus root
    (`root`, default: `corpus_root(base_dir)`) and must lie inside that root.
    """
    if spec is None:
        return _preset("default")
    if isinstance(spec, Policy):
        return spec
    if isinstance(spec, str) and not spec.endswith((".yaml", ".yml")):
        policy = _preset(spec)
        return policy if spec == policy.name else dataclasses.replace(policy, name=spec)
    memo = _resolved.get()
    if memo is None:
        return _resolve(spec, base_dir, root)
    # a mapping is keyed by its repr: equal text means equal keys, values and types (1, 1.0 and true differ)
    key = (spec if isinstance(spec, str) else repr(spec), base_dir, root)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _resolve(spec, base_dir, root)
    return found


def _resolve(spec: Any, base_dir: Path | None, root: Path | None) -> Policy:
    """A policy file's or a mapping's Policy."""
    if isinstance(spec, str):
        path = _policy_file(spec, base_dir, root)
        raw = _read_mapping(path, "a policy file")
        return _warning_reachable(_from_mapping(raw, source=str(path), default_name=path.stem), str(path))
    if isinstance(spec, Mapping):
        return _warning_reachable(_from_mapping(spec, source=None, default_name=None), None)
    raise PolicyError(f"expected a preset name, a policy file, a mapping or a Policy, got {type(spec).__name__}")


def _warning_reachable(policy: Policy, source: str | None) -> Policy:
    """A policy someone wrote whose loop_guard warns only after it blocks never warns: say so rather than drop the
    warning stage silently. (A sweep's values are not checked: sweeping warn_at past block_at is a fair question.)"""
    if policy.enabled("loop_guard"):
        s = policy.settings("loop_guard")
        if s.warn_at is not None and s.block_at is not None and s.warn_at > s.block_at:
            raise PolicyError(f"expected at most block_at ({s.block_at}), got {s.warn_at}: the call is blocked "
                              "before it could be warned; lower warn_at, raise block_at, or set warn_at: null for no "
                              "warning stage", field="loop_guard.warn_at", source=source)
    return policy


def _from_mapping(raw: Mapping[str, Any], *, source: str | None, default_name: str | None) -> Policy:
    preset = raw.get("preset", raw.get("extends", "default"))
    if not isinstance(preset, str):
        raise PolicyError(f"expected a preset name, got {brief(preset)}", field="preset", source=source)
    try:
        base = _preset(preset)
    except PolicyError as exc:
        raise PolicyError(exc.problem, field=exc.field, source=exc.source or source) from None
    overrides = {k: v for k, v in raw.items() if k not in _POLICY_KEYS}
    if raw.get("name") is not None:
        _text(raw["name"], "name", source)
    if "description" in raw:
        _text(raw["description"], "description", source)
    name = raw.get("name") or (default_name if default_name else None)
    if name is None:
        name = preset if not overrides and "tools" not in raw else f"{preset}+overrides"
    policy = _apply(base, overrides, name=str(name), source=source)
    extra_tools = parse_rules(raw.get("tools"), source=source)
    if extra_tools:
        policy = dataclasses.replace(policy, tools=extra_tools + policy.tools)
    if "description" in raw:
        policy = dataclasses.replace(policy, description=str(raw["description"]))
    return policy


def _apply(base: Policy, overrides: Mapping[str, Any], *, name: str, source: str | None) -> Policy:
    engines = dict(base.engines)
    for engine, value in overrides.items():
        found = ENGINES.get(engine) if isinstance(engine, str) else None
        if found is None:
            known = registry()
            raise PolicyError(
                f"unknown engine {brief(engine)}{_meant(engine, known)}; known engines: {', '.join(sorted(known))}",
                field=str(engine),
                source=source,
            )
        settings_cls = found.Settings
        if value is False or value is None:
            engines.pop(engine, None)
            continue
        if value is True:
            value = {}
        if not isinstance(value, Mapping):
            raise PolicyError("expected a mapping of settings, true or false", field=engine, source=source)
        current = engines.get(engine) or settings_cls()
        engines[engine] = coerce_settings(settings_cls, value, base=current, field=engine, source=source)
    external = engines.get("external")
    if external is not None and getattr(external, "instead", False):
        engines = {"external": external}  # a guard process instead of the built-in engines: its verdicts alone
    order = {n: i for i, n in enumerate(ENGINE_ORDER)}
    ordered = dict(sorted(engines.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return Policy(name=name, engines=ordered, tools=base.tools, description=base.description, source=base.source)


def coerce_settings(
    cls: type[Any], values: Mapping[str, Any], *, base: Any = None, field: str = "", source: str | None = None
) -> Any:
    """A settings instance from `base` (or defaults) with `values` applied, each checked against its type."""
    hints = get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        where = f"{field}.{key}" if field else str(key)
        if key not in fields:
            raise PolicyError(
                f"unknown setting {brief(key)}{_meant(key, fields)}; expected one of: {', '.join(sorted(fields))}",
                field=where, source=source,
            )
        changes[key] = _coerce(value, hints[key], where, source)
    instance = base if base is not None else cls()
    try:  # settings check their own ranges in __post_init__
        return dataclasses.replace(instance, **changes)
    except SettingError as exc:
        where = f"{field}.{exc.setting}" if field else exc.setting
        raise PolicyError(exc.problem, field=where, source=source) from None


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a.value if isinstance(a, enum.Enum) else a) for a in get_args(tp))
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in get_args(tp))}]"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str, source: str | None) -> Any:
    origin = get_origin(tp)

    def bad() -> PolicyError:  # made only when raised: a short form of the value, never a full repr
        return PolicyError(f"expected {_type_name(tp)}, got {brief(value)}", field=where, source=source)

    if tp is Any:
        return value
    if origin in (types.UnionType, typing.Union):
        for arg in get_args(tp):
            try:
                return _coerce(value, arg, where, source)
            except PolicyError:
                continue
        raise bad()
    if origin is Literal:
        choices = get_args(tp)
        if value in choices:
            # a name is its choice: the member itself where the choices are enum members (an action)
            return next(c for c in choices if c == value) if isinstance(value, str) else value
        raise bad()
    if tp is type(None):
        if value is None:
            return None
        raise bad()
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise bad()
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return _in_range(value, where, source)
        raise bad()
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(_in_range(value, where, source))
        raise bad()
    if tp is str:
        if isinstance(value, str):
            return value
        raise bad()
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise bad()
        if len(value) > MAX_SETTING_ITEMS:
            raise PolicyError(f"a list of {len(value)} items; at most {MAX_SETTING_ITEMS}", field=where, source=source)
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{where}[{i}]", source) for i, v in enumerate(value))
        if len(args) != len(value):
            raise bad()
        return tuple(_coerce(v, a, f"{where}[{i}]", source) for i, (v, a) in enumerate(zip(value, args, strict=True)))
    if origin in (dict, Mapping) or origin is getattr(typing, "Mapping", None):
        if not isinstance(value, Mapping):
            raise bad()
        kt, vt = get_args(tp)
        return {_coerce(k, kt, where, source): _coerce(v, vt, f"{where}.{k}", source) for k, v in value.items()}
    raise PolicyError(f"cannot check a setting of type {_type_name(tp)}", field=where, source=source)


def _in_range(value: Any, where: str, source: str | None) -> Any:
    # every count, threshold, window, delay and ratio: no value may overflow an engine's arithmetic
    if not 0 <= value <= MAX_SETTING:  # NaN fails this comparison too
        raise PolicyError(f"expected a number from 0 to {MAX_SETTING}, got {brief(value)}", field=where, source=source)
    return value

