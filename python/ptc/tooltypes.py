"""Moved to :mod:`ptc.tools.rich_types`; these names still resolve here."""

from __future__ import annotations

from ptc._deprecated import moved

__getattr__ = moved("ptc.tooltypes", "ptc.tools.rich_types")
