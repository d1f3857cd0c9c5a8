"""Redaction keeps identities: equal texts stay equal, different texts stay different, twice is once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from planted_secrets import PEM, PLANTED, USER_RULE, USER_SECRET, assert_no_planted_secret

from pytest_loopguard.live._redact import Redactor

# texts built from secrets (and near-misses that are not secrets) between ordinary words, always with a
# separator: a key glued to the word before it ("catsk-…") is not recognised, by design (see test_redact)
SECRETS = [*PLANTED.values(), PEM, USER_SECRET, PLANTED["openai-key"][:-5] + "ZZZZZ", "AKIA" + "Z" * 16]
WORDS = ["cat", "src/app.py", "task-runner", "sk-", "Bearer", "ghp_", "--x", "12", "é", "AKIA"]
pieces = st.sampled_from(SECRETS) | st.sampled_from(WORDS)
texts = st.lists(pieces, max_size=6).flatmap(
    lambda parts: st.lists(st.sampled_from([" ", "\n", "=", "'", '"', ": "]), min_size=len(parts), max_size=len(parts))
    .map(lambda seps: "".join(p + s for p, s in zip(parts, seps, strict=True)))
)


@given(st.lists(texts, min_size=2, max_size=6))
def test_equal_texts_stay_equal_and_different_texts_stay_different(batch: list[str]) -> None:
    r = Redactor([USER_RULE])
    out = [r.text(t) for t in batch]
    for i, a in enumerate(batch):
        for j, b in enumerate(batch):
            assert (out[i] == out[j]) == (a == b), (a, b, out[i], out[j])


@given(texts)
def test_redacting_twice_is_redacting_once_and_no_planted_secret_is_left(text: str) -> None:
    r = Redactor([USER_RULE, r"\d+"])  # a user rule that would match inside a placeholder's number
    once = r.text(text)
    assert r.text(once) == once
    assert_no_planted_secret(once)


@given(st.dictionaries(st.sampled_from(["a", "b", PLANTED["openai-key"]]), texts, max_size=3), texts)
def test_value_redacts_every_string_inside_keys_too(mapping: dict[str, str], text: str) -> None:
    r = Redactor([USER_RULE])
    out = r.value({"m": mapping, "l": [text, (text,)]})
    assert list(out["m"]) == [r.text(k) for k in mapping]
    assert out["l"][0] == out["l"][1][0] == r.text(text)
    assert all(out["m"][r.text(k)] == r.text(v) for k, v in mapping.items())
