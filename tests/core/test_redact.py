"""Redactor: built-in and user rules, stable placeholders, recursion, no false positives on code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planted_secrets import PEM, PLANTED, USER_RULE, USER_SECRET, assert_no_planted_secret, planted_payload

from pytest_loopguard.errors import RedactionError
from pytest_loopguard.live._redact import Redactor, configured_rules


@pytest.mark.parametrize(
    ("secret", "label"),
    [
        (PLANTED["openai-key"], "openai-key"),
        (PLANTED["openai-project-key"], "openai-key"),
        (PLANTED["anthropic-key"], "anthropic-key"),
        (PLANTED["aws-access-key-id"], "aws-access-key-id"),
        (PLANTED["github-token"], "github-token"),
        (PLANTED["github-pat"], "github-token"),
        (PLANTED["slack-token"], "slack-token"),
        (PEM, "private-key"),
    ],
)
def test_each_builtin_rule_replaces_its_secret_with_a_labelled_placeholder(secret: str, label: str) -> None:
    out = Redactor().text(f"before {secret} after")
    assert out == f"before <redacted:{label}:1> after"


def test_bearer_keeps_the_scheme_word_and_replaces_the_token() -> None:
    out = Redactor().text(f"Authorization: Bearer {PLANTED['bearer-token']}\nnext")
    assert out == "Authorization: Bearer <redacted:bearer-token:1>\nnext"


def test_a_torn_pem_block_is_redacted_to_the_end_of_the_text() -> None:
    torn = PEM.split("-----END")[0]
    assert Redactor().text(f"cat id_rsa\n{torn}") == "cat id_rsa\n<redacted:private-key:1>"


def test_equal_secrets_get_equal_placeholders_and_different_ones_different() -> None:
    r = Redactor()
    a, b = PLANTED["openai-key"], PLANTED["openai-project-key"]
    assert r.text(f"{a} {b} {a}") == "<redacted:openai-key:1> <redacted:openai-key:2> <redacted:openai-key:1>"
    # the mapping holds across calls: one redactor per trace keeps identities across steps
    assert r.text(b) == "<redacted:openai-key:2>"
    assert r.count == 2


@pytest.mark.parametrize(
    "text",
    [
        "sed -n '25,35p' src/task-runner-configuration-loader.py",
        "pip install scikit-learn && python -m disk-usage-report-generator",
        "ls /home/user/.ssh/ && cat ~/.aws/config",
        "const ASK_FOR_CONFIRMATION_BEFORE_DELETE = true; // AKIA is the AWS prefix",
        "git checkout feature/sk-learning-rate-schedule-refactor",
        "the bearer of this message is trustworthy",
        "https://example.com/tasks/risk-assessment-2024-summary-final",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
        "def ghp_token_like_name(): return 'xoxb'",
    ],
)
def test_ordinary_code_paths_and_prose_are_left_alone(text: str) -> None:
    r = Redactor()
    assert r.text(text) == text
    assert r.count == 0


def test_user_rules_add_to_the_builtins_and_may_be_named() -> None:
    r = Redactor([USER_RULE])
    assert r.text(f"{USER_SECRET} {PLANTED['openai-key']}") == "<redacted:custom:1> <redacted:openai-key:1>"
    named = Redactor({"ticket": USER_RULE}, builtin=False)
    assert named.text(f"{USER_SECRET} {PLANTED['openai-key']}") == f"<redacted:ticket:1> {PLANTED['openai-key']}"


def test_a_user_rule_with_a_secret_group_replaces_only_that_group() -> None:
    r = Redactor([r"password=(?P<secret>\S+)"], builtin=False)
    assert r.text("login password=hunter2 ok") == "login password=<redacted:custom:1> ok"


def test_overlapping_matches_are_redacted_once() -> None:
    # the bearer rule and the OpenAI rule match the same span: the more specific (earlier) rule names it;
    # a user rule matching inside the placeholder's text does not redact it again
    r = Redactor([r"redacted"])
    out = r.text(f"Bearer {PLANTED['openai-key']}")
    assert out == "Bearer <redacted:openai-key:1>"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (["ok-[0-9]+", "bad-[0-9"], "redact rule #2 'bad-[0-9': invalid regex 'bad-[0-9': unterminated character set"),
        ({"empty": "x*"}, "redact rule empty: regex 'x*' matches the empty string"),
        ({"Bad Name": "x"}, "redact rule Bad Name: a rule's name is lowercase letters, digits, '-' or '_'"),
    ],
)
def test_an_unusable_user_rule_is_one_clear_error_naming_it(rules: object, message: str) -> None:
    with pytest.raises(RedactionError) as info:
        Redactor(rules)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_a_bare_string_is_one_rule_not_a_rule_per_letter() -> None:
    assert Redactor(USER_RULE, builtin=False).text(USER_SECRET) == "<redacted:custom:1>"


def test_value_redacts_strings_recursively_keys_too_and_keeps_other_scalars() -> None:
    key = PLANTED["openai-key"]
    obj = {key: [key, 3, None, {"t": (key, True)}], "n": 1.5, 7: "x"}
    out = Redactor().value(obj)
    placeholder = "<redacted:openai-key:1>"
    assert out == {placeholder: [placeholder, 3, None, {"t": (placeholder, True)}], "n": 1.5, 7: "x"}


def test_value_returns_unchanged_containers_as_they_are() -> None:
    obj = {"a": ["x", {"b": "y"}], "c": 2}
    assert Redactor().value(obj) is obj


def test_no_planted_secret_survives_value() -> None:
    r = Redactor([USER_RULE])
    out = json.dumps(r.value(planted_payload()))
    assert_no_planted_secret(out)
    # and the check itself catches a leak
    with pytest.raises(AssertionError, match="planted secrets survived"):
        assert_no_planted_secret(json.dumps(Redactor().value(planted_payload())))


def test_configured_reads_the_nearest_pyproject_upward_and_adds_extra_rules(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.loopguard]\nredact = ["{USER_RULE}"]\n', encoding="utf-8")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert configured_rules(nested) == [USER_RULE]
    r = Redactor.configured(["pw=[0-9]{6}"], start=nested)
    assert r.text(f"{USER_SECRET} pw=123456 {PLANTED['aws-access-key-id']}") == (
        "<redacted:custom:1> <redacted:custom:2> <redacted:aws-access-key-id:1>"
    )


def test_configured_rules_may_be_a_table_of_named_regexes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.loopguard.redact]\nticket = '{USER_RULE}'\n", encoding="utf-8")
    assert Redactor.configured(start=tmp_path).text(USER_SECRET) == "<redacted:ticket:1>"


def test_no_pyproject_or_no_table_means_no_user_rules(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    assert configured_rules(tmp_path) == []


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[tool.loopguard]\nredact = 'one-string'\n", "expected a list of regexes or a table of name = regex"),
        ("[tool.loopguard]\nredact = [1]\n", "expected a list of regexes or a table of name = regex"),
        ("[tool.loopguard\n", "cannot read the rules"),
    ],
)
def test_a_malformed_configuration_names_the_file_and_table(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(RedactionError) as info:
        Redactor.configured(start=tmp_path)
    assert str(info.value).startswith(f"redact rule {tmp_path / 'pyproject.toml'} [tool.loopguard] redact: {message}")


def test_a_bad_configured_regex_is_named() -> None:
    with pytest.raises(RedactionError, match=r"redact rule #2 'b\(': invalid regex"):
        Redactor(["a"], extra=["b("])


def test_a_key_glued_to_the_word_before_it_is_not_taken_for_one() -> None:
    # the price of no false positives inside words ("task-runner-2024-final-v2" holds "sk-runner-2024-…")
    r = Redactor()
    assert r.text("task-runner-2024-final-version-v2") == "task-runner-2024-final-version-v2"
    glued = "cat" + PLANTED["openai-key"]
    assert r.text(glued) == glued
