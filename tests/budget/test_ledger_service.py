"""The ledger service: atomic admissions and charges under one ceiling, guarded by a token; a
service that is dead or refuses is one clear `LedgerError`, never a traceback or an overspend."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skill_eval.budget import LedgerError, ServiceLedger, ledger_from
from pytest_skill_eval.cli import main as skill_eval
from pytest_skill_eval.scale.ledger import LedgerState, make_server

TOKEN = "s3cret-token"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, LedgerState]]:
    state = LedgerState(3.0, reserve=1.0, state_file=tmp_path / "state.json")
    server = make_server("127.0.0.1", 0, state, TOKEN)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def test_admissions_hold_room_so_concurrent_subjects_never_pass_the_ceiling(
    service: tuple[str, LedgerState],
) -> None:
    url, _ = service
    a, b, c = (ServiceLedger(url, TOKEN) for _ in range(3))
    assert a.exhausted() is False
    assert b.exhausted() is False
    assert c.exhausted() is False  # 0 spent + 3 held of 3: the last subject that fits
    d = ServiceLedger(url, TOKEN)
    assert d.exhausted() is True  # no room left: refused before it could start
    for ledger in (a, b, c):
        ledger.charge(1.0)
    assert d.snapshot() == {"maxCost": 3.0, "spent": 3.0, "exhausted": True}


def test_a_charge_settles_the_hold_and_a_new_admission_replaces_it(
    service: tuple[str, LedgerState],
) -> None:
    url, state = service
    ledger = ServiceLedger(url, TOKEN)
    assert ledger.exhausted() is False
    assert ledger.exhausted() is False  # the same process asks again: one hold, not two
    assert state.state["holds"] == {ledger.client: 1.0}
    ledger.charge(0.5)
    assert state.state["holds"] == {}
    assert ledger.exhausted() is False
    ledger.close()
    assert state.state["holds"] == {}
    assert ledger.snapshot() == {"maxCost": 3.0, "spent": 0.5, "exhausted": False}


def test_without_a_reserve_the_dearest_charge_so_far_is_held(tmp_path: Path) -> None:
    state = LedgerState(2.5)
    assert state.admit("a")
    assert state.admit("b")
    state.charge("a", 1.0)
    state.charge("b", 1.0)
    assert state.admit("a") is False  # 2 spent + an estimated 1 would pass 2.5
    assert state.public() == {"maxCost": 2.5, "spent": 2.0, "exhausted": True}


def test_the_state_file_keeps_spend_across_a_restart_and_never_the_token(
    service: tuple[str, LedgerState], tmp_path: Path
) -> None:
    url, _ = service
    ledger = ServiceLedger(url, TOKEN)
    ledger.exhausted()
    ledger.charge(1.25)
    saved = (tmp_path / "state.json").read_text()
    assert TOKEN not in saved
    assert json.loads(saved)["spent"] == 1.25
    again = LedgerState(3.0, state_file=tmp_path / "state.json")
    assert again.public() == {"maxCost": 3.0, "spent": 1.25, "exhausted": False}


def test_a_wrong_or_missing_token_is_refused(
    service: tuple[str, LedgerState], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, state = service
    with pytest.raises(LedgerError, match=r"refused this run: a wrong token$"):
        ServiceLedger(url, "not-it").exhausted()
    monkeypatch.delenv("SKILL_EVAL_LEDGER_TOKEN", raising=False)
    with pytest.raises(LedgerError, match=r"no token \(SKILL_EVAL_LEDGER_TOKEN is not set\)"):
        ServiceLedger(url).charge(1.0)
    assert state.public()["spent"] == 0.0
    assert state.state["holds"] == {}


def test_the_token_comes_from_the_environment(
    service: tuple[str, LedgerState], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = service
    monkeypatch.setenv("SKILL_EVAL_LEDGER_TOKEN", TOKEN)
    handed = ServiceLedger(url).handover()
    assert handed == {"kind": "service", "url": url}  # the token is never handed over
    assert ledger_from(handed).exhausted() is False


def test_a_dead_service_is_one_sentence_and_snapshot_keeps_the_last_state() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ledger = ServiceLedger(f"http://127.0.0.1:{port}", TOKEN)
    with pytest.raises(LedgerError) as raised:
        ledger.exhausted()
    message = str(raised.value)
    assert message.startswith(f"the ledger service at http://127.0.0.1:{port} cannot be reached")
    assert message.endswith("no subject starts without it")
    assert "\n" not in message
    assert ledger.snapshot() == {"maxCost": 0.0, "spent": 0.0, "exhausted": False}


def test_a_service_that_never_answers_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_skill_eval.budget.TIMEOUT_S", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts connections, never answers
        port = silent.getsockname()[1]
        with pytest.raises(LedgerError, match=r"cannot be reached \(timed out"):
            ServiceLedger(f"http://127.0.0.1:{port}", TOKEN).exhausted()


def test_bad_requests_are_refused_without_changing_the_ledger(
    service: tuple[str, LedgerState],
) -> None:
    url, state = service
    ledger = ServiceLedger(url, TOKEN)
    with pytest.raises(LedgerError, match="answered HTTP 400 to charge"):
        ledger._call("charge", {"client": "x", "amount": -1})
    with pytest.raises(LedgerError, match="answered HTTP 404 to steal"):
        ledger._call("steal", {"client": "x"})
    assert state.public()["spent"] == 0.0


def test_serve_refuses_to_start_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SKILL_EVAL_LEDGER_TOKEN", raising=False)
    assert skill_eval(["ledger", "serve", "--max-cost", "3", "--port", "0"]) != 0
    assert "set SKILL_EVAL_LEDGER_TOKEN" in capsys.readouterr().err
