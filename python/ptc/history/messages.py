"""One immutable message representation for OpenAI and Anthropic chat histories.

Both provider shapes are parsed into :class:`Message` records and rendered back, so a
strategy works on one model and its output is sent with the client the user already has.
Unknown keys are kept in ``extra`` and written back only to the shape they came from,
so a field one provider accepts never leaks into a request to the other.

This module holds the model; each provider's codec is its own module
(:mod:`~ptc.history.openai_codec`, :mod:`~ptc.history.anthropic_codec`), and
:mod:`~ptc.history.codecs` accepts either shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


Shape = Literal["openai", "anthropic"]


ContentStyle = Literal["str", "parts", "none"]


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping usable as a dataclass default (``MappingProxyType`` is not)."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._d: dict[str, Any] = dict(data) if data else {}

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d))

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


EMPTY: Mapping[str, Any] = FrozenMap()


# Message-level keys that carry our metadata rather than provider fields.
META_KEYS = ("source", "sender_id", "reasoning", "created_at", "merged_meta")


def freeze(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return FrozenMap(d) if d else EMPTY


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    extra: Mapping[str, Any] = EMPTY


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image given by URL (``url``, may be a ``data:`` URL) or inline base64 ``data``."""

    url: str | None = None
    media_type: str | None = None
    data: str | None = None
    detail: str | None = None
    extra: Mapping[str, Any] = EMPTY

    def placeholder(self) -> str:
        if self.url and not self.url.startswith("data:"):
            return f"[Image URL: {self.url}]"
        size = len(self.data or self.url or "") * 3 // 4
        return f"[Image: {self.media_type or 'unknown type'}, ~{size} bytes]"


@dataclass(frozen=True, slots=True)
class OtherPart:
    """A content block this package does not interpret (audio, file, thinking, ...)."""

    type: str
    block: Mapping[str, Any] = EMPTY

    def placeholder(self) -> str:
        return f"[{self.type} content]"


Part = TextPart | ImagePart | OtherPart


@dataclass(frozen=True, slots=True)
class ChatToolCall:
    id: str
    name: str
    arguments: str = "{}"  # JSON text, as OpenAI sends it
    extra: Mapping[str, Any] = EMPTY

    @classmethod
    def of(
        cls, id: str, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> ChatToolCall:
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return cls(id, name, arguments)

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; ``{}`` when they are not a JSON object."""
        try:
            value = json.loads(self.arguments)
        except (ValueError, TypeError):
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Meta:
    """Per-message metadata kept next to provider fields.

    ``source`` is ``"direct"``, ``"broadcast"`` or ``"system"`` (seed 002); ``sender_id`` is
    empty for the commander. ``ephemeral`` marks generated scaffolding (the synthetic
    nudge) that must never be stored.
    """

    source: str | None = None
    sender_id: str | None = None
    reasoning: str | None = None
    created_at: Any = None
    ephemeral: bool = False
    #: Metadata of the messages merged into this one (seed 004 step 6), in order; rendered
    #: as ``merged_meta`` (a list of dicts) with ``include_meta=True``.
    merged: tuple[Meta, ...] = ()


NO_META = Meta()


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ChatToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool | None = None
    meta: Meta = NO_META
    extra: Mapping[str, Any] = EMPTY
    origin: Shape | None = None
    content_style: ContentStyle = "str"

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @classmethod
    def user(
        cls,
        text: str,
        *,
        source: str | None = None,
        sender_id: str | None = None,
        created_at: Any = None,
    ) -> Message:
        meta = NO_META
        if source is not None or sender_id is not None or created_at is not None:
            meta = Meta(source=source, sender_id=sender_id, created_at=created_at)
        return cls("user", (TextPart(text),), meta=meta)

    @classmethod
    def assistant(
        cls,
        text: str | None = None,
        tool_calls: Iterable[ChatToolCall] = (),
        *,
        reasoning: str | None = None,
    ) -> Message:
        parts = (TextPart(text),) if text else ()
        meta = Meta(reasoning=reasoning) if reasoning is not None else NO_META
        return cls(
            "assistant",
            parts,
            tuple(tool_calls),
            meta=meta,
            content_style="str" if parts else "none",
        )

    @classmethod
    def tool(cls, tool_call_id: str, text: str, *, is_error: bool | None = None) -> Message:
        return cls("tool", (TextPart(text),), tool_call_id=tool_call_id, is_error=is_error)

    # -- views ---------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The text parts joined by blank lines (images and other blocks left out)."""
        parts = self.parts
        if len(parts) == 1:
            p = parts[0]
            return p.text if type(p) is TextPart else ""
        return "\n\n".join(p.text for p in parts if type(p) is TextPart)

    def text_with_placeholders(self) -> str:
        """All parts as text; images and binary blocks become short placeholders (seed 004)."""
        out = []
        for p in self.parts:
            out.append(p.text if type(p) is TextPart else p.placeholder())  # type: ignore[union-attr]
        return "\n\n".join(out)

    @property
    def is_empty(self) -> bool:
        if self.tool_calls:
            return False
        for p in self.parts:
            if type(p) is not TextPart or p.text.strip():
                return False
        return True

    def with_parts(self, parts: tuple[Part, ...]) -> Message:
        style: ContentStyle = "parts" if len(parts) > 1 else ("str" if parts else "none")
        if self.content_style == "parts" and parts:
            style = "parts"
        return replace(self, parts=parts, content_style=style)

    def with_text(self, text: str) -> Message:
        """A copy whose text parts are replaced by one text part (other parts kept)."""
        others = tuple(p for p in self.parts if type(p) is not TextPart)
        style: ContentStyle = "parts" if others or self.content_style == "parts" else "str"
        return replace(self, parts=(TextPart(text), *others), content_style=style)
