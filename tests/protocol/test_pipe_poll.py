"""The reply poll before select (`GuardProcess._poll`): on a real non-blocking pipe it gives what is there, None
when nothing came within its bound, and b"" once the writer has closed; the protocol is otherwise unchanged."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from pytest_loopguard.engines._pipe import GuardProcess


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):  # a test closed it already
            os.close(fd)


def test_a_reply_already_written_is_taken_at_once(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b'{"verdicts":[]}\n')
    assert GuardProcess._poll(r, 0.0) == b'{"verdicts":[]}\n'  # even with no time to poll: one read first


def test_nothing_within_the_bound_is_none_and_the_caller_goes_on_to_select(pipe: tuple[int, int]) -> None:
    r, _w = pipe
    assert GuardProcess._poll(r, 0.0) is None
    assert GuardProcess._poll(r, 200e-6) is None


def test_a_closed_writer_is_the_end_of_the_stream(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.close(w)
    assert GuardProcess._poll(r, 200e-6) == b""
