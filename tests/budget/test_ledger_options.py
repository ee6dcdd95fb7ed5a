"""The Redis ledger's options: what replaced the ledger service, the ceiling it needs and the
reserve it holds are each one line before anything runs, never a traceback or a password."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.roots import unscripted_root
from tests.support.runs import refusal, run

SECRET = "opt-pw-77d1"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return unscripted_root(tmp_path / "root")


def test_an_http_ledger_url_says_redis_replaced_the_ledger_service(
    pytester: pytest.Pytester, root: Path
) -> None:
    url = f"http://ci:{SECRET}@10.0.0.5:8765"
    line = refusal(
        run(pytester, root, "--skill-eval-ledger-url", url, "--skill-eval-max-cost", "5"), SECRET
    )
    assert line == (
        "ERROR: --skill-eval-ledger-url http://ci@10.0.0.5:8765: the ledger service "
        "(`skill-eval ledger serve`) was replaced by Redis; pass redis://[user@]host:port/db "
        "(rediss:// for TLS) with the password in SKILL_EVAL_LEDGER_PASSWORD (see "
        "docs/scale-out.md)"
    )


def test_a_redis_ledger_needs_a_ceiling(pytester: pytest.Pytester, root: Path) -> None:
    url = f"redis://:{SECRET}@127.0.0.1:6379/0"
    line = refusal(run(pytester, root, "--skill-eval-ledger-url", url), SECRET)
    assert line.startswith("ERROR: --skill-eval-ledger-url needs a ceiling: give ")


def test_a_reserve_needs_a_shared_ledger(pytester: pytest.Pytester, root: Path) -> None:
    line = refusal(run(pytester, root, "--skill-eval-reserve", "1"), SECRET)
    assert line.startswith("ERROR: --skill-eval-reserve holds room in a shared ledger")


def test_a_negative_reserve_is_refused(pytester: pytest.Pytester, root: Path) -> None:
    pytester.makeini("[pytest]\nskill_eval_reserve = -2\n")
    line = refusal(run(pytester, root), SECRET)
    assert line == (
        'ERROR: --skill-eval-reserve "-2" is not accepted; use a number of USD zero or more, '
        "such as 2.5"
    )
