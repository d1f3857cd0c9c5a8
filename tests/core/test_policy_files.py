"""Where a trace's policy file is found: beside the trace, then under the corpus root, never in the working
folder and never outside the root; and a preset name is never read as a path."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_loopguard.errors import PolicyError, TraceError
from pytest_loopguard.io._format import load
from pytest_loopguard.runtime._policy import corpus_root, resolve_policy
from pytest_loopguard.runtime._replay import policy_for

TRACE = "loopguard: 1\nname: t\npolicy: {policy}\nsteps: []\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def warn_at(trace_path: Path) -> int:
    policy, _ = policy_for(load(trace_path))
    value: int = policy.settings("loop_guard").warn_at
    return value


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "pyproject.toml", "")
    write(root / "policies" / "strict.yaml", "preset: default\nloop_guard: {warn_at: 2}\n")
    return root


def test_the_corpus_root_is_the_nearest_folder_with_a_project_marker(repo: Path, tmp_path: Path) -> None:
    deep = repo / "traces" / "a" / "b"
    deep.mkdir(parents=True)
    assert corpus_root(deep) == repo.resolve()
    bare = tmp_path / "bare" / "x"
    bare.mkdir(parents=True)
    assert corpus_root(bare) == bare.resolve()  # no marker anywhere above: the folder itself


def test_a_policy_file_beside_the_trace_wins(repo: Path) -> None:
    write(repo / "traces" / "policies" / "strict.yaml", "preset: default\nloop_guard: {warn_at: 1}\n")
    trace = write(repo / "traces" / "x.yaml", TRACE.format(policy="policies/strict.yaml"))
    assert warn_at(trace) == 1


def test_a_policy_file_is_then_looked_up_under_the_corpus_root(repo: Path) -> None:
    trace = write(repo / "traces" / "deep" / "x.yaml", TRACE.format(policy="policies/strict.yaml"))
    assert warn_at(trace) == 2


def test_the_working_folder_is_never_used(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = tmp_path / "consumer"
    write(consumer / "policies" / "strict.yaml", "preset: default\nloop_guard: {warn_at: 9}\n")
    write(consumer / "policies" / "only-here.yaml", "preset: default\n")
    monkeypatch.chdir(consumer)
    trace = write(repo / "traces" / "x.yaml", TRACE.format(policy="policies/strict.yaml"))
    assert warn_at(trace) == 2  # the corpus's file, not the consumer's
    other = write(repo / "traces" / "y.yaml", TRACE.format(policy="policies/only-here.yaml"))
    with pytest.raises(TraceError, match="not found beside the trace") as info:
        policy_for(load(other))  # read when the trace replays under its own policy, not when it loads
    assert info.value.field == "policy" and info.value.file == str(other)


@pytest.mark.parametrize("spec", ["../outside.yaml", "../../outside.yaml", "{outside}"])
def test_a_policy_file_outside_the_corpus_root_is_an_error(repo: Path, spec: str) -> None:
    outside = write(repo.parent / "outside.yaml", "preset: default\n")
    trace = write(repo / "x.yaml", TRACE.format(policy=spec.format(outside=outside)))
    with pytest.raises(TraceError, match="is outside the corpus root") as info:
        policy_for(load(trace))
    assert info.value.file == str(trace) and info.value.field == "policy"


def test_a_link_out_of_the_corpus_is_an_error(repo: Path) -> None:
    outside = write(repo.parent / "outside.yaml", "preset: default\n")
    (repo / "policies" / "link.yaml").symlink_to(outside)
    trace = write(repo / "x.yaml", TRACE.format(policy="policies/link.yaml"))
    with pytest.raises(TraceError, match="is outside the corpus root"):
        policy_for(load(trace))


@pytest.mark.parametrize("name", ["../presets/default", "presets/default", "/etc/passwd", "default/..", "x" * 5000])
def test_a_preset_name_is_never_a_path(name: str) -> None:
    with pytest.raises(PolicyError, match="unknown preset") as info:
        resolve_policy(name)
    assert len(str(info.value)) < 500


def test_a_preset_named_inside_a_policy_file_is_a_name_too(repo: Path) -> None:
    write(repo / "evil.yaml", "engines: {loop_guard: {warn_at: 1}}\n")
    write(repo / "policies" / "p.yaml", "preset: ../evil\n")
    trace = write(repo / "x.yaml", TRACE.format(policy="policies/p.yaml"))
    with pytest.raises(TraceError, match=r"unknown preset '\.\./evil'"):
        policy_for(load(trace))


def test_a_command_line_policy_file_is_taken_as_given(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--policy policies/strict.yaml` is the user's own argument: relative to where they typed it
    monkeypatch.chdir(repo)
    assert resolve_policy("policies/strict.yaml").settings("loop_guard").warn_at == 2


def test_a_policy_file_name_too_long_for_the_file_system_is_not_found(repo: Path) -> None:
    with pytest.raises(PolicyError, match="not found"):
        resolve_policy("k" * 5000 + ".yaml")
    trace = write(repo / "x.yaml", TRACE.format(policy="k" * 5000 + ".yaml"))
    with pytest.raises(TraceError, match="not found"):
        policy_for(load(trace))


# ---- a corpus run resolves each policy file and mapping once (`resolving_once`) ---------------------------------
def test_within_a_run_a_policy_file_is_read_once_and_outside_as_it_is_now(repo: Path) -> None:
    from pytest_loopguard.runtime._policy import resolving_once

    strict = repo / "policies" / "strict.yaml"
    base = repo / "traces"
    memo: dict[object, object] = {}
    with resolving_once(memo):  # type: ignore[arg-type]
        first = resolve_policy("policies/strict.yaml", base_dir=base)
        write(strict, "preset: default\nloop_guard: {warn_at: 5}\n")
        assert resolve_policy("policies/strict.yaml", base_dir=base) is first  # kept for the run
        assert first.settings("loop_guard").warn_at == 2
    assert resolve_policy("policies/strict.yaml", base_dir=base).settings("loop_guard").warn_at == 5
    with resolving_once(memo):  # type: ignore[arg-type]
        assert resolve_policy("policies/strict.yaml", base_dir=base) is first  # the memo is the run's


def test_the_memo_keys_on_the_folder_the_root_and_the_mappings_types(repo: Path) -> None:
    from pytest_loopguard.runtime._policy import resolving_once

    write(repo / "a" / "p.yaml", "preset: default\nloop_guard: {warn_at: 3}\n")
    write(repo / "b" / "p.yaml", "preset: default\nloop_guard: {warn_at: 4}\n")
    with resolving_once({}):
        assert resolve_policy("p.yaml", base_dir=repo / "a").settings("loop_guard").warn_at == 3
        assert resolve_policy("p.yaml", base_dir=repo / "b").settings("loop_guard").warn_at == 4
        with pytest.raises(PolicyError, match="not found"):  # the same folder, a root that does not hold it
            resolve_policy("p.yaml", base_dir=repo / "c", root=repo / "c")
        assert resolve_policy({"loop_guard": {"warn_at": 2}}).settings("loop_guard").warn_at == 2
        for other in (2.0, True, "2"):  # equal to 2 in Python, or printed alike: each is its own spec
            with pytest.raises(PolicyError, match="expected int"):
                resolve_policy({"loop_guard": {"warn_at": other}})


def test_a_failure_is_not_kept(repo: Path) -> None:
    from pytest_loopguard.runtime._policy import resolving_once

    with resolving_once({}):
        with pytest.raises(PolicyError, match="not found"):
            resolve_policy("late.yaml", base_dir=repo)
        write(repo / "late.yaml", "preset: default\nloop_guard: {warn_at: 4}\n")
        assert resolve_policy("late.yaml", base_dir=repo).settings("loop_guard").warn_at == 4


def test_run_paths_reads_a_shared_policy_file_once_with_the_same_results(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_loopguard.cli._corpus import run_paths
    from pytest_loopguard.io._format import validate_paths
    from pytest_loopguard.runtime import _policy as policy_module
    from pytest_loopguard.runtime._replay import replay

    calls = '{"tool": "read_file", "args": {"path": "a"}}\n' * 4
    for i in range(3):
        write(repo / "traces" / f"t{i}.jsonl", f'{{"loopguard": 1, "name": "t{i}", "policy": "policies/strict.yaml"}}\n'
              + calls)
        write(repo / "traces" / f"y{i}.yaml", TRACE.format(policy="policies/strict.yaml").replace("t\n", f"y{i}\n", 1))
    traces, errors = validate_paths([repo / "traces"])
    assert not errors
    alone = sorted((t.name, r.policy, r.counts()) for t in traces for r in [replay(t)])  # no memo: each its own
    reads: list[Path] = []
    original = policy_module._read_mapping

    def counted(path: Path, what: str) -> object:
        reads.append(path)
        return original(path, what)

    monkeypatch.setattr(policy_module, "_read_mapping", counted)
    for stream in (True, False):  # JSONL streamed, or loaded and replayed like the YAML files
        reads.clear()
        together = sorted((r.trace.name, r.policy, r.counts()) for r, _ in run_paths([repo / "traces"], stream=stream))
        assert together == alone and len(together) == 6
        assert reads == [repo / "policies" / "strict.yaml"]  # once for the run, not twice per trace
