"""A recording speaks the wire format of the host it records for, read from its registration."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.registry import registration_for
from pytest_skill_eval.modelserver.wire import ANTHROPIC, OPENAI
from pytest_skill_eval.run.providers import EndpointFactory
from tests.support.registry import register


def test_a_host_with_one_wire_format_records_in_it_whatever_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = registration_for("codex")
    register(monkeypatch, dataclasses.replace(codex, name="fixed", apis=(ANTHROPIC,)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    factory = EndpointFactory(
        cassettes=tmp_path, record="all", auth=None, models=None, upstream_url="http://127.0.0.1:1"
    )
    assert factory._upstream("openai", "gpt-4o", "fixed").api == ANTHROPIC
    # Pi speaks the provider's own.
    assert factory._upstream("openai", "gpt-4o", "pi").api == OPENAI
