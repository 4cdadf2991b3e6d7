"""What a provider sends back is read as untrusted (issue 29, second red team):

- a reply that is not a chat completion (``{"choices": "abc"}``, a null message, content 5)
  was read as an empty reply, and the agent spent its turns on "no program found": it is now
  an ``LLMReplyError`` naming the field, not retried;
- a 200 with an HTML page said "the chat completion has no choices": the error now gives the
  content type and the first bytes; a redirect loop and a body cut short said only
  "APIConnectionError: Connection error.": the step's error now carries the cause;
- usage counts were taken as given (-7, 10**30, "x"): each is made a count in 0..2**53, with
  a warning saying what was done.

Real SDKs over loopback HTTP; normalize_reply for what your own callable returns."""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any

import ptc
import ptc.llm
import pytest
from ptc.llm import LLMError, LLMReplyError, RetryPolicy, normalize_reply
from ptc.llm.reply import MAX_COUNT, describe_error, usage_count
from wire import AnthropicServer, OpenAIServer, Raw, WireServer

MESSAGES = [{"role": "user", "content": "x"}]
PROGRAM = "```clojure\n(return 7)\n```"
THREE = RetryPolicy(attempts=3, initial_delay=0.01)


def openai_llm(server: WireServer) -> Any:
    return ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k")


def anthropic_llm(server: WireServer) -> Any:
    return ptc.llm.anthropic("m", base_url=server.url, api_key="k")


OPENAI_SHAPES = [
    ('{"choices": "abc"}', "choices", "choices: expected a list, got the string 'abc'"),
    (
        '{"choices": [{"message": null}]}',
        "choices[0].message",
        "choices[0].message: expected an object, got null",
    ),
    (
        '{"choices": [{"message": {"content": 5}}]}',
        "choices[0].message.content",
        "choices[0].message.content: expected text or a list of parts, got the integer 5",
    ),
    (
        '{"choices": [{"message": {"content": {"text": "hi"}}}]}',
        "choices[0].message.content",
        "choices[0].message.content: expected text or a list of parts, got an object",
    ),
    ('{"choices": [7]}', "choices[0]", "choices[0]: expected an object, got the integer 7"),
    ('{"choices": []}', "choices", "the chat completion has no choices"),
    ('{"id": "x"}', "", "the reply is not a chat completion (it has no choices)"),
    (
        '{"error": {"message": "quota exceeded", "type": "insufficient_quota"}}',
        "error",
        "the reply is an error, not a chat completion (it has no choices): quota exceeded",
    ),
    (
        '{"choices": [{"message": {"content": "hi"}}], "usage": [1]}',
        "usage",
        "usage: expected an object, got a list of 1 items",
    ),
]


@pytest.mark.parametrize(("body", "path", "message"), OPENAI_SHAPES)
def test_a_completion_of_the_wrong_shape_is_named(
    openai_server: OpenAIServer, body: str, path: str, message: str
) -> None:
    openai_server.script = [Raw(body.encode())] * 3
    step = ptc.SubAgent("How many?", llm=openai_llm(openai_server), retry=THREE).run()
    assert step.error is not None and step.error.type == "llm_error"
    assert step.error.message == "LLM call failed: LLMReplyError: " + message
    assert len(openai_server.received) == 1  # not transient: not retried
    if '"choices"' in body:  # the same from what your callable returns
        with pytest.raises(LLMReplyError) as info:
            normalize_reply(json.loads(body))
        assert (str(info.value), info.value.path) == (message, path)


def test_null_content_is_a_reply_with_no_text(openai_server: OpenAIServer) -> None:
    """A message may carry no text (tool calls, a refusal): that is an empty reply, as
    before, not an error."""
    openai_server.script = [Raw(b'{"choices": [{"message": {"content": null}}]}')]
    assert openai_llm(openai_server)(MESSAGES).content == ""


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '{"content": "abc"}',
            "content: expected a list of content blocks, got the string 'abc'",
        ),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            "the reply is an error, not a message (it has no content): Overloaded",
        ),
    ],
)
def test_a_message_of_the_wrong_shape_is_named(
    anthropic_server: AnthropicServer, body: str, message: str
) -> None:
    anthropic_server.script = [Raw(body.encode())] * 3
    step = ptc.SubAgent("How many?", llm=anthropic_llm(anthropic_server), retry=THREE).run()
    assert step.error is not None
    assert step.error.message == "LLM call failed: LLMReplyError: " + message
    assert len(anthropic_server.received) == 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            Raw(b"<html>login</html>", {"content-type": "text/html"}),
            "the reply is not JSON (content-type: text/html; Expecting value: line 1 column 1"
            " (char 0)): '<html>login</html>'",
        ),
        (
            Raw(b"<p>" + b"a" * 300, {"content-type": "text/html; charset=utf-8"}),
            "the reply is not JSON (content-type: text/html; charset=utf-8; Expecting value:"
            f" line 1 column 1 (char 0)): '<p>{'a' * 197}' ... (303 bytes in all)",
        ),
        (
            Raw(b"\xff\xfe\x00", {}),
            "the reply is not JSON (content-type: none; 'utf-16-le' codec can't decode byte"
            " 0x00 in position 2: truncated data): '\ufffd\ufffd\\x00'",
        ),
        (
            Raw(b"[1, 2]"),
            "the reply is JSON but not an object (content-type: application/json): '[1, 2]'",
        ),
        (
            Raw(b"[" * 100_000 + b"]" * 100_000),
            "the reply is JSON nested too deeply to read (content-type: application/json)",
        ),
    ],
    ids=["html", "long-html", "not-utf8", "array", "deep"],
)
def test_a_body_that_is_not_a_json_object_says_what_came(
    openai_server: OpenAIServer, raw: Raw, message: str
) -> None:
    openai_server.script = [raw] * 3
    step = ptc.SubAgent("How many?", llm=openai_llm(openai_server), retry=THREE).run()
    assert step.error is not None
    assert step.error.message == "LLM call failed: LLMReplyError: " + message
    assert len(openai_server.received) == 1


class RawSocketServer:
    """Answers every connection with ``answer`` (raw bytes), then closes it."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                # Read the whole request body: closing with unread bytes makes the
                # kernel send a reset, and the client then reports that instead.
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                conn.sendall(self.answer)
                conn.shutdown(socket.SHUT_WR)


def test_a_redirect_loop_says_so() -> None:
    server = RawSocketServer(
        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v1/chat/completions\r\n"
        b"content-length: 0\r\nconnection: close\r\n\r\n"
    )
    llm = ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k")
    step = ptc.SubAgent("How many?", llm=llm, retry=RetryPolicy(attempts=1)).run()
    assert step.error is not None
    assert step.error.message == (
        "LLM call failed: APIConnectionError: Connection error. (caused by TooManyRedirects:"
        " Exceeded maximum allowed redirects.)"
    )


def test_a_body_cut_short_says_so() -> None:
    server = RawSocketServer(
        b'HTTP/1.1 200 OK\r\ncontent-length: 1000\r\nconnection: close\r\n\r\n{"ch'
    )
    llm = ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k")
    step = ptc.SubAgent("How many?", llm=llm, retry=RetryPolicy(attempts=1)).run()
    assert step.error is not None
    assert step.error.message == (
        "LLM call failed: APIConnectionError: Connection error. (caused by RemoteProtocolError:"
        " peer closed connection without sending complete message body (received 4 bytes,"
        " expected 1000))"
    )


def test_describe_error_follows_the_causes_and_is_bounded() -> None:
    try:
        try:
            try:
                raise OSError("reset by peer")
            except OSError as exc:
                raise ValueError("read failed") from exc
        except ValueError as exc:
            raise LLMError("Connection error.") from exc
    except LLMError as exc:
        assert describe_error(exc) == (
            "LLMError: Connection error. (caused by ValueError: read failed)"
            " (caused by OSError: reset by peer)"
        )
    # a cause the message quotes already is not repeated; one with no text shows its type
    quoted = LLMError("failed: boom")
    quoted.__cause__ = RuntimeError("boom")
    assert describe_error(quoted) == "LLMError: failed: boom"
    silent = LLMError("failed")
    silent.__cause__ = TimeoutError()
    assert describe_error(silent) == "LLMError: failed (caused by TimeoutError)"
    # an exception chained to itself ends
    loop = LLMError("again")
    loop.__cause__ = loop
    assert describe_error(loop) == "LLMError: again"
    long = LLMError("x" * 5000)
    assert describe_error(long, limit=100) == (
        "LLMError: " + "x" * 90 + "... (cut: 5,010 characters in all)"
    )


@pytest.mark.parametrize(
    ("value", "count", "said"),
    [
        (0, 0, None),
        (7, 7, None),
        (MAX_COUNT, MAX_COUNT, None),
        (12.0, 12, None),
        (None, 0, None),
        (-7, 0, "the integer -7"),
        (MAX_COUNT + 1, MAX_COUNT, f"the integer {MAX_COUNT + 1}"),
        (10**30, MAX_COUNT, "the integer of 31 digits"),
        (12.5, 12, "the number 12.5"),
        (-0.5, 0, "the number -0.5"),
        (float("nan"), 0, "the number nan"),
        (float("inf"), MAX_COUNT, "the number inf"),
        (1e300, MAX_COUNT, "the number 1e+300"),
        ("12", 0, "the string '12'"),
        (True, 0, "the boolean true"),
        ([3], 0, "a list of 1 items"),
    ],
)
def test_a_usage_count_is_made_a_count(
    caplog: pytest.LogCaptureFixture, value: Any, count: int, said: str | None
) -> None:
    with caplog.at_level(logging.WARNING, logger="ptc"):
        assert usage_count(value, "usage.prompt_tokens") == count
    expected = (
        []
        if said is None
        else [
            f"ptc.llm: the provider's usage.prompt_tokens is {said}, not a token count:"
            f" taken as {count}"
        ]
    )
    assert [r.getMessage() for r in caplog.records] == expected


def completion_with(usage: dict[str, Any]) -> bytes:
    return json.dumps({"choices": [{"message": {"content": PROGRAM}}], "usage": usage}).encode()


def test_a_provider_usage_no_count_holds_leaves_a_step_that_loads_back(
    openai_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.script = [
        Raw(completion_with({"prompt_tokens": -7, "completion_tokens": 10**30}))
    ]
    with caplog.at_level(logging.WARNING, logger="ptc"):
        step = ptc.SubAgent("How many?", llm=openai_llm(openai_server)).run()
    assert (step.ok, step.value) == (True, 7)
    assert (step.usage.input_tokens, step.usage.output_tokens) == (0, MAX_COUNT)
    assert dict(step.turns[0].usage) == {"input_tokens": 0, "output_tokens": MAX_COUNT}
    assert [r.getMessage() for r in caplog.records if r.name == "ptc"][:2] == [
        "ptc.llm: the provider's usage.prompt_tokens is the integer -7, not a token count:"
        " taken as 0",
        "ptc.llm: the provider's usage.completion_tokens is the integer of 31 digits, not a"
        f" token count: taken as {MAX_COUNT}",
    ]
    again = ptc.Step.from_json(step.to_json())
    assert (again.ok, again.value, again.usage.output_tokens) == (True, 7, MAX_COUNT)


def test_anthropic_usage_sums_stay_counts(anthropic_server: AnthropicServer) -> None:
    anthropic_server.usage = {
        "input_tokens": MAX_COUNT,
        "cache_read_input_tokens": MAX_COUNT,
        "cache_creation_input_tokens": -1,
        "output_tokens": "5",
    }
    anthropic_server.script = ["hi"]
    reply = anthropic_llm(anthropic_server)(MESSAGES)
    assert dict(reply.usage) == {
        "input_tokens": MAX_COUNT,
        "output_tokens": 0,
        "cache_read_tokens": MAX_COUNT,
    }


def test_usage_from_your_own_callable_is_made_counts_too() -> None:
    reply = normalize_reply(
        {"content": "x", "usage": {"input_tokens": -1, "prompt_tokens": MAX_COUNT, "x": "y"}}
    )
    assert dict(reply.usage) == {"input_tokens": MAX_COUNT}
    reply = normalize_reply({"content": "x", "usage": {"output_tokens": 2.0}})
    assert dict(reply.usage) == {"output_tokens": 2}
