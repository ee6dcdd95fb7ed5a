"""One spend ceiling for shards on several machines, kept in Redis.

`RedisLedger` has the file ledger's interface (`budget.Ledger`). Its state lives under keys named
by the ledger's id (the plan's id, else the invocation's own id), and admission, charge and
release are each one server-side Lua script, so every decision is atomic across shards:

- before a subject starts its process asks to be admitted; the script holds room for that
  subject's estimated cost (the reserve, else the dearest charge so far) and refuses once spend
  plus what is held would pass the ceiling, so two shards can never both start on the last
  dollar. A refusal is final, as reaching the ceiling is;
- a charge settles the process's hold with the real spend (a subject that costs more than its
  hold is still charged in full, as on one machine);
- a hold carries a deadline on the Redis clock, pushed back by a heartbeat thread while this
  process lives, so the hold of a process that dies lapses instead of blocking the ceiling;
- every amount read from Redis (ceiling, spend, dearest charge, reserve, each hold) is checked
  before any is used: one that is not a finite number zero or more (`nan`, `inf`, `-1`, text)
  refuses the call, naming the key and field, so no comparison with it can admit a subject. A
  charge that is not such an amount marks the ledger exhausted.

The ceiling (and the reserve) is stored with the ledger on first use; a process asking for
another one is refused. Every call is bounded by connect and socket timeouts and is never retried
(a charge must not count twice); a Redis that cannot be used raises `LedgerError` naming its URL
without the password (`ledger_url`), and the subject that asked is recorded as an
infrastructure failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
from typing import TYPE_CHECKING, Any

from ..errors import SkillEvalError
from ..evidence.records import Budget
from .ledger import Handover, LedgerError, amount_of
from .ledger_url import PASSWORD_ENV, check_url, has_password, safe_url, scrub, secrets_of

__all__ = [
    "PASSWORD_ENV",
    "LedgerMismatchError",
    "RedisLedger",
    "check_url",
    "safe_url",
]

if TYPE_CHECKING:
    import redis


# Every call is bounded: a hung Redis fails a subject, never the run.
TIMEOUT_S = 10.0
# How long a hold outlives the last heartbeat of the process that holds it.
HOLD_TTL_S = 60.0
# Ledger keys outlive their last write by this long, then Redis drops them.
KEEP_S = 30 * 24 * 3600

# Shared by every script: KEYS are the state hash, the holds hash (client → amount held) and the
# holds' deadlines (a sorted set, client → Redis time in ms); holds past their deadline go first.
_PRELUDE = """
local state, holds, deadlines = KEYS[1], KEYS[2], KEYS[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lapsed = redis.call('ZRANGEBYSCORE', deadlines, '-inf', now)
for _, c in ipairs(lapsed) do redis.call('HDEL', holds, c) end
redis.call('ZREMRANGEBYSCORE', deadlines, '-inf', now)
local function round(x) return math.floor(x * 1e10 + 0.5) / 1e10 end
local function num(x) return string.format('%.17g', x) end
local function answer(tag)
  local s = redis.call('HMGET', state, 'maxCost', 'spent', 'exhausted', 'reserve')
  return {tag, s[1] or '', s[2] or '0', s[3] or '0', s[4] or ''}
end
local function keep(ms)
  for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, ms) end
end
-- An amount of USD: a finite number zero or more, else nil. tonumber takes 'nan', 'inf' and
-- '-inf' (and every comparison with nan is false), so each is refused here, never compared.
local function amount(x)
  local n = tonumber(x)
  if n == nil or n ~= n or n == math.huge or n < 0 then return nil end
  return n
end
-- ARGV: client, ceiling, reserve ('' for none), keep ms, then the script's own.
local client, ceiling, reserve, keep_ms = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local stored = redis.call('HGET', state, 'maxCost')
if not stored then
  redis.call('HSET', state, 'maxCost', ceiling, 'reserve', reserve, 'spent', '0',
             'charges', '0', 'dearest', '0', 'exhausted', '0')
end
-- Every stored amount is checked before any is used: one that is not refuses the call.
local s = redis.call('HMGET', state, 'maxCost', 'spent', 'dearest', 'reserve')
for i, field in ipairs({'maxCost', 'spent', 'dearest', 'reserve'}) do
  if not (field == 'reserve' and (s[i] == false or s[i] == '')) and not amount(s[i]) then
    return {'corrupt', state, field, s[i] or '(missing)', ''}
  end
end
local h = redis.call('HGETALL', holds)
for i = 1, #h, 2 do
  if not amount(h[i + 1]) then return {'corrupt', holds, h[i], h[i + 1], ''} end
end
if tonumber(s[1]) ~= tonumber(ceiling) or (s[4] or '') ~= reserve then
  return answer('mismatch')
end
"""

_ADMIT = (
    _PRELUDE
    + """
redis.call('HDEL', holds, client)
redis.call('ZREM', deadlines, client)
if redis.call('HGET', state, 'exhausted') == '1' then keep(keep_ms) return answer('refused') end
local spent = tonumber(redis.call('HGET', state, 'spent'))
local estimate = tonumber(redis.call('HGET', state, 'dearest'))
if reserve ~= '' then estimate = tonumber(reserve) end
local held = 0
for _, v in ipairs(redis.call('HVALS', holds)) do held = held + tonumber(v) end
if round(spent + held + estimate) > tonumber(ceiling) then
  redis.call('HSET', state, 'exhausted', '1')
  keep(keep_ms)
  return answer('refused')
end
redis.call('HSET', holds, client, num(estimate))
redis.call('ZADD', deadlines, now + tonumber(ARGV[5]), client)
keep(keep_ms)
return answer('admitted')
"""
)

_CHARGE = (
    _PRELUDE
    + """
-- The count of charges must take one more before anything is written: a script is not undone.
local count = redis.pcall('HINCRBY', state, 'charges', 0)
if type(count) == 'table' and count.err then
  return {'corrupt', state, 'charges', redis.call('HGET', state, 'charges') or '', ''}
end
redis.call('HDEL', holds, client)
redis.call('ZREM', deadlines, client)
local paid = amount(ARGV[5])
if not paid then
  -- What the subject cost is not known: no sum can be trusted, no subject starts after it.
  redis.call('HSET', state, 'exhausted', '1')
  keep(keep_ms)
  return {'unpriced', ARGV[5], '', '', ''}
end
local spent = round(tonumber(redis.call('HGET', state, 'spent')) + paid)
redis.call('HSET', state, 'spent', num(spent))
redis.call('HINCRBY', state, 'charges', 1)
if paid > tonumber(redis.call('HGET', state, 'dearest')) then
  redis.call('HSET', state, 'dearest', num(paid))
end
if spent >= tonumber(ceiling) then redis.call('HSET', state, 'exhausted', '1') end
keep(keep_ms)
return answer('charged')
"""
)

_RELEASE = (
    _PRELUDE
    + """
redis.call('HDEL', holds, client)
redis.call('ZREM', deadlines, client)
keep(keep_ms)
return answer('released')
"""
)

# The heartbeat: push back this client's deadline, if it still holds room.
_REFRESH = (
    _PRELUDE
    + """
if redis.call('HEXISTS', holds, client) == 1 then
  redis.call('ZADD', deadlines, 'XX', now + tonumber(ARGV[5]), client)
end
keep(keep_ms)
return answer('refreshed')
"""
)


class LedgerMismatchError(LedgerError, SkillEvalError):
    """The ledger already holds another ceiling (or reserve) than this process asks for."""


class RedisLedger:
    """The ledger `key` in the Redis at `url` (the password from the URL, else PASSWORD_ENV).

    Each instance is one client of the ledger: it holds room for at most one subject at a time,
    and a new admission replaces its hold. `url` as kept here is the URL without its password.
    """

    def __init__(
        self,
        url: str,
        key: str,
        max_cost: float,
        reserve: float | None = None,
        *,
        hold_ttl_s: float = HOLD_TTL_S,
    ) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url = safe_url(url)
        self.key = key
        ceiling, held = amount_of(max_cost), None if reserve is None else amount_of(reserve)
        if not ceiling or (reserve is not None and held is None):
            raise LedgerError(
                f"the Redis ledger {key} at {self.url} needs a ceiling greater than zero and a "
                f"reserve zero or more in USD, not {max_cost!r} and {reserve!r}"
            )
        self.max_cost, self.reserve = ceiling, held
        self.hold_ttl_s = hold_ttl_s
        self.client = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.last: dict[str, Any] = {}
        password = None if has_password(url) else os.environ.get(PASSWORD_ENV) or None
        # What no message may hold: a client library's message may name the URL, or its host.
        self._secrets = secrets_of(url) + ([password] if password else [])
        extra: dict[str, Any] = {"password": password} if password else {}
        problem = check_url(url)
        if problem is not None:
            raise LedgerError(problem)
        try:
            self._redis: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=TIMEOUT_S,
                socket_connect_timeout=TIMEOUT_S,
                retry=Retry(NoBackoff(), 0),
                **extra,
            )
        except (ValueError, TypeError, IndexError) as error:
            reason = scrub(str(error), self._secrets)
            raise LedgerError(f"the Redis ledger URL {self.url} is not usable: {reason}") from None
        self._keys = [f"skill-eval:ledger:{{{key}}}:{part}" for part in ("state", "holds", "ttl")]
        self._scripts = {
            name: self._redis.register_script(lua)
            for name, lua in (
                ("admit", _ADMIT),
                ("charge", _CHARGE),
                ("release", _RELEASE),
                ("refresh", _REFRESH),
            )
        }
        self._holding = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    @classmethod
    def open(cls, url: str, key: str, max_cost: float, reserve: float | None = None) -> RedisLedger:
        """The ledger, its ceiling stored on first use; another ceiling already stored is
        refused (`LedgerMismatchError`). A Redis that cannot be reached yet is not an error
        here: each subject that asks later fails with the reason."""
        ledger = cls(url, key, max_cost, reserve)
        try:
            ledger._call("release")
        except LedgerMismatchError:
            raise
        except LedgerError:
            pass  # unreachable or refusing now: every subject that asks says so
        return ledger

    def exhausted(self) -> bool:
        """Ask to be admitted: hold room for one subject, or be refused (no room is left)."""
        ttl_ms = max(1, int(self.hold_ttl_s * 1000))
        admitted = self._call("admit", ttl_ms) == "admitted"
        with self._lock:
            self._holding = admitted
            if admitted and self._heartbeat is None:
                self._heartbeat = threading.Thread(
                    target=self._beat, name="ledger-heartbeat", daemon=True
                )
                self._heartbeat.start()
        return not admitted

    def charge(self, amount: float) -> None:
        """Settle this client's hold with what its subject spent."""
        self._call("charge", repr(float(amount)))
        with self._lock:
            self._holding = False

    def snapshot(self) -> Budget:
        """`{maxCost, spent, exhausted}` from Redis (the last state seen, if it is gone)."""
        try:
            values = self._redis.hmget(self._keys[0], ["spent", "exhausted"])
        except Exception as error:
            if not _redis_error(error):
                raise
        else:
            spent, exhausted = (_text(v) for v in values)
            if amount_of(spent) is not None:
                self.last.update({"spent": spent, "exhausted": exhausted})
        return {
            "maxCost": self.max_cost,
            "spent": round(amount_of(self.last.get("spent")) or 0.0, 10),
            "exhausted": self.last.get("exhausted") == "1",
        }

    def handover(self) -> Handover:
        """Where the ledger is, without the password (a worker takes it from its own settings
        or environment)."""
        return {
            "kind": "redis",
            "url": self.url,
            "key": self.key,
            "maxCost": self.max_cost,
            "reserve": self.reserve,
        }

    def close(self) -> None:
        """Give back this client's hold and stop its heartbeat (best effort)."""
        self._stop.set()
        with self._lock:
            holding, self._holding = self._holding, False
        if holding:
            with contextlib.suppress(LedgerError):  # else the hold lapses on its own
                self._call("release")
        self._redis.close()

    def holds(self) -> dict[str, float]:
        """Room held now, per client (holds past their deadline dropped first)."""
        self._call("refresh", max(1, int(self.hold_ttl_s * 1000)))
        held = self._redis.hgetall(self._keys[1])
        return {_text(k): float(_text(v)) for k, v in held.items()}

    def _beat(self) -> None:
        while not self._stop.wait(self.hold_ttl_s / 3):
            with self._lock:
                holding = self._holding
            if holding:
                with contextlib.suppress(LedgerError):  # the next admission or charge says so
                    self._call("refresh", max(1, int(self.hold_ttl_s * 1000)))

    def _call(self, name: str, *extra: Any) -> str:
        reserve = "" if self.reserve is None else repr(self.reserve)
        args = [self.client, repr(self.max_cost), reserve, KEEP_S * 1000, *extra]
        try:
            raw = self._scripts[name](keys=self._keys, args=args)
        except Exception as error:
            if not _redis_error(error):
                raise
            raise LedgerError(self._why(error)) from None
        tag, max_cost, spent, exhausted, reserve_stored = (_text(v) for v in raw)
        if tag == "corrupt":
            raise LedgerError(
                f"the Redis ledger {self.key} at {self.url} holds {_shown(exhausted)} in "
                f"{max_cost} field {_shown(spent)}, not a finite amount of USD zero or more; no "
                "subject starts until it is repaired (or the ledger's keys are deleted)"
            )
        if tag == "unpriced":
            with self._lock:
                self._holding = False
            raise LedgerError(
                f"a subject's spend of {max_cost} USD is not a finite amount zero or more: the "
                f"Redis ledger {self.key} at {self.url} is marked exhausted, no further subject "
                "starts"
            )
        if tag == "mismatch":
            held = f"a ceiling of {float(max_cost):g} USD"
            if reserve_stored:
                held += f" and a reserve of {float(reserve_stored):g} USD"
            asked = f"{self.max_cost:g} USD" + (
                f" with a reserve of {self.reserve:g} USD" if self.reserve is not None else ""
            )
            raise LedgerMismatchError(
                f"the Redis ledger {self.key} at {self.url} holds {held}; this run asks for "
                f"{asked}: give every shard and worker the same --skill-eval-max-cost and "
                "--skill-eval-reserve"
            )
        if amount_of(spent) is not None:
            self.last = {"spent": spent, "exhausted": exhausted}
        return tag

    def _why(self, error: Exception) -> str:
        import redis.exceptions as failures

        reason = scrub(str(error), self._secrets) or type(error).__name__
        if isinstance(error, failures.AuthenticationError) or "NOPERM" in reason:
            told = "a wrong password" if "WRONGPASS" in reason or "invalid" in reason else reason
            return (
                f"the Redis ledger at {self.url} refused this run ({told}); set the password "
                f"in {PASSWORD_ENV} or the URL"
            )
        if isinstance(error, failures.TimeoutError):
            return (
                f"the Redis ledger at {self.url} did not answer within {TIMEOUT_S:g} s; no "
                "subject starts without it"
            )
        if isinstance(error, failures.ConnectionError | OSError):
            return (
                f"the Redis ledger at {self.url} cannot be reached ({reason}); no subject "
                "starts without it"
            )
        return f"the Redis ledger at {self.url} answered an error ({reason})"


def _shown(text: str) -> str:
    """A text from Redis in a message: quoted, one line, at most 40 characters."""
    quoted = json.dumps(text)
    return quoted if len(quoted) <= 40 else quoted[:39] + "…"


def _text(value: Any) -> str:
    """A Redis reply as text ('' for nil)."""
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


def _redis_error(error: Exception) -> bool:
    import redis.exceptions as failures

    return isinstance(error, failures.RedisError | OSError)
