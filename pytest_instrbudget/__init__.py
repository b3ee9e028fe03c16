"""pytest-instrbudget: deterministic performance budgets for C and C++ code in pytest."""

from __future__ import annotations

__version__ = "0.1.0"
