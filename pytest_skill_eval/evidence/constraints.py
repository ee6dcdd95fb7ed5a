"""The constraints on evidence fields that mypy cannot see and the reader enforces.

Each is `Annotated` metadata on a field of a description (`records.py`, `aggregates.py`):
mypy reads only the plain type, the reader's pydantic validation (`shapes.py`) applies the rest.
Ids and hosts become directory names, so a damaged record must not lead a reader elsewhere;
counts are never negative; an interval is a pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema

from . import layout

# `float` accepts integers too (strict mode allows int → float, never bool or str).
Number = float


def _one_level(name: str) -> str:
    if not layout.is_safe_id(name):
        raise ValueError("an unsafe id (it would leave its directory)")
    return name


def _host(name: str) -> str:
    if not layout.is_safe_host(name):
        raise ValueError("an unsafe host name (it would leave its directory)")
    return name


# A count of trials or runs: never negative.
Count = Annotated[int, Field(ge=0)]

# An interval is a pair [low, high].
Interval = Annotated[list[Number], Field(min_length=2, max_length=2)]

# Ids and hosts become directory names: a damaged record must not lead a reader elsewhere.
SafeId = Annotated[str, AfterValidator(_one_level)]
SafeHost = Annotated[str, AfterValidator(_host)]


@dataclass(frozen=True, slots=True)
class Holds:
    """On an open field, one another layer builds as plain JSON: the reader checks it as
    `shape` (the parts it relies on), while mypy sees the open type the writer builds."""

    shape: Any

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Validate as `shape`, in place, so a problem keeps its JSON pointer."""
        return handler.generate_schema(self.shape)
