"""The Redis ledger fails closed on amounts that are not amounts, against a real redis-server.

Lua's `tonumber` reads `nan`, `inf` and `-inf`, and every comparison with nan is false, so a
spend, hold or ceiling of `nan` once admitted every subject. Now any amount read from Redis that
is not a finite number zero or more refuses admission with one line naming its key and field
(never the password), and a charge that is not such an amount marks the ledger exhausted.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from pathlib import Path

import pytest

from pytest_skill_eval.budget.ledger import FileLedger, LedgerError
from pytest_skill_eval.budget.redis_ledger import RedisLedger
from tests.support.redis_server import PASSWORD, RedisServer

BAD = ["nan", "inf", "-inf", "-1", "abc", "1e400", "-nan", ""]
# Where each amount lives: (key suffix, field); a hold's field is the client holding it.
PLACES = [
    ("state", "spent"),
    ("state", "dearest"),
    ("state", "maxCost"),
    ("state", "reserve"),
    ("holds", "another-client"),
]


@pytest.fixture
def key() -> str:
    return f"test-{secrets.token_hex(6)}"


def _keys(key: str) -> dict[str, str]:
    return {part: f"skill-eval:ledger:{{{key}}}:{part}" for part in ("state", "holds", "ttl")}


def _poison(server: RedisServer, key: str, part: str, field: str, value: str) -> None:
    """Write `value` where the ledger keeps that amount, as a broken or hostile writer would."""
    client = server.client()
    client.hset(_keys(key)[part], field, value)
    if part == "holds":  # a hold lives while its deadline is in the future
        client.zadd(_keys(key)["ttl"], {field: 10**15})


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(("part", "field"), PLACES)
def test_an_amount_that_is_not_one_refuses_admission_naming_its_key(
    redis_server: RedisServer, key: str, part: str, field: str, value: str
) -> None:
    # A $1 ceiling, a $1 reserve, $0.50 already spent: one more subject may start, then none.
    ledger = RedisLedger.open(redis_server.url(), key, 1.0, None if field == "dearest" else 1.0)
    if field == "reserve" and value == "":
        pytest.skip("an empty reserve is no reserve: a mismatch, tested with the ceiling")
    _poison(redis_server, key, part, field, value)
    with pytest.raises(LedgerError) as raised:
        ledger.exhausted()
    message = str(raised.value)
    assert "\n" not in message
    assert PASSWORD not in message
    assert message.startswith(f"the Redis ledger {key} at redis://127.0.0.1:")
    assert f'in {_keys(key)[part]} field "{field}"' in message
    assert "not a finite amount of USD zero or more; no subject starts" in message
    # Nothing was held for it, and the next client is refused the same way.
    assert redis_server.client().hget(_keys(key)["holds"], ledger.client) is None
    with pytest.raises(LedgerError, match="not a finite amount"):
        RedisLedger(redis_server.url(), key, 1.0, 1.0).exhausted()


def test_a_spend_of_nan_no_longer_admits_past_the_ceiling(
    redis_server: RedisServer, key: str
) -> None:
    # The attack: a $1 ceiling, each subject $1; with spent = nan every admission went through
    # (nan + 1 > 1 is false) and every charge left it nan (nan >= 1 is false): $3 paid.
    RedisLedger.open(redis_server.url(), key, 1.0, 1.0)
    redis_server.client().hset(_keys(key)["state"], "spent", "nan")
    paid = 0.0
    for _ in range(3):
        shard = RedisLedger(redis_server.url(), key, 1.0, 1.0)
        with contextlib.suppress(LedgerError):  # refused: as good as exhausted
            if not shard.exhausted():
                shard.charge(1.0)
                paid += 1.0
    assert paid == 0.0


@pytest.mark.parametrize("amount", [math.nan, math.inf, -math.inf, -1.0])
def test_a_charge_that_is_not_an_amount_exhausts_the_ledger(
    redis_server: RedisServer, key: str, amount: float
) -> None:
    ledger = RedisLedger.open(redis_server.url(), key, 10.0, 1.0)
    assert ledger.exhausted() is False
    with pytest.raises(LedgerError) as raised:
        ledger.charge(amount)
    message = str(raised.value)
    assert message == (
        f"a subject's spend of {amount!r} USD is not a finite amount zero or more: the Redis "
        f"ledger {key} at redis://127.0.0.1:{redis_server.port}/0 is marked exhausted, no "
        "further subject starts"
    )
    state = redis_server.client().hgetall(_keys(key)["state"])
    assert state[b"spent"] == b"0"  # not added
    assert state[b"exhausted"] == b"1"
    assert redis_server.client().hlen(_keys(key)["holds"]) == 0  # its hold is given back
    assert RedisLedger(redis_server.url(), key, 10.0, 1.0).exhausted() is True
    assert ledger.snapshot() == {"maxCost": 10.0, "spent": 0.0, "exhausted": True}


@pytest.mark.parametrize("value", ["abc", "1.5", "nan"])
def test_a_count_of_charges_that_is_not_one_refuses_the_charge_before_anything_changes(
    redis_server: RedisServer, key: str, value: str
) -> None:
    ledger = RedisLedger.open(redis_server.url(), key, 10.0, 1.0)
    assert ledger.exhausted() is False
    redis_server.client().hset(_keys(key)["state"], "charges", value)
    with pytest.raises(LedgerError) as raised:
        ledger.charge(2.0)
    assert f'in {_keys(key)["state"]} field "charges", not a finite amount' in str(raised.value)
    state = redis_server.client().hgetall(_keys(key)["state"])
    assert state[b"spent"] == b"0"
    assert redis_server.client().hget(_keys(key)["holds"], ledger.client) == b"1"  # still held


def test_a_snapshot_of_a_spend_that_is_not_an_amount_keeps_the_last_one_seen(
    redis_server: RedisServer, key: str
) -> None:
    ledger = RedisLedger.open(redis_server.url(), key, 10.0, 1.0)
    assert ledger.exhausted() is False
    ledger.charge(2.5)
    for value in ("abc", "nan", "-1"):
        redis_server.client().hset(_keys(key)["state"], "spent", value)
        assert ledger.snapshot() == {"maxCost": 10.0, "spent": 2.5, "exhausted": False}


@pytest.mark.parametrize(("ceiling", "reserve"), [(math.nan, 1.0), (math.inf, None), (1.0, -1.0)])
def test_a_ceiling_or_reserve_that_is_not_an_amount_is_refused_before_redis_is_asked(
    redis_server: RedisServer, key: str, ceiling: float, reserve: float | None
) -> None:
    with pytest.raises(LedgerError, match="needs a ceiling greater than zero"):
        RedisLedger(redis_server.url(), key, ceiling, reserve)
    assert redis_server.client().exists(_keys(key)["state"]) == 0


@pytest.mark.parametrize("amount", [math.nan, math.inf, -1.0])
def test_the_file_ledger_is_exhausted_by_a_charge_that_is_not_an_amount(
    tmp_path: Path, amount: float
) -> None:
    ledger = FileLedger.create(tmp_path / "ledger.json", 1.0)
    with pytest.raises(LedgerError, match="not finite amounts zero or more; it is marked"):
        ledger.charge(amount)
    assert ledger.exhausted() is True
    assert ledger.snapshot()["spent"] == 0.0
