"""Retry-After, as servers write it, and what the retry policy does with it."""

from __future__ import annotations

import email.utils
import math
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
        ({"retry-after": " 7 "}, 7.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
        # issue 29, item 20: values no server means, which float() reads (or chokes on)
        ({"retry-after": "nan"}, None),
        ({"retry-after": "NaN"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "-Infinity"}, None),
        ({"retry-after": "1e3"}, None),
        ({"retry-after": "1_000"}, None),
        ({"retry-after": "0x10"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "٣"}, None),  # an Arabic-Indic digit: float() reads it as 3
        ({"retry-after-ms": "nan", "retry-after": "2"}, 2.0),
        ({"retry-after-ms": "-inf"}, None),
        ({"retry-after-ms": "-250"}, 0.0),
        ({"retry-after": "9" * 400}, math.inf),  # digits past a float: too long to wait
        ({"retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"}, 0.0),  # a date past
        ({"retry-after": "Sunday, 06-Nov-94 08:49:37 GMT"}, 0.0),  # RFC 850 form
        ({"retry-after": "Sun Nov  6 08:49:37 1994"}, 0.0),  # asctime form
        ({"retry-after": "Sun, 06 Nov 1994 25:61:99 GMT"}, None),
        ({"retry-after": "Sun, 06 Nov 99999 08:49:37 GMT"}, None),
    ],
)
def test_retry_after_from_response_headers(headers: dict[str, str], seconds: Any) -> None:
    assert retry_after(HTTPError(headers)) == seconds


def test_an_http_date_without_a_zone_is_gmt() -> None:
    """asctime dates carry no zone; HTTP dates are GMT whatever the machine's zone is."""
    soon = time.gmtime(time.time() + 30)
    asctime = time.strftime("%a %b %d %H:%M:%S %Y", soon)
    got = retry_after(HTTPError({"retry-after": asctime}))
    assert got is not None and 28 <= got <= 30
    minus_zero = time.strftime("%a, %d %b %Y %H:%M:%S -0000", soon)
    got = retry_after(HTTPError({"retry-after": minus_zero}))
    assert got is not None and 28 <= got <= 30


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(float("nan"), None), (float("inf"), math.inf), (-3, 0.0), (10**400, math.inf), (1.5, 1.5)],
)
def test_retry_after_attribute_values(value: Any, seconds: Any) -> None:
    exc = TransientLLMError("busy")
    exc.retry_after = value  # type: ignore[attr-defined]
    assert retry_after(exc) == seconds


def test_headers_that_are_not_a_mapping_are_not_read() -> None:
    exc = HTTPError({})
    exc.response.headers = ["retry-after", "3"]  # type: ignore[assignment]
    assert retry_after(exc) is None


@pytest.mark.parametrize(
    ("header", "wait"),
    [
        ("nan", 1.0),  # unreadable: the policy's backoff
        ("inf", 1.0),
        ("-5", 1.0),
        ("garbage", 1.0),
        ("3", 3.0),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 1.0),
        ("9" * 400, None),  # longer than max_retry_after: given up, never waited
    ],
)
def test_the_policy_never_waits_nan_negative_or_forever(header: str, wait: Any) -> None:
    policy = RetryPolicy(attempts=3, initial_delay=1.0, max_retry_after=10)
    assert policy.wait_before(1, HTTPError({"retry-after": header})) == wait


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
