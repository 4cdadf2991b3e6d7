from __future__ import annotations

from collections.abc import Iterator

import pytest
from wire import AnthropicServer, OpenAIServer, WireServer, serve


@pytest.fixture
def openai_server() -> Iterator[WireServer]:
    yield from serve(OpenAIServer)


@pytest.fixture
def anthropic_server() -> Iterator[WireServer]:
    yield from serve(AnthropicServer)
