"""Which host's tool dialect a request speaks, when hosts share tool names."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_skill_eval.hosts.dialect import requesting_host
from pytest_skill_eval.hosts.registry import registration_for
from tests.support.registry import register


def _body(*tools: str) -> dict[str, object]:
    return {"tools": [{"type": "function", "function": {"name": t}} for t in tools]}


def test_a_host_sharing_pis_read_is_known_by_its_other_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pi = registration_for("pi")
    sharing = dataclasses.replace(
        pi,
        name="sharing",
        binary_option="sharing",
        tools=dataclasses.replace(pi.tools, offers=("read", "find_files", "load_skill")),
    )
    register(monkeypatch, sharing)
    assert requesting_host(_body("read", "find_files", "write")) == "sharing"
    assert requesting_host(_body("load_skill")) == "sharing"
    # Pi's own requests stay Pi's: a tie goes to the host registered first.
    assert requesting_host(_body("read", "write", "edit")) == "pi"
    assert requesting_host(_body("write")) == "pi"  # nothing known: the default host
