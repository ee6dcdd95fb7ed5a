"""Prices come from the operator's models file first, then from the host's price source: a
model the file prices needs no binary at all, whatever the host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skill_eval.budget.prices import PriceTable
from pytest_skill_eval.hosts.base import Executable
from pytest_skill_eval.hosts.registry import names

COST = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}


def _models(tmp_path: Path) -> Path:
    table = {"providers": {"acme": {"models": [{"id": "m1", "cost": COST}, {"id": "free"}]}}}
    path = tmp_path / "models.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    return path


@pytest.mark.parametrize("host", names())
def test_a_model_the_models_file_prices_needs_no_binary(host: str, tmp_path: Path) -> None:
    asked: list[str] = []

    def binaries(name: str) -> Executable:
        asked.append(name)
        raise LookupError(name)

    table = PriceTable(_models(tmp_path), binaries)
    price = table.price("acme", "m1", host)
    assert price is not None
    assert (price["input"], price["output"]) == (3, 15)
    assert table.price("acme", "free", host) is None  # no cost: no price, and no source asked
    assert asked == []


def test_without_binaries_an_unlisted_model_has_no_price(tmp_path: Path) -> None:
    assert PriceTable(_models(tmp_path)).price("acme", "other", names()[0]) is None
    assert PriceTable(None).providers() == {}
