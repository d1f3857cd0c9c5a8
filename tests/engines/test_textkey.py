"""TextKey: a key that hashes a sample of a long text finds exactly what a (label, text) tuple finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_loopguard.engines._textkey import TextKey
from pytest_loopguard.engines.lru import LRUMap

LONG = "x" * 100 + "MIDDLE" + "y" * 400  # 506 characters: sampled, its middle unsampled


def test_equal_label_and_text_are_one_key() -> None:
    a, b = TextKey("read a.py", LONG), TextKey("read a.py", "".join(["x" * 100, "MIDDLE", "y" * 400]))
    assert a.text is not b.text and a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1


def test_texts_that_differ_only_between_the_samples_share_a_hash_and_stay_two_keys() -> None:
    other = LONG.replace("MIDDLE", "middle")
    a, b = TextKey("read a.py", LONG), TextKey("read a.py", other)
    assert len(a.text) == len(b.text) and hash(a) == hash(b)  # the same length, head and tail
    assert a != b
    counts: LRUMap[TextKey, int] = LRUMap(10)
    assert [counts.increment(TextKey("read a.py", t)) for t in (LONG, other, LONG, other, LONG)] == [1, 1, 2, 2, 3]


def test_the_label_the_length_and_the_kind_of_text_tell_keys_apart() -> None:
    assert TextKey("a", LONG) != TextKey("b", LONG)
    assert TextKey("a", LONG) != TextKey("a", LONG + "y")
    assert TextKey("a", "ok") != TextKey("a", b"ok")  # an ASCII prefix kept as text never equals bytes
    assert TextKey("a", "ok").__eq__(("a", "ok")) is NotImplemented


def test_a_short_text_is_hashed_whole() -> None:
    assert hash(TextKey("a", "short text")) == hash(("a", "short text"))
    assert hash(TextKey("a", "q" * 300)) != hash(("a", "q" * 300))  # a long one by its samples


# texts built from a few long blocks, so equal lengths, heads and tails with different middles are common
_BLOCKS = st.sampled_from(["a" * 70, "b" * 70, "c" * 3, "\u00e9" * 70, "d" * 200])
_TEXTS = st.lists(_BLOCKS, min_size=0, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["read a", "read b"]), _TEXTS), max_size=40), st.integers(1, 6))
def test_counting_by_textkey_is_counting_by_tuple(events: list[tuple[str, str]], cap: int) -> None:
    by_key: LRUMap[TextKey, int] = LRUMap(cap)
    by_tuple: LRUMap[tuple[str, str], int] = LRUMap(cap)
    for label, text in events:
        assert by_key.increment(TextKey(label, text)) == by_tuple.increment((label, text))
    assert [(k.label, k.text) for k in by_key] == list(by_tuple)  # the same keys, in the same recency order
    assert by_key.evicted == by_tuple.evicted
