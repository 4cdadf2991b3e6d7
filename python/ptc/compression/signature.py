"""Moved to :mod:`ptc.tools.signature` (signatures are about tools); these names still
resolve here."""

from __future__ import annotations

from ptc._deprecated import moved

__getattr__ = moved("ptc.compression.signature", "ptc.tools.signature")
