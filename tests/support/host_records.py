"""What every host's run record of the example suite must say, whichever run it came from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.registry import registration_for
from pytest_skill_eval.nodeids import DEFAULT_HOST
from pytest_skill_eval.run.providers import SCRIPTED_PRICES
from tests.support import runs
from tests.support.files import read_json


def _codex(variant_dir: Path, run: dict[str, Any]) -> None:
    assert "mount namespace" in run["binary"]["enforced"]["reads"]  # reads confined


def _opencode(variant_dir: Path, run: dict[str, Any]) -> None:
    # One request per scripted answer: opencode never asked for a title.
    requests = runs.model_requests(variant_dir)
    assert len(requests) == len(run["turns"][0]["toolActivity"]) + 1


# What only one host's record shows, checked on its variant directory and run record.
ONLY_ON: dict[str, Callable[[Path, dict[str, Any]], None]] = {
    "codex": _codex,
    "opencode": _opencode,
}


def assert_example_record(host: str, variant_dir: Path) -> None:
    """`variant_dir`'s run record names `host`, its pinned binary and the scripted provider,
    and prices its usage at the one simulated table whatever the host prices."""
    __tracebackhide__ = True
    run = read_json(variant_dir / "run.json")
    assert run["host"] == {"name": host, "chosenBy": "invocation", "declared": DEFAULT_HOST}
    assert run["process"]["host"] == host
    assert run["provider"]["mode"] == "scripted"
    assert run["binary"]["version"] == registration_for(host).version
    assert "pi" not in run
    usage = run["usage"]
    table = sum(usage[key] * SCRIPTED_PRICES[key] for key in SCRIPTED_PRICES) / 1e6
    assert usage["cost"]["total"] == pytest.approx(table)
    assert run["spend"] == {"usd": pytest.approx(table), "simulated": True}
    if host in ONLY_ON:
        ONLY_ON[host](variant_dir, run)
