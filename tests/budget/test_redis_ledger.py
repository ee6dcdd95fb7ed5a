"""The Redis ledger against a real redis-server: atomic admissions and charges under one ceiling
stored on first use, holds that lapse when their process dies, spend that survives a restart,
and a Redis that cannot be used as one sentence naming its URL without the password."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading

import pytest

from pytest_skill_eval.budget import redis_ledger
from pytest_skill_eval.budget.ledger import LedgerError
from pytest_skill_eval.budget.ledger_choice import ledger_from
from pytest_skill_eval.budget.redis_ledger import (
    LedgerMismatchError,
    RedisLedger,
    check_url,
    safe_url,
)
from tests.support.processes import wait_for
from tests.support.redis_server import PASSWORD, RedisServer

# A child process that takes part in a race: THREADS clients, each admitting and charging $1
# until refused; prints how many subjects its clients were admitted for.
RACER = """
import sys, threading
from pytest_skill_eval.budget.redis_ledger import RedisLedger
url, key, ceiling, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
admitted = []
start = threading.Barrier(threads)
def race():
    ledger = RedisLedger(url, key, ceiling, 1.0)
    start.wait()
    while not ledger.exhausted():
        admitted.append(1)
        ledger.charge(1.0)
    ledger.close()
workers = [threading.Thread(target=race) for _ in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
print(len(admitted), flush=True)
"""

# A child that is admitted (holding $1 for a TTL of HOLD seconds), says so, and waits to be killed.
HOLDER = """
import sys, threading
from pytest_skill_eval.budget.redis_ledger import RedisLedger
ledger = RedisLedger(sys.argv[1], sys.argv[2], 1.0, 1.0, hold_ttl_s=float(sys.argv[3]))
assert not ledger.exhausted()
print(ledger.client, flush=True)
threading.Event().wait()
"""


@pytest.fixture
def key() -> str:
    return f"test-{secrets.token_hex(6)}"


@pytest.fixture
def env_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(redis_ledger.PASSWORD_ENV, PASSWORD)


def _ledger(
    server: RedisServer, key: str, ceiling: float, reserve: float | None = 1.0
) -> RedisLedger:
    return RedisLedger(server.url(), key, ceiling, reserve)


def test_admissions_hold_room_so_concurrent_clients_never_pass_the_ceiling(
    redis_server: RedisServer, key: str
) -> None:
    a, b, c, d = (_ledger(redis_server, key, 3.0) for _ in range(4))
    assert [a.exhausted(), b.exhausted(), c.exhausted()] == [False, False, False]
    assert d.exhausted() is True  # 0 spent + 3 held of 3: no room for a fourth subject
    for ledger in (a, b, c):
        ledger.charge(1.0)
    assert d.snapshot() == {"maxCost": 3.0, "spent": 3.0, "exhausted": True}
    assert d.holds() == {}


def test_a_charge_settles_the_hold_and_a_new_admission_replaces_it(
    redis_server: RedisServer, key: str
) -> None:
    ledger = _ledger(redis_server, key, 3.0)
    assert ledger.exhausted() is False
    assert ledger.exhausted() is False  # the same client asks again: one hold, not two
    assert ledger.holds() == {ledger.client: 1.0}
    ledger.charge(0.5)
    assert ledger.holds() == {}
    assert ledger.exhausted() is False
    ledger.close()
    assert ledger.holds() == {}
    assert _ledger(redis_server, key, 3.0).snapshot() == {
        "maxCost": 3.0,
        "spent": 0.5,
        "exhausted": False,
    }


def test_without_a_reserve_the_dearest_charge_so_far_is_held(
    redis_server: RedisServer, key: str
) -> None:
    a, b = (_ledger(redis_server, key, 2.5, None) for _ in range(2))
    assert a.exhausted() is False
    assert b.exhausted() is False  # nothing charged yet: nothing to hold
    a.charge(1.0)
    b.charge(1.0)
    assert a.exhausted() is True  # 2 spent + the dearest 1 would pass 2.5
    assert b.snapshot() == {"maxCost": 2.5, "spent": 2.0, "exhausted": True}


def test_a_subject_dearer_than_its_hold_is_charged_in_full(
    redis_server: RedisServer, key: str
) -> None:
    ledger = _ledger(redis_server, key, 2.0, 0.5)
    assert ledger.exhausted() is False
    ledger.charge(1.75)
    assert ledger.snapshot() == {"maxCost": 2.0, "spent": 1.75, "exhausted": False}
    assert ledger.exhausted() is True  # 1.75 + 0.5 held would pass 2
    assert ledger.snapshot() == {"maxCost": 2.0, "spent": 1.75, "exhausted": True}


def test_charges_add_up_without_float_drift(redis_server: RedisServer, key: str) -> None:
    ledger = _ledger(redis_server, key, 0.8, 0.0)
    for amount in (0.1, 0.7):  # 0.7999999999999999 unrounded: short of the ceiling
        assert ledger.exhausted() is False
        ledger.charge(amount)
    assert ledger.snapshot() == {"maxCost": 0.8, "spent": 0.8, "exhausted": True}


def test_the_ceiling_is_stored_on_first_use_and_another_one_is_refused(
    redis_server: RedisServer, key: str
) -> None:
    RedisLedger.open(redis_server.url(), key, 3.0, 1.0)
    with pytest.raises(LedgerMismatchError) as raised:
        RedisLedger.open(redis_server.url(), key, 5.0, 1.0)
    message = str(raised.value)
    assert message.startswith(f"the Redis ledger {key} at redis://127.0.0.1:")
    assert "holds a ceiling of 3 USD and a reserve of 1 USD; this run asks for 5 USD" in message
    assert "\n" not in message
    assert PASSWORD not in message
    # Another reserve is refused too, and so is an admission that asks for another ceiling.
    with pytest.raises(LedgerMismatchError, match="asks for 3 USD with a reserve of 2 USD"):
        RedisLedger.open(redis_server.url(), key, 3.0, 2.0)
    with pytest.raises(LedgerMismatchError):
        _ledger(redis_server, key, 4.0).exhausted()
    assert _ledger(redis_server, key, 3.0).snapshot()["spent"] == 0.0


def test_processes_and_threads_racing_admit_exactly_what_the_ceiling_holds(
    redis_server: RedisServer, key: str, env_password: None
) -> None:
    ceiling, processes, threads = 7, 3, 8
    children = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, redis_server.unix_url(), key, str(ceiling), str(threads)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    outputs = [child.communicate(timeout=300)[0] for child in children]
    assert [child.returncode for child in children] == [0] * processes, outputs
    assert sum(int(out) for out in outputs) == ceiling
    state = _ledger(redis_server, key, ceiling)
    assert state.snapshot() == {"maxCost": 7.0, "spent": 7.0, "exhausted": True}
    assert state.holds() == {}
    charges = redis_server.client().hget(f"skill-eval:ledger:{{{key}}}:state", "charges")
    assert charges == b"7"


def test_a_burst_of_64_simultaneous_admissions_is_never_refused_for_capacity(
    redis_server: RedisServer, key: str
) -> None:
    clients = [_ledger(redis_server, key, 64.0) for _ in range(64)]
    start = threading.Barrier(64)
    answers: list[object] = []

    def admit(ledger: RedisLedger) -> None:
        start.wait()
        try:
            answers.append(ledger.exhausted())
        except LedgerError as error:
            answers.append(error)

    threads = [threading.Thread(target=admit, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [False] * 64  # every one admitted: none reset, none refused
    assert len(clients[0].holds()) == 64
    for ledger in clients:
        ledger.close()
    assert clients[0].holds() == {}


def test_the_hold_of_a_killed_process_lapses_and_a_live_one_is_kept(
    redis_server: RedisServer, key: str, env_password: None
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, redis_server.unix_url(), key, "1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        client = holder.stdout.readline().strip()
        other = _ledger(redis_server, key, 1.0)
        deadlines = f"skill-eval:ledger:{{{key}}}:ttl"
        first = redis_server.client().zscore(deadlines, client)
        assert first is not None
        # While it lives, its heartbeat pushes the deadline back.
        wait_for(
            lambda: (redis_server.client().zscore(deadlines, client) or 0) > first,
            "the heartbeat to push the hold's deadline back",
        )
        assert other.holds() == {client: 1.0}
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=60)

        wait_for(lambda: client not in other.holds(), "the killed process's hold to lapse")
        assert other.exhausted() is False  # the room it held is free again
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=60)


def test_spend_survives_a_restart_of_redis_with_persistence(
    own_redis_server: RedisServer, key: str
) -> None:
    ledger = _ledger(own_redis_server, key, 3.0)
    assert ledger.exhausted() is False
    ledger.charge(1.25)
    own_redis_server.stop()
    own_redis_server.start()
    assert ledger.snapshot() == {"maxCost": 3.0, "spent": 1.25, "exhausted": False}
    assert ledger.exhausted() is False
    ledger.charge(1.0)
    assert _ledger(own_redis_server, key, 3.0).snapshot()["spent"] == 2.25


def test_a_stopped_redis_is_one_sentence_naming_the_url_without_its_password(
    own_redis_server: RedisServer, key: str
) -> None:
    ledger = _ledger(own_redis_server, key, 3.0)
    assert ledger.exhausted() is False
    ledger.charge(1.0)
    own_redis_server.stop()
    for attempt in (ledger.exhausted, lambda: ledger.charge(1.0)):
        with pytest.raises(LedgerError) as raised:
            attempt()
        message = str(raised.value)
        assert message.startswith(
            f"the Redis ledger at redis://127.0.0.1:{own_redis_server.port}/0 cannot be reached"
        )
        assert message.endswith("no subject starts without it")
        assert "\n" not in message
        assert PASSWORD not in message
    # The last state it saw stands in for the snapshot.
    assert ledger.snapshot() == {"maxCost": 3.0, "spent": 1.0, "exhausted": False}


@pytest.mark.parametrize("given", ["wrong", "none"])
def test_a_refused_password_is_one_sentence_without_the_password(
    redis_server: RedisServer, key: str, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.delenv(redis_ledger.PASSWORD_ENV, raising=False)
    url = redis_server.url(password=False)
    if given == "wrong":
        url = url.replace("redis://", "redis://:not-the-password@")
    with pytest.raises(LedgerError) as raised:
        RedisLedger(url, key, 3.0).exhausted()
    message = str(raised.value)
    assert message.startswith(
        f"the Redis ledger at redis://127.0.0.1:{redis_server.port}/0 refused this run"
    )
    assert "not-the-password" not in message
    assert "\n" not in message
    # Nothing was admitted, nothing stored.
    assert redis_server.client().exists(f"skill-eval:ledger:{{{key}}}:state") == 0


def test_the_password_comes_from_the_environment_and_is_never_handed_over(
    redis_server: RedisServer, key: str, env_password: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = RedisLedger.open(redis_server.url(password=False), key, 3.0, 1.0)
    handed = ledger.handover()
    assert PASSWORD not in repr(handed)
    assert handed == {
        "kind": "redis",
        "url": f"redis://127.0.0.1:{redis_server.port}/0",
        "key": key,
        "maxCost": 3.0,
        "reserve": 1.0,
    }
    assert ledger_from(handed).exhausted() is False
    # A worker given the URL with its password on its own command line uses that.
    monkeypatch.delenv(redis_ledger.PASSWORD_ENV)
    assert ledger_from(handed, redis_server.url()).exhausted() is False


def test_a_redis_that_never_answers_times_out(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setattr(redis_ledger, "TIMEOUT_S", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # accepts connections, never answers
        port = silent.getsockname()[1]
        url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
        with pytest.raises(LedgerError) as raised:
            RedisLedger(url, key, 3.0).exhausted()
    message = str(raised.value)
    assert message == (
        f"the Redis ledger at redis://127.0.0.1:{port}/0 did not answer within 0.5 s; no "
        "subject starts without it"
    )


def test_safe_url_drops_every_password() -> None:
    assert safe_url("redis://user:pw@h:6379/2") == "redis://user@h:6379/2"
    assert safe_url("rediss://:pw@h:6380/0") == "rediss://h:6380/0"
    assert safe_url("unix://:pw@/run/r.sock?db=1&password=pw") == "unix:///run/r.sock?db=1"
    assert safe_url("redis://h/0") == "redis://h/0"


def test_a_url_that_is_not_redis_says_what_to_use(monkeypatch: pytest.MonkeyPatch) -> None:
    replaced = check_url("http://10.0.0.5:8765")
    assert replaced is not None
    assert "the ledger service (`skill-eval ledger serve`) was replaced by Redis" in replaced
    assert "SKILL_EVAL_LEDGER_PASSWORD" in replaced
    assert "is not a Redis URL" in (check_url("ftp://h") or "")
    assert check_url("redis://h:6379/0") is None
    assert check_url("redis://:pw@h:port/0") == (
        "--skill-eval-ledger-url redis://h:port/0 is not a usable Redis URL: Port could not be "
        "cast to integer value as 'port'"
    )
    for name in ("redis", "redis.connection"):  # the redis extra not installed
        monkeypatch.setitem(sys.modules, name, None)
    missing = check_url("redis://h:6379/0")
    assert missing is not None
    assert "pip install 'pytest-skill-eval[redis]'" in missing
