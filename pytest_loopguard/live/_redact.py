"""Redaction of secrets in traces: each distinct secret becomes a stable placeholder.

    redactor = Redactor(["internal-[0-9a-f]{12}"])   # user rules on top of the built-in ones
    redactor.text("key sk-proj-abc...")               # 'key <redacted:openai-key:1>'
    redactor.value({"headers": {...}})                # the same mapping, its strings redacted

One Redactor is used for one trace (or one import): equal secrets get equal placeholders and different
secrets different ones, so call identities, and with them the verdicts of loop detection, survive.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, final

from ..errors import RedactionError

__all__ = ["BUILTIN_RULES", "Redactor", "configured_rules"]

# (label, regex). Each pattern anchors on a vendor prefix and asks for a long token body, so ordinary
# code, paths and hyphenated names ("task-runner", "disk-usage-report") do not match. A named group
# `secret` narrows the replacement to that part (the "Bearer " word stays readable).
BUILTIN_RULES: tuple[tuple[str, str], ...] = (
    ("private-key",
     r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)"),
    # a key may be glued to an id with `_` or `-` (`run_sk-proj-…`, `logs-sk-…`): only a letter or digit before
    # it means it is part of a longer word
    ("anthropic-key", r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_-]{20,}"),
    # OpenAI keys (legacy sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…): a digit in the body tells a key
    # from a long hyphenated word that happens to start with "sk-"
    ("openai-key", r"(?<![A-Za-z0-9])sk-(?!ant-)(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    ("aws-access-key-id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    ("github-token", r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("slack-token", r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"),
    # the token's body stops before another "Bearer " (a path that names the token twice, `…/x-Bearer T/
    # y-Bearer T.jsonl`): one span eating the second "Bearer" word would leave the second token bare
    ("bearer-token", r"(?<![A-Za-z0-9])[Bb]earer\s+(?P<secret>(?:(?![Bb]earer\s)[A-Za-z0-9._~+/-]){16,}=*)"),
    # the password of a URL's userinfo (`https://user:pass@host`, `postgres://u:p@db`): the user name stays
    ("url-password", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:(?P<secret>[^\s/?#@]+)@"),
)

# every built-in match contains one of these; a text holding none (most texts) skips the built-in rules.
# Substring tests run at C speed, several times faster than one alternation regex over a long text.
_BUILTIN_HINTS = ("sk-", "AKIA", "ASIA", "gh", "github_pat_", "xox", "earer", "-----BEGIN", "://")
_CUSTOM = "custom"
_PLACEHOLDER = re.compile(r"<redacted:[a-z0-9][a-z0-9_-]*:[0-9]+>")


@final
class _Rule:
    __slots__ = ("group", "label", "pattern")

    def __init__(self, label: str, pattern: re.Pattern[str]) -> None:
        self.label = label
        self.pattern = pattern
        self.group = "secret" if "secret" in pattern.groupindex else 0


def _compile(label: str, regex: str, where: str) -> _Rule:
    try:
        pattern = re.compile(regex)
    except re.error as e:
        raise RedactionError(f"invalid regex {regex!r}: {e}", rule=where) from None
    if pattern.match("") is not None:
        # a rule that matches nothing at all would "redact" every position of every string
        raise RedactionError(f"regex {regex!r} matches the empty string", rule=where)
    return _Rule(label, pattern)


@final
class Redactor:
    """Replaces secrets by placeholders `<redacted:LABEL:N>`, N counting distinct secrets per label.

    `rules`: user regexes, a sequence (placeholders labelled `custom`) or a mapping label → regex;
    `extra`: more unnamed regexes (a command line's `--redact` on top of the configured rules).
    `builtin=False` leaves out the built-in patterns (`BUILTIN_RULES`).
    """

    __slots__ = ("_builtin", "_counts", "_placeholders", "_rules")

    def __init__(
        self, rules: Iterable[str] | Mapping[str, str] = (), *, extra: Iterable[str] = (), builtin: bool = True
    ) -> None:
        self._builtin = tuple(_Rule(label, re.compile(regex)) for label, regex in BUILTIN_RULES) if builtin else ()
        compiled: list[_Rule] = []
        unnamed: list[str] = []
        if isinstance(rules, Mapping):
            for label, regex in rules.items():
                if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", str(label)):
                    raise RedactionError("a rule's name is lowercase letters, digits, '-' or '_'", rule=str(label))
                compiled.append(_compile(str(label), regex, str(label)))
        else:
            unnamed += _regexes(rules)
        unnamed += _regexes(extra)
        compiled += [_compile(_CUSTOM, regex, f"#{i} {regex!r}") for i, regex in enumerate(unnamed, 1)]
        self._rules = tuple(compiled)
        self._placeholders: dict[str, str] = {}  # secret -> placeholder
        self._counts: dict[str, int] = {}  # label -> distinct secrets so far

    @classmethod
    def configured(cls, extra: Iterable[str] = (), *, start: str | Path | None = None) -> Redactor:
        """The built-in rules, the project's `[tool.loopguard] redact` rules (see `configured_rules`) and
        `extra` regexes (e.g. from a `--redact` option)."""
        return cls(configured_rules(start), extra=extra)

    @property
    def count(self) -> int:
        """How many distinct secrets this redactor has replaced so far."""
        return len(self._placeholders)

    def text(self, s: str) -> str:
        """`s` with every secret replaced by its placeholder."""
        spans: list[tuple[int, int, str | None]] = []
        rules = self._rules
        if self._builtin and any(hint in s for hint in _BUILTIN_HINTS):
            rules = self._builtin + rules
        for rule in rules:
            for m in rule.pattern.finditer(s):
                start, end = m.span(rule.group)
                if end > start:
                    spans.append((start, end, rule.label))
        if not spans:
            return s
        # placeholders already in the text are kept as they are (a label of None), so redacting twice
        # changes nothing: a user rule never eats into one
        spans += [(m.start(), m.end(), None) for m in _PLACEHOLDER.finditer(s)]
        # matches of different rules may overlap (a key inside a bearer header): earliest first, then
        # the longest, then the earlier (more specific) rule; a span overlapping one already taken is
        # dropped, so nothing is redacted twice
        spans.sort(key=lambda span: (span[0], -span[1], span[2] is not None))
        out: list[str] = []
        pos = 0
        for start, end, label in spans:
            if start < pos:
                continue
            out.append(s[pos:start])
            out.append(s[start:end] if label is None else self._placeholder(s[start:end], label))
            pos = end
        out.append(s[pos:])
        return "".join(out)

    def value(self, obj: Any) -> Any:
        """`obj` with its strings redacted, recursively through mappings, lists and tuples.

        Mapping keys are strings a secret hides in as well (`{"headers": {KEY: "1"}}`, an env mapping
        written inside out): string keys are redacted like values. Non-string scalars are kept; an
        unchanged container is returned as it is.
        """
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            items = {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in obj.items()}
            if len(items) == len(obj) and all(k in items and items[k] is v for k, v in obj.items()):
                return obj
            return items
        if isinstance(obj, list | tuple):
            seq = [self.value(v) for v in obj]
            if all(a is b for a, b in zip(seq, obj, strict=True)):
                return obj
            return seq if isinstance(obj, list) else tuple(seq)
        return obj

    def _placeholder(self, secret: str, label: str) -> str:
        placeholder = self._placeholders.get(secret)
        if placeholder is None:
            n = self._counts.get(label, 0) + 1
            self._counts[label] = n
            placeholder = self._placeholders[secret] = f"<redacted:{label}:{n}>"
        return placeholder


def _regexes(rules: Iterable[str]) -> list[str]:
    # one regex given bare would otherwise be read letter by letter
    return [rules] if isinstance(rules, str) else list(rules)


def configured_rules(start: str | Path | None = None) -> list[str] | dict[str, str]:
    """The user rules in the nearest `pyproject.toml` (from `start`, default the working folder, upward):
    `[tool.loopguard] redact`, a list of regexes or a table of name = regex. None there: no rules."""
    here = Path(start) if start is not None else Path.cwd()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return _rules_in(candidate)
    return []


def _rules_in(path: Path) -> list[str] | dict[str, str]:
    where = f"{path} [tool.loopguard] redact"
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise RedactionError(f"cannot read the rules: {e}", rule=where) from None
    rules = data.get("tool", {}).get("loopguard", {}).get("redact", [])
    if isinstance(rules, list) and all(isinstance(r, str) for r in rules):
        return list(rules)
    if isinstance(rules, dict) and all(isinstance(r, str) for r in rules.values()):
        return dict(rules)
    raise RedactionError("expected a list of regexes or a table of name = regex", rule=where)
