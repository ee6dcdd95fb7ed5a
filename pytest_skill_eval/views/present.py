"""Presenting sub-results as text: the one-paragraph description of a check or comparison."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def describe(kind: str, data: Mapping[str, Any]) -> str:
    """One-paragraph text for a check or comparison sub-result."""
    if kind == "comparison":
        return (
            f"comparison {data['id']} ({data['kind']}): {data['transition']} "
            f"(baseline {data['baseline']['check']}={data['baseline']['state']}, "
            f"candidate {data['candidate']['check']}={data['candidate']['state']})"
        )
    return (
        f"check {data['id']} ({data['kind']}, {data['variant']}): {data['state']}\n"
        f"expected: {_compact(data.get('expected'))}\n"
        f"observed: {_compact(data.get('observed'))}"
    )


def _compact(value: Any) -> str:
    """Compact one-line JSON, as sub-result descriptions and JUnit properties show values."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
