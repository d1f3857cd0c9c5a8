"""The corpus manifest, `loopguard-corpus.yaml`: its schema, strict loading (one line per problem) and writing.

    loopguard_corpus: 1                 # the manifest format's version
    name: real-agent-runs               # lowercase letters, digits, '.', '_' and '-'
    version: 1.0.0
    licence: MIT
    description: Real agent runs with hand-made loop labels.
    redacted: true                      # whether the publisher redacted secrets before publishing
    secrets: {rules: [...], allow: [...]}   # optional: more secret regexes to refuse; false positives to allow
    labels: labels.yaml                 # optional: a file below, of kind `labels`
    sources:                            # where the runs come from and how each was obtained
      - paths: [swe-agent]              # the files (or folders) of this source
        obtained: byte-for-byte copies of ...
        url: https://github.com/...     # optional
        licence: MIT                    # optional: the source's own licence
    published_with:                     # the policies the corpus was published with and what they gave
      - policy: own                     # `own` (each run's own policy), a preset, or a policy file below
        runs: 16
        mismatches: 0                   # expectation mismatches (the traces' own `expect` blocks)
        interventions: 21               # steps whose combined verdict is not `allow`
        verdicts: 5e3c...               # sha256 of every run's verdicts, in file order
    files:                              # every file of the corpus but this one, sorted by path
      - {path: swe-agent/x.traj, kind: log, format: swe-agent, sha256: 4f1e...}

A problem is a `CorpusError`: `FILE:LINE: field 'files[3].sha256': expected ..., got ...`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final, final

import yaml

from ..core._safeload import parse_yaml, read_text
from ..errors import TraceError, brief
from ..io._format import CORPUS_MANIFEST

__all__ = ["FILE_KINDS", "FORMAT_VERSION", "MANIFEST_NAME", "OWN_POLICY", "CorpusError", "CorpusFile",
           "Manifest", "Published", "Source", "checked_path", "load_manifest", "manifest_text", "parse_manifest"]

MANIFEST_NAME: Final = CORPUS_MANIFEST  # the folder walks of run, validate, eval and pytest pass over it
FORMAT_VERSION: Final = 1
OWN_POLICY: Final = "own"  # each run under the policy it names itself (an imported log: the default preset)
# trace: a loopguard trace file; log: an agent log the importers read (`format` names the importer);
# labels: a loop labels file; policy: a policy file `published_with` names; other: anything else (notes)
FILE_KINDS: Final = ("trace", "log", "labels", "policy", "other")
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
_SHA256: Final = re.compile(r"[0-9a-f]{64}")
_TOP_KEYS: Final = ("loopguard_corpus", "name", "version", "licence", "description", "redacted", "secrets",
                    "labels", "sources", "published_with", "files")
_REQUIRED: Final = ("loopguard_corpus", "name", "version", "licence", "description", "redacted", "sources",
                    "files")
_SOURCE_KEYS: Final = ("paths", "obtained", "url", "licence")
_PUBLISHED_KEYS: Final = ("policy", "runs", "mismatches", "interventions", "verdicts")
_FILE_KEYS: Final = ("path", "kind", "format", "sha256")
_SECRETS_KEYS: Final = ("rules", "allow")
_PARENT: Final = re.compile(r"(\.[^.\[]+|\[\d+\])$")  # the last `.key` or `[i]` of a field's name


@final
class CorpusError(TraceError):
    """A corpus whose manifest, files, checksums or archive are wrong: one line naming the file and field."""


@final
@dataclass(frozen=True, slots=True)
class CorpusFile:
    """One file of the corpus: its path (POSIX, relative to the corpus folder), kind, format and checksum."""

    path: str
    kind: str
    sha256: str
    format: str | None = None  # a log's importer


@final
@dataclass(frozen=True, slots=True)
class Source:
    """Where some of the runs come from: their files or folders, and how they were obtained."""

    paths: tuple[str, ...]
    obtained: str
    url: str | None = None
    licence: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Published:
    """A policy the corpus was published with, and what replaying every run under it gave."""

    policy: str
    runs: int
    mismatches: int
    interventions: int
    verdicts: str


@final
@dataclass(frozen=True, slots=True)
class Manifest:
    """A corpus manifest, validated."""

    name: str
    version: str
    licence: str
    description: str
    redacted: bool
    sources: tuple[Source, ...]
    files: tuple[CorpusFile, ...]
    labels: str | None = None
    published_with: tuple[Published, ...] = ()
    secret_rules: tuple[str, ...] = ()
    secret_allow: tuple[str, ...] = ()
    path: str = field(default=MANIFEST_NAME, compare=False)

    def of_kind(self, *kinds: str) -> list[CorpusFile]:
        return [f for f in self.files if f.kind in kinds]

    def to_mapping(self) -> dict[str, Any]:
        """The manifest as YAML-ready data, in the documented key order."""
        doc: dict[str, Any] = {
            "loopguard_corpus": FORMAT_VERSION, "name": self.name, "version": self.version,
            "licence": self.licence, "description": self.description, "redacted": self.redacted,
        }
        if self.secret_rules or self.secret_allow:
            doc["secrets"] = {k: list(v) for k, v in (("rules", self.secret_rules), ("allow", self.secret_allow))
                              if v}
        if self.labels is not None:
            doc["labels"] = self.labels
        doc["sources"] = [{k: v for k, v in (("paths", list(s.paths)), ("obtained", s.obtained), ("url", s.url),
                                              ("licence", s.licence)) if v is not None} for s in self.sources]
        if self.published_with:
            doc["published_with"] = [{"policy": p.policy, "runs": p.runs, "mismatches": p.mismatches,
                                      "interventions": p.interventions, "verdicts": p.verdicts}
                                     for p in self.published_with]
        doc["files"] = [{"path": f.path, "kind": f.kind, **({"format": f.format} if f.format else {}),
                         "sha256": f.sha256} for f in self.files]
        return doc


def manifest_text(manifest: Manifest) -> str:
    """The manifest file's text (block style, keys in the documented order, Unicode kept)."""
    doc = manifest.to_mapping()
    files = doc.pop("files")
    head = f"# The manifest of the loopguard corpus {manifest.name!r} (docs/corpora.md).\n"
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110)
    # one line per file: a manifest of thousands of files stays readable and diffs line by line
    lines = [yaml.safe_dump([entry], default_flow_style=None, sort_keys=False, allow_unicode=True,
                            width=1 << 16).rstrip("\n") for entry in files]
    return head + body + "files:\n" + "".join(f"{line}\n" for line in lines) if lines else head + body + "files: []\n"


def load_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest file; a `CorpusError` naming the file, line and field otherwise."""
    name = str(path)
    try:
        text = read_text(path)  # the safe reader: a regular file, bounded, UTF-8
    except TraceError as exc:
        raise CorpusError(exc.problem, file=name, line=exc.line) from None
    return parse_manifest(text, name)


def parse_manifest(text: str, path: str = MANIFEST_NAME) -> Manifest:
    """A manifest from its text (`path` names it in errors)."""
    try:
        docs = parse_yaml(text, path)  # depth, tags, aliases and sizes checked before anything is built
    except TraceError as exc:
        raise CorpusError(exc.problem, file=path, line=exc.line, field=exc.field) from None
    lines = _lines(text, path)
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise CorpusError("expected one mapping with `loopguard_corpus: 1`, name, version, licence, ...", file=path)
    return _Reader(path, lines).manifest(docs[0])


def _lines(text: str, path: str) -> dict[str, int]:
    """The 1-based line of every field, by its dotted name (`files[3].sha256`), read off the YAML nodes."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    found: dict[str, int] = {}
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = f"{where}.{key.value}" if where else str(key.value)
                found[name] = key.start_mark.line + 1
                stack.append((value, name))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                found[f"{where}[{i}]"] = item.start_mark.line + 1
                stack.append((item, f"{where}[{i}]"))
    return found


def checked_path(raw: object) -> str | None:
    """Why `raw` is no corpus-relative POSIX path (None when it is one): relative, no `..`, no backslash."""
    if not isinstance(raw, str) or not raw:
        return "expected a path relative to the corpus folder"
    pure = PurePosixPath(raw)
    if pure.is_absolute() or raw.startswith("/") or re.match(r"[A-Za-z]:", raw):
        return "expected a relative path, got an absolute one"
    if "\\" in raw or any(part in ("..", ".", "") for part in raw.split("/")):
        return "expected a plain relative POSIX path (no '..', '.', empty part or backslash)"
    if any(ord(c) < 32 or c == "\x7f" for c in raw):
        return "a control character in a path"
    return None


class _Reader:
    """Validation of one manifest mapping, each error located by field and line."""

    def __init__(self, path: str, lines: dict[str, int]) -> None:
        self.path = path
        self.lines = lines

    def fail(self, problem: str, where: str | None = None) -> CorpusError:
        line = None
        probe = where or ""
        while probe and line is None:  # the nearest enclosing field that has a line
            line = self.lines.get(probe)
            parent = _PARENT.sub("", probe)
            probe = parent if parent != probe else ""
        return CorpusError(problem, file=self.path, line=line, field=where)

    def keys(self, raw: Mapping[Any, Any], allowed: tuple[str, ...], where: str | None,
             required: tuple[str, ...] = ()) -> None:
        unknown = sorted(str(k) for k in raw if k not in allowed)
        if unknown:
            at = f"{where}.{unknown[0]}" if where else unknown[0]
            hint = " (the manifest spells it `licence`)" if unknown[0] == "license" else ""
            raise self.fail(f"unknown key {unknown[0]!r}{hint}; expected one of {', '.join(allowed)}", at)
        for key in required:
            if key not in raw:
                raise self.fail(f"missing required key {key!r}", where)

    def text(self, raw: Mapping[Any, Any], key: str, where: str, *, optional: bool = False) -> str | None:
        value = raw.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"expected a non-empty string, got {brief(value)}", where)
        return value

    def count(self, raw: Mapping[Any, Any], key: str, where: str) -> int:
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.fail(f"expected an integer >= 0, got {brief(value)}", where)
        return value

    def strings(self, raw: object, where: str) -> tuple[str, ...]:
        if not isinstance(raw, list) or not all(isinstance(s, str) and s for s in raw):
            raise self.fail(f"expected a list of non-empty strings, got {brief(raw)}", where)
        return tuple(raw)

    def manifest(self, raw: Mapping[Any, Any]) -> Manifest:
        self.keys(raw, _TOP_KEYS, None, _REQUIRED)
        if raw["loopguard_corpus"] != FORMAT_VERSION or isinstance(raw["loopguard_corpus"], bool):
            raise self.fail(f"expected {FORMAT_VERSION} (the manifest format this loopguard reads), got "
                            f"{brief(raw['loopguard_corpus'])}", "loopguard_corpus")
        name = raw["name"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise self.fail("expected lowercase letters, digits, '.', '_' or '-' (at most 100), starting with a "
                            f"letter or digit, got {brief(name)}", "name")
        version = raw["version"]
        if isinstance(version, (int, float)) and not isinstance(version, bool):
            raise self.fail(f"expected a string (quote it: '{version}'), got the number {version}", "version")
        version = self.text(raw, "version", "version")
        licence = self.text(raw, "licence", "licence")
        description = self.text(raw, "description", "description")
        if not isinstance(raw["redacted"], bool):
            raise self.fail(f"expected true or false, got {brief(raw['redacted'])}", "redacted")
        rules, allow = self.secrets(raw.get("secrets"))
        files = self.files(raw["files"])
        listed = {f.path: f for f in files}
        labels = None
        if raw.get("labels") is not None:
            labels = self.text(raw, "labels", "labels")
            if labels not in listed or listed[labels].kind != "labels":
                raise self.fail(f"expected a file listed under `files` with kind `labels`, got {brief(labels)}",
                                "labels")
        sources = self.sources(raw["sources"], listed)
        published = self.published(raw.get("published_with"), listed)
        assert version is not None and licence is not None and description is not None  # not optional above
        return Manifest(name, version, licence, description, raw["redacted"], sources, files, labels, published,
                        rules, allow, self.path)

    def secrets(self, raw: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if raw is None:
            return (), ()
        if not isinstance(raw, Mapping):
            raise self.fail(f"expected a mapping with `rules` and/or `allow`, got {brief(raw)}", "secrets")
        self.keys(raw, _SECRETS_KEYS, "secrets")
        found = []
        for key in _SECRETS_KEYS:
            regexes = self.strings(raw.get(key, []), f"secrets.{key}")
            for i, regex in enumerate(regexes):
                try:
                    re.compile(regex)
                except re.error as exc:
                    raise self.fail(f"invalid regex {brief(regex)}: {exc}", f"secrets.{key}[{i}]") from None
            found.append(regexes)
        return found[0], found[1]

    def files(self, raw: object) -> tuple[CorpusFile, ...]:
        if not isinstance(raw, list):
            raise self.fail(f"expected a list of files, got {brief(raw)}", "files")
        files: list[CorpusFile] = []
        for i, item in enumerate(raw):
            where = f"files[{i}]"
            if not isinstance(item, Mapping):
                raise self.fail(f"expected a mapping with path, kind and sha256, got {brief(item)}", where)
            self.keys(item, _FILE_KEYS, where, ("path", "kind", "sha256"))
            if (problem := checked_path(item["path"])) is not None:
                raise self.fail(f"{problem}, got {brief(item['path'])}", f"{where}.path")
            path = item["path"]
            if path == MANIFEST_NAME:
                raise self.fail("the manifest does not list itself", f"{where}.path")
            if item["kind"] not in FILE_KINDS:
                raise self.fail(f"expected one of {', '.join(FILE_KINDS)}, got {brief(item['kind'])}", f"{where}.kind")
            fmt = self.text(item, "format", f"{where}.format", optional=True)
            if (fmt is None) == (item["kind"] == "log"):
                raise self.fail("a log names its importer in `format` (e.g. swe-agent); only a log has one",
                                f"{where}.format")
            digest = item["sha256"]
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise self.fail(f"expected 64 lowercase hex digits, got {brief(digest)}", f"{where}.sha256")
            if files and path <= files[-1].path:
                problem = "listed twice" if path == files[-1].path else f"out of order (after {files[-1].path!r})"
                raise self.fail(f"{path!r} is {problem}; files are listed once each, sorted by path", f"{where}.path")
            files.append(CorpusFile(path, item["kind"], digest, fmt))
        return tuple(files)

    def sources(self, raw: object, listed: Mapping[str, CorpusFile]) -> tuple[Source, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(f"expected a list of at least one source, got {brief(raw)}", "sources")
        sources = []
        for i, item in enumerate(raw):
            where = f"sources[{i}]"
            if not isinstance(item, Mapping):
                raise self.fail(f"expected a mapping with paths and obtained, got {brief(item)}", where)
            self.keys(item, _SOURCE_KEYS, where, ("paths", "obtained"))
            paths = self.strings(item["paths"], f"{where}.paths")
            for j, p in enumerate(paths):
                covered = p == "." or p in listed or any(f.startswith(p.rstrip("/") + "/") for f in listed)
                if not covered:
                    raise self.fail(f"{p!r} names no listed file or folder (use '.' for the whole corpus)",
                                    f"{where}.paths[{j}]")
            obtained = self.text(item, "obtained", f"{where}.obtained")
            assert obtained is not None
            sources.append(Source(paths, obtained, self.text(item, "url", f"{where}.url", optional=True),
                                  self.text(item, "licence", f"{where}.licence", optional=True)))
        return tuple(sources)

    def published(self, raw: object, listed: Mapping[str, CorpusFile]) -> tuple[Published, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail(f"expected a list of policies, got {brief(raw)}", "published_with")
        found: list[Published] = []
        for i, item in enumerate(raw):
            where = f"published_with[{i}]"
            if not isinstance(item, Mapping):
                raise self.fail(f"expected a mapping with policy, runs, mismatches, interventions and verdicts, "
                                f"got {brief(item)}", where)
            self.keys(item, _PUBLISHED_KEYS, where, _PUBLISHED_KEYS)
            policy = self.text(item, "policy", f"{where}.policy")
            assert policy is not None
            is_file = "/" in policy or policy.endswith((".yaml", ".yml", ".json"))
            if is_file and (policy not in listed or listed[policy].kind != "policy"):
                raise self.fail(f"a policy file must be listed under `files` with kind `policy`, got "
                                f"{brief(policy)}", f"{where}.policy")
            if any(p.policy == policy for p in found):
                raise self.fail(f"policy {policy!r} is listed twice", f"{where}.policy")
            digest = item["verdicts"]
            if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
                raise self.fail(f"expected 64 lowercase hex digits, got {brief(digest)}", f"{where}.verdicts")
            found.append(Published(policy, self.count(item, "runs", f"{where}.runs"),
                                   self.count(item, "mismatches", f"{where}.mismatches"),
                                   self.count(item, "interventions", f"{where}.interventions"), digest))
        return tuple(found)
