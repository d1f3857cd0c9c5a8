"""This repository's traces/ is a corpus package (traces/loopguard-corpus.yaml): every trace listed with its
checksum, all of them load, and replayed under their own policies they give the published results. A trace
added or edited without refreshing the manifest fails here: `loopguard corpus init traces --update`."""

from __future__ import annotations

from corpus_files import REPO

from pytest_loopguard.corpora import MANIFEST_NAME, open_corpus, verify_corpus
from pytest_loopguard.io._format import iter_trace_files


def test_traces_is_a_corpus_that_verifies() -> None:
    manifest, problems = verify_corpus(REPO / "traces")
    assert problems == [], "refresh it: loopguard corpus init traces --update\n" + "\n".join(problems)
    assert manifest is not None and manifest.name == "loopguard-traces"
    published = manifest.published_with
    assert [(p.policy, p.mismatches) for p in published] == [("own", 0)]  # every trace passes its expectations
    assert published[0].runs == len(manifest.of_kind("trace")) == len(manifest.files)


def test_its_traces_are_the_ones_run_collects() -> None:
    corpus = open_corpus(REPO / "traces")
    assert corpus.trace_paths == list(iter_trace_files([REPO / "traces"]))  # the manifest itself is no trace
    assert (REPO / "traces" / MANIFEST_NAME).is_file()
