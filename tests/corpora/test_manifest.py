"""The manifest's schema: what `init` writes reads back equal, and each malformed field is one line naming the
manifest, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_files import tiny_corpus

from pytest_loopguard.corpora import MANIFEST_NAME, CorpusError, init_corpus, load_manifest
from pytest_loopguard.corpora._manifest import manifest_text, parse_manifest

SHA = "ab" * 32
GOOD = f"""\
loopguard_corpus: 1
name: acme-runs
version: 1.0.0
licence: MIT
description: Runs.
redacted: true
labels: labels.yaml
sources:
- paths: [logs]
  obtained: recorded by our agent
  url: https://example.com/runs
- paths: [labels.yaml, policies]
  obtained: written by hand
published_with:
- {{policy: own, runs: 1, mismatches: 0, interventions: 0, verdicts: {SHA}}}
- {{policy: policies/ours.yaml, runs: 1, mismatches: 0, interventions: 0, verdicts: {SHA}}}
files:
- {{path: labels.yaml, kind: labels, sha256: {SHA}}}
- {{path: logs/run.traj, kind: log, format: swe-agent, sha256: {SHA}}}
- {{path: policies/ours.yaml, kind: policy, sha256: {SHA}}}
"""


def test_a_written_manifest_reads_back_equal(tmp_path: Path) -> None:
    corpus = init_corpus(tiny_corpus(tmp_path / "c"), name="tiny", licence="CC-BY-4.0", description="Tiny.",
                         policies=["own", "default"], obtained="made by the tests", redacted=True)
    loaded = load_manifest(tmp_path / "c" / MANIFEST_NAME)
    assert loaded == corpus.manifest
    assert parse_manifest(manifest_text(loaded)) == loaded
    assert [(f.path, f.kind, f.format) for f in loaded.files] == [
        ("README.md", "other", None), ("logs/swe-agent__test-repo-i1.traj", "log", "swe-agent"),
        ("traces/repeat-a.yaml", "trace", None), ("traces/repeat-b.yaml", "trace", None)]
    assert [(p.policy, p.runs, p.mismatches) for p in loaded.published_with] == [("own", 3, 0), ("default", 3, 0)]


def test_the_documented_example_reads() -> None:
    manifest = parse_manifest(GOOD, "m.yaml")
    assert manifest.labels == "labels.yaml" and manifest.sources[0].url == "https://example.com/runs"


def _replaced(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


# (the manifest text, the line, the field, what the message says)
BAD = {
    "unknown key": (_replaced("licence: MIT", "license: MIT"), 4, "license", "spells it `licence`"),
    "missing key": (_replaced("description: Runs.\n", ""), None, None, "missing required key 'description'"),
    "format version": (_replaced("loopguard_corpus: 1", "loopguard_corpus: 2"), 1, "loopguard_corpus", "expected 1"),
    "name": (_replaced("name: acme-runs", "name: Acme Runs"), 2, "name", "lowercase letters"),
    "version as a number": (_replaced("version: 1.0.0", "version: 1.0"), 3, "version", "quote it"),
    "redacted": (_replaced("redacted: true", "redacted: yes please"), 6, "redacted", "true or false"),
    "checksum": (_replaced(f"kind: labels, sha256: {SHA}", "kind: labels, sha256: abc"), 18, "files[0].sha256",
                 "64 lowercase hex digits, got 'abc'"),
    "path escapes": (_replaced("path: labels.yaml", "path: ../labels.yaml"), 18, "files[0].path", "no '..'"),
    "absolute path": (_replaced("path: labels.yaml", "path: /etc/passwd"), 18, "files[0].path", "absolute"),
    "kind": (_replaced("kind: labels", "kind: notes"), 18, "files[0].kind", "expected one of trace, log"),
    "log without format": (_replaced("kind: log, format: swe-agent,", "kind: log,"), 19, "files[1].format",
                           "names its importer"),
    "files out of order": (_replaced("path: policies/ours.yaml, kind: policy", "path: a.yaml, kind: policy"), 20,
                           "files[2].path", "out of order"),
    "labels not listed": (_replaced("labels: labels.yaml", "labels: other.yaml"), 7, "labels", "kind `labels`"),
    "source names nothing": (_replaced("paths: [logs]", "paths: [log]"), 9, "sources[0].paths[0]",
                             "names no listed file"),
    "policy file not listed": (_replaced("policy: policies/ours.yaml", "policy: policies/theirs.yaml"), 16,
                               "published_with[1].policy", "listed under `files`"),
    "negative count": (_replaced("policy: own, runs: 1", "policy: own, runs: -1"), 15, "published_with[0].runs",
                       "integer >= 0"),
    "secrets regex": (_replaced("redacted: true\n", "redacted: true\nsecrets: {allow: ['(']}\n"), 7,
                      "secrets.allow[0]", "invalid regex"),
    "unsafe tag": (_replaced("description: Runs.", "description: !!python/object:os.system x"), 5, None,
                   "not allowed"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_manifest_is_one_line_naming_line_and_field(case: str) -> None:
    text, line, field, says = BAD[case]
    with pytest.raises(CorpusError) as caught:
        parse_manifest(text, "corpus/loopguard-corpus.yaml")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("corpus/loopguard-corpus.yaml" + (f":{line}:" if line is not None else ":")), message
    assert caught.value.line == line and caught.value.field == field, message
    assert says in message


def test_not_a_mapping_and_an_unreadable_file_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"^m\.yaml: expected one mapping"):
        parse_manifest("- a\n- b\n", "m.yaml")
    (tmp_path / MANIFEST_NAME).mkdir()
    with pytest.raises(CorpusError, match="not a regular file"):
        load_manifest(tmp_path / MANIFEST_NAME)
