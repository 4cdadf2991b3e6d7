"""Retry-After, as servers write it, and what the retry policy does with it."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest
from ptc.llm import RetryPolicy, TransientLLMError, retry_after


class Response:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class HTTPError(Exception):
    status_code = 429

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("rate limited")
        self.response = Response(headers)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_from_response_headers(headers: dict[str, str], seconds: Any) -> None:
    assert retry_after(HTTPError(headers)) == seconds


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    got = retry_after(HTTPError({"retry-after": when}))
    assert got is not None and 28 <= got <= 30


def test_retry_after_as_an_attribute() -> None:
    exc = TransientLLMError("busy")
    exc.retry_after = 2  # type: ignore[attr-defined]
    assert retry_after(exc) == 2.0
    assert retry_after(ValueError("x")) is None


def test_the_policy_waits_the_longer_of_backoff_and_retry_after() -> None:
    policy = RetryPolicy(attempts=4, initial_delay=1.0, multiplier=2.0, max_retry_after=10)
    assert policy.wait_before(1, HTTPError({"retry-after": "5"})) == 5.0
    assert policy.wait_before(3, HTTPError({"retry-after": "0.5"})) == 4.0
    assert policy.wait_before(1, HTTPError({"retry-after": "11"})) is None  # too long: give up
    assert policy.wait_before(4, HTTPError({})) is None  # attempts used up
    assert policy.wait_before(1, ValueError("not transient")) is None
