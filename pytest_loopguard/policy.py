"""Policies: which engines run with which settings, and the tool table they share.

A policy is built from a preset (YAML data in `presets/`), optionally extended by overrides:

    policy: spacebot                                   # a preset name or alias
    policy: {preset: default, loop_guard: {warn_at: 1, block_at: 2}, dedup: false}
    policy: path/to/policy.yaml                        # a file with the mapping form

Unknown presets, engines and settings are errors; values are checked against the settings' types.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, Literal, final, get_args, get_origin, get_type_hints

import yaml

from .engines import ENGINE_ORDER, registry
from .engines.base import SettingError
from .errors import PolicyError
from .tools import Classifier, ToolRule, parse_rules

__all__ = ["ALIASES", "Policy", "coerce_settings", "preset_names", "resolve_policy"]

ALIASES: Final[Mapping[str, str]] = types.MappingProxyType({"spacebot": "spacebot-worker"})
_POLICY_KEYS: Final = frozenset({"preset", "extends", "name", "description", "tools", "source"})

try:  # the C loader is much faster on large files
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


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
            "engines": {name: dataclasses.asdict(s) for name, s in self.engines.items()},
            "tools": [r.to_dict() for r in self.tools],
        }


def _presets_dir() -> Path:
    return Path(str(resources.files("pytest_loopguard") / "presets"))


def preset_names() -> list[str]:
    """Every preset and alias, sorted."""
    names = {p.stem for p in _presets_dir().glob("*.yaml")}
    return sorted(names | set(ALIASES))


@functools.cache
def _preset(name: str) -> Policy:
    canonical = ALIASES.get(name, name)
    path = _presets_dir() / f"{canonical}.yaml"
    if not path.is_file():
        raise PolicyError(f"unknown preset {name!r}; known presets: {', '.join(preset_names())}", field="preset")
    with path.open(encoding="utf-8") as fh:
        raw = yaml.load(fh, Loader=_Loader) or {}
    if not isinstance(raw, Mapping):
        raise PolicyError("a preset file must hold a mapping", source=str(path))
    base_name = raw.get("extends")
    base = _preset(base_name) if base_name else Policy(name=canonical, engines={})
    engines_raw = raw.get("engines") or {}
    unknown = set(raw) - {"extends", "description", "engines", "tools", "source"}
    if unknown:
        raise PolicyError(f"unknown key(s) {sorted(unknown)}", source=str(path))
    # A preset lists every engine it enables; engines of the base it does not list stay as the base has them.
    policy = _apply(base, engines_raw, name=canonical, source=str(path))
    tools = parse_rules(raw.get("tools"), source=str(path))
    return Policy(
        name=canonical,
        engines=policy.engines,
        tools=tools + (base.tools if base_name else ()),
        description=str(raw.get("description", base.description)).strip(),
        source=str(raw.get("source", base.source)).strip(),
    )


def resolve_policy(spec: Any = None, *, base_dir: Path | None = None) -> Policy:
    """A Policy from None (the `default` preset), a preset name, a YAML path, a mapping or a Policy."""
    if spec is None:
        return _preset("default")
    if isinstance(spec, Policy):
        return spec
    if isinstance(spec, str):
        if spec.endswith((".yaml", ".yml")):
            path = Path(spec)
            if base_dir is not None and not path.is_absolute() and not path.exists():
                path = base_dir / path
            if not path.is_file():
                raise PolicyError(f"policy file {spec!r} not found")
            with path.open(encoding="utf-8") as fh:
                try:
                    raw = yaml.load(fh, Loader=_Loader)
                except yaml.YAMLError as exc:
                    raise PolicyError(f"YAML error: {exc}", source=str(path)) from None
            if not isinstance(raw, Mapping):
                raise PolicyError("a policy file must hold a mapping", source=str(path))
            return _from_mapping(raw, source=str(path), default_name=path.stem)
        policy = _preset(spec)
        return policy if spec == policy.name else dataclasses.replace(policy, name=spec)
    if isinstance(spec, Mapping):
        return _from_mapping(spec, source=None, default_name=None)
    raise PolicyError(f"expected a preset name, a policy file, a mapping or a Policy, got {type(spec).__name__}")


def _from_mapping(raw: Mapping[str, Any], *, source: str | None, default_name: str | None) -> Policy:
    preset = raw.get("preset", raw.get("extends", "default"))
    if not isinstance(preset, str):
        raise PolicyError("expected a preset name", field="preset", source=source)
    base = _preset(preset)
    overrides = {k: v for k, v in raw.items() if k not in _POLICY_KEYS}
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
    known = registry()
    engines = dict(base.engines)
    for engine, value in overrides.items():
        if engine not in known:
            raise PolicyError(
                f"unknown engine {engine!r}; known engines: {', '.join(sorted(known))}",
                field=str(engine),
                source=source,
            )
        settings_cls = known[engine].Settings
        if value is False or value is None:
            engines.pop(engine, None)
            continue
        if value is True:
            value = {}
        if not isinstance(value, Mapping):
            raise PolicyError("expected a mapping of settings, true or false", field=engine, source=source)
        current = engines.get(engine) or settings_cls()
        engines[engine] = coerce_settings(settings_cls, value, base=current, field=engine, source=source)
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
                f"unknown setting {key!r}; expected one of: {', '.join(sorted(fields))}", field=where, source=source
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
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a) for a in get_args(tp))
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in get_args(tp))}]"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str, source: str | None) -> Any:
    origin = get_origin(tp)
    bad = PolicyError(f"expected {_type_name(tp)}, got {value!r}", field=where, source=source)
    if tp is Any:
        return value
    if origin in (types.UnionType, typing.Union):
        for arg in get_args(tp):
            try:
                return _coerce(value, arg, where, source)
            except PolicyError:
                continue
        raise bad
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise bad
    if tp is type(None):
        if value is None:
            return None
        raise bad
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise bad
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise bad
    if tp is str:
        if isinstance(value, str):
            return value
        raise bad
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise bad
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{where}[{i}]", source) for i, v in enumerate(value))
        if len(args) != len(value):
            raise bad
        return tuple(_coerce(v, a, f"{where}[{i}]", source) for i, (v, a) in enumerate(zip(value, args, strict=True)))
    if origin in (dict, Mapping) or origin is getattr(typing, "Mapping", None):
        if not isinstance(value, Mapping):
            raise bad
        kt, vt = get_args(tp)
        return {_coerce(k, kt, where, source): _coerce(v, vt, f"{where}.{k}", source) for k, v in value.items()}
    raise PolicyError(f"cannot check a setting of type {_type_name(tp)}", field=where, source=source)
