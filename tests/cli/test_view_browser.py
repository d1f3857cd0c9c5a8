"""`loopguard view`'s page in a real headless Chromium (Debian's chromium and chromedriver, driven over WebDriver):
a clicked step shows what `loopguard replay --json` says, policies switch, keys move, filters filter, text that
tries to end the data block stays text, and a 10,000-step run opens and selects a step quickly.

Screenshots (a stopped run, a clean run, two policies side by side, the 10,000-step run) are written under the
test's tmp folder and copied to $LOOPGUARD_VIEW_SHOTS (default /tmp/lg/view-shots) for people to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import webdriver
from viewpage import HOSTILE, hostile_trace

from pytest_loopguard.cli import _main as cli

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
STOPPED = TRACES / "loop_guard" / "default_consecutive_stop.yaml"
CLEAN = TRACES / "read_tracker" / "hermes_interleaved_reads_never_warn.yaml"
SIDE_BY_SIDE = TRACES / "loop_guard" / "worker_identical_call_seven.yaml"
SAMPLE = [STOPPED, CLEAN, SIDE_BY_SIDE, TRACES / "read_tracker" / "hermes_seed_001_reread_loop.yaml",
          TRACES / "failure_tracker" / "qa_agent_repetition_stop.yaml"]
POLICIES = ("default", "spacebot")
SHOTS = Path(os.environ.get("LOOPGUARD_VIEW_SHOTS", "/tmp/lg/view-shots"))

# What the detail pane shows, read back from the page's elements (their text, as a person reads it).
SHOWN = """
var d = document.querySelector('.lg-detail');
return {index: Number(d.dataset.index), policies: Array.from(d.querySelectorAll('.lg-policy')).map(function (p) {
  return {policy: p.dataset.policy, action: p.querySelector('h4 .lg-act').textContent,
          verdicts: Array.from(p.querySelectorAll('.lg-verdict')).map(function (v) {
            return {engine: v.querySelector('.lg-engine').textContent, action: v.querySelector('.lg-act').textContent,
                    reason: v.querySelector('.lg-vreason').textContent,
                    message: v.querySelector('.lg-message').textContent};
          }),
          state: Array.from(p.querySelectorAll('.lg-state')).map(function (s) { return s.textContent; })};
}), text: d.textContent};
"""
ROWS = "return Array.from(document.querySelectorAll('.lg-row')).map(function (r) { return Number(r.dataset.index); });"


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Browser]:
    missing = webdriver.available()
    if missing is not None:
        pytest.fail(f"the browser tests need Debian's chromium and chromedriver: {missing}")
    with webdriver.chromium() as b:
        yield b


def shot(browser: webdriver.Browser, tmp_path: Path, name: str) -> Path:
    path = browser.screenshot(tmp_path / name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, SHOTS / name)
    return path


def replay_json(capsys: pytest.CaptureFixture[str], path: Path, policy: str) -> dict[str, Any]:
    assert cli.main(["replay", str(path), "--json", "--policy", policy]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def write_view(capsys: pytest.CaptureFixture[str], page: Path, *args: str) -> str:
    assert cli.main(["view", *args, "-o", str(page)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return page.as_uri()


def test_a_clicked_step_shows_what_replay_json_says(browser: webdriver.Browser, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    policy_args = [a for p in POLICIES for a in ("--policy", p)]
    browser.open(write_view(capsys, tmp_path / "v.html", *map(str, SAMPLE), *policy_args))
    assert browser.script("return document.getElementById('lg-view').dataset.ready") == "1"
    checked = 0
    for n, path in enumerate(SAMPLE):
        browser.click(f'.lg-run[data-run="{n}"]')
        replayed = {p: replay_json(capsys, path, p) for p in POLICIES}
        assert browser.text(".lg-title") == replayed["default"]["trace"]
        for step in replayed["default"]["steps"]:
            browser.click(f'.lg-row[data-index="{step["index"]}"]')
            shown = browser.script(SHOWN)
            assert shown["index"] == step["index"]
            assert [p["policy"] for p in shown["policies"]] == list(POLICIES)
            for box, policy in zip(shown["policies"], POLICIES, strict=True):
                got = replayed[policy]["steps"][step["index"]]
                assert box["action"] == got["action"]
                assert box["verdicts"] == [{k: v[k] for k in ("engine", "action", "reason", "message")}
                                           for v in got["verdicts"]]
                checked += len(got["verdicts"])
        if path == STOPPED:
            stop = replayed["default"]["stopped_at"]
            browser.click(f'.lg-row[data-index="{stop}"]')
            shown = browser.script(SHOWN)
            # the engine state behind the stop: the count the verdict names, and the call's identity
            assert "consecutive: 8" in shown["policies"][0]["state"][0]
            assert 'identity: browser_click {"index":7}' in shown["policies"][0]["state"][0]
            shot(browser, tmp_path, "stopped-run.png")
            browser.click(".lg-loop")  # a loop's span opens its first flagged step
            first = next(s["index"] for s in replayed["default"]["steps"] if s["action"] != "allow")
            assert browser.script(SHOWN)["index"] == first
            assert "in a loop, steps 2–7" in browser.script(SHOWN)["text"]
    assert checked > 20
    # a clean run, under its own policy: nothing but allow
    browser.open(write_view(capsys, tmp_path / "clean.html", str(CLEAN)))
    assert set(browser.script("return Array.from(document.querySelectorAll('.lg-row .lg-act'))"
                              ".map(function (a) { return a.textContent; });")) == {"allow"}
    browser.click('.lg-row[data-index="3"]')
    shot(browser, tmp_path, "clean-run.png")


def test_policies_keys_and_filters(browser: webdriver.Browser, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    browser.open(write_view(capsys, tmp_path / "v.html", str(SIDE_BY_SIDE), "--policy", "default",
                            "--policy", "spacebot"))
    before, after = (replay_json(capsys, SIDE_BY_SIDE, p) for p in POLICIES)
    differ = [s["index"] for s, a in zip(before["steps"], after["steps"], strict=True) if s["action"] != a["action"]]
    marked = browser.script("return Array.from(document.querySelectorAll('.lg-differs-row'))"
                            ".map(function (r) { return Number(r.dataset.index); });")
    assert marked == differ and differ
    browser.click(f'.lg-row[data-index="{differ[0]}"]')
    shot(browser, tmp_path, "two-policies.png")
    # keys: j j Enter opens the step two below; k Enter the one above it; n jumps to the next intervention
    browser.click('.lg-row[data-index="0"]')
    browser.keys("j", "j", "Enter")
    assert browser.script(SHOWN)["index"] == 2
    browser.keys("k", "Enter")
    assert browser.script(SHOWN)["index"] == 1
    browser.keys("ArrowDown", "ArrowDown", "ArrowUp", "Enter")
    assert browser.script(SHOWN)["index"] == 2
    browser.keys("n", "Enter")
    interventions = [s["index"] for s, a in zip(before["steps"], after["steps"], strict=True)
                     if {s["action"], a["action"]} - {"allow", "not_reached"}]
    assert browser.script(SHOWN)["index"] == min(i for i in interventions if i > 2)
    # switching a policy off: one column, one verdict box
    browser.click('input[data-policy="spacebot"]')
    assert [p["policy"] for p in browser.script(SHOWN)["policies"]] == ["default"]
    assert browser.script("return document.querySelectorAll('.lg-row .lg-cell').length") == len(before["steps"])
    browser.click('input[data-policy="spacebot"]')
    assert len(browser.script(SHOWN)["policies"]) == 2
    # filters: by verdict, by reason, the differing steps only
    browser.select(".lg-filter-action", "interventions")
    assert browser.script(ROWS) == interventions
    browser.select(".lg-filter-action", "block")
    blocks = [s["index"] for s, a in zip(before["steps"], after["steps"], strict=True) if "block" in (
        s["action"], a["action"])]
    assert browser.script(ROWS) == blocks and blocks
    browser.select(".lg-filter-action", "")
    reason = before["steps"][interventions[0]]["verdicts"][0]["reason"]
    browser.select(".lg-filter-reason", reason)
    with_reason = [s["index"] for s, a in zip(before["steps"], after["steps"], strict=True)
                   if reason in {v["reason"] for v in s["verdicts"] + a["verdicts"]}]
    assert browser.script(ROWS) == with_reason
    assert browser.text(".lg-count") == f"{len(with_reason)} of {len(before['steps'])} steps"
    browser.select(".lg-filter-reason", "")
    browser.click(".lg-differ input")
    assert browser.script(ROWS) == differ


def test_text_that_ends_a_script_block_is_shown_as_text(browser: webdriver.Browser, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    browser.open(write_view(capsys, tmp_path / "v.html", str(hostile_trace(tmp_path))))
    browser.click('.lg-row[data-index="0"]')
    assert browser.script("return window.pwned === undefined && document.scripts.length === 2")
    assert browser.script("return document.querySelector('.lg-result').textContent") == HOSTILE
    browser.click('.lg-row[data-index="1"]')
    assert browser.script("return document.querySelector('.lg-text').textContent") == HOSTILE


def big_trace(folder: Path, steps: int = 10_000) -> Path:
    """A JSONL run of `steps` steps: model turns and shell calls, one command in 50 repeated until it warns."""
    lines = [json.dumps({"loopguard": 1, "name": "ten-thousand-steps"})]
    for i in range(steps):
        n = i // 2
        if i % 2 == 0:
            lines.append(json.dumps({"llm": {"input_tokens": 1000 + i, "output_tokens": 50}}))
        else:
            command = f"pytest tests/test_{n // 50}.py" if n % 50 < 4 else f"echo {n}"
            lines.append(json.dumps({"tool": "shell", "args": {"command": command},
                                     "result": {"ok": n % 50 >= 4, "text": f"output {n}\n"}}))
    path = folder / "big.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_ten_thousand_step_run(browser: webdriver.Browser, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = big_trace(tmp_path)
    url = write_view(capsys, tmp_path / "big.html", str(path), "--policy", "default", "--policy", "spacebot")
    browser.open("about:blank")
    started = time.perf_counter()
    browser.open(url)  # returns once the page has loaded and its script has run
    browser.click('.lg-row[data-index="5"]')
    shown = browser.script(SHOWN)
    elapsed = time.perf_counter() - started
    assert shown["index"] == 5 and len(shown["policies"]) == 2
    shot(browser, tmp_path, "ten-thousand-steps.png")
    # virtualised: a screenful of rows exists, not ten thousand
    assert 10 < len(browser.script(ROWS)) < 200
    assert browser.text(".lg-count") == "10000 of 10000 steps"
    browser.keys("End", "Enter")  # the last step
    assert browser.script(SHOWN)["index"] == 9_999
    assert 9_999 in browser.script(ROWS)
    browser.select(".lg-filter-action", "warn")
    warned = browser.script(ROWS)
    assert warned and all(i % 2 == 1 for i in warned)
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "ten-thousand-steps.txt").write_text(
        f"open + select a step of a 10,000-step run under 2 policies: {elapsed:.3f} s "
        f"(page {Path(tmp_path / 'big.html').stat().st_size:,} bytes)\n", encoding="utf-8")
    print(f"10,000 steps: open + select {elapsed:.3f} s")
