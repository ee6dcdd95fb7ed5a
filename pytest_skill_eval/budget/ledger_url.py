"""The Redis ledger's URL: checked before anything runs, and never shown with its secret.

The user part of a URL is found on the raw text, not through a URL parser: a password with an
unencoded `/`, `?`, `#`, `[` or `]` ends a parser's idea of the host early, so a parser would
show the password's first part as the host, port or path. Everything before the last `@` of the
part after `scheme://` is the user part; only a plain user name of it is ever shown. A URL whose
user part holds such a character is refused (percent-encode it, or give the password in the
environment), so no client library parses it, and messages of a client library are shown
without the user part's text.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit

PASSWORD_ENV = "SKILL_EVAL_LEDGER_PASSWORD"
SCHEMES = ("redis", "rediss", "unix")
EXTRA = "pytest-skill-eval[redis]"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?://)?")
# A user name shown as it is: unreserved characters only (anything else may be a password's).
_PLAIN_USER = re.compile(r"[A-Za-z0-9._~-]+")
# What ends a URL parser's host part early when it stands unencoded in a password.
_BREAKS_HOST = frozenset("/?#[]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _parts(url: str) -> tuple[str, str | None, str]:
    """(`scheme://`, the user part or None, the rest) of `url`, read on the raw text."""
    found = _SCHEME.match(url)
    prefix = found.group(0) if found else ""
    rest = url[len(prefix) :]
    if "@" not in rest or rest.startswith("/"):
        return prefix, None, rest
    user, _, where = rest.rpartition("@")
    return prefix, user, where


def _without_password_query(rest: str) -> str:
    where, mark, query = rest.partition("?")
    if not mark:
        return rest
    kept = urlencode([(k, v) for k, v in parse_qsl(query) if k.lower() != "password"])
    return where + (f"?{kept}" if kept else "")


def safe_url(url: str) -> str:
    """`url` without its password (in the user part or a `password=` query): safe to print.

    Of the user part only a plain user name is kept (`…` stands for any other), and control
    characters become `?`, so the URL stays on one line."""
    prefix, user, rest = _parts(url)
    shown = prefix
    if user is not None:
        name, colon, _ = user.partition(":")
        if name and _PLAIN_USER.fullmatch(name):
            shown += f"{name}@"
        elif name or not colon:
            shown += "…@"
    shown += _without_password_query(rest)
    return _CONTROL.sub("?", shown)


def secrets_of(url: str) -> list[str]:
    """The texts of `url` no message may hold: its user part, the password in it and in a
    `password=` query (longest first)."""
    _, user, rest = _parts(url)
    found = set()
    if user:
        found.add(user)
        password = user.partition(":")[2]
        if password:
            found.add(password)
    query = rest.partition("?")[2]
    found.update(v for k, v in parse_qsl(query) if k.lower() == "password" and v)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    """`text` (a client library's message) on one line, without any of `secrets`."""
    flat = " ".join(text.split())
    for secret in sorted(secrets, key=len, reverse=True):
        flat = flat.replace(secret, "…")
    return flat


def check_url(url: str) -> str | None:
    """Why `url` cannot name a Redis ledger (one line, naming the fix), else None."""
    option = f"--skill-eval-ledger-url {safe_url(url)}"
    scheme = _parts(url)[0].partition(":")[0].lower()
    if scheme in ("http", "https"):
        return (
            f"{option}: the ledger service (`skill-eval ledger serve`) was replaced by Redis; "
            "pass redis://[user@]host:port/db (rediss:// for TLS) with the password in "
            f"{PASSWORD_ENV} (see docs/scale-out.md)"
        )
    if scheme not in SCHEMES:
        return (
            f"{option} is not a Redis URL: use redis://[user@]host:port/db, rediss://… for TLS, "
            "or unix:///path?db=0"
        )
    user = _parts(url)[1]
    if user is not None and _BREAKS_HOST & set(user):
        return (
            f"{option} is not a usable Redis URL: its user part holds / ? # [ or ] unencoded; "
            f"percent-encode them (%2F %3F %23 %5B %5D) or give the password in {PASSWORD_ENV}"
        )
    try:
        from redis.connection import parse_url
    except ImportError:
        return (
            f"--skill-eval-ledger-url needs the Redis client: pip install '{EXTRA}' "
            "(the redis extra)"
        )
    try:
        urlsplit(url)
        parse_url(url)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
    except (ValueError, TypeError, IndexError) as error:
        reason = scrub(str(error), secrets_of(url)) or type(error).__name__
        return f"{option} is not a usable Redis URL: {reason}"
    return None


def has_password(url: str) -> bool:
    """Whether `url` carries a password (in its user part or a `password=` query)."""
    _, user, rest = _parts(url)
    in_query = any(k.lower() == "password" for k, _ in parse_qsl(rest.partition("?")[2]))
    return (user is not None and ":" in user) or in_query
