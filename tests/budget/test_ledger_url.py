"""The Redis ledger's URL never shows its password, and a malformed one is one line.

A password with an unencoded `/`, `?`, `#`, `[` or `]` ends a URL parser's host part early, so
a parser showed its first part as the host, port or path; a host like `[::1` made the parser
raise a traceback. The user part is now found on the raw text and masked before any message is
built, a user part a parser would misread is refused in one line naming the fix, and a malformed
URL is one usage line.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_skill_eval.budget.ledger import LedgerError
from pytest_skill_eval.budget.ledger_url import scrub, secrets_of
from pytest_skill_eval.budget.redis_ledger import RedisLedger, check_url, safe_url
from tests.support.redis_server import RedisServer
from tests.support.roots import body_group, make_root, write_answer
from tests.support.runs import run

# Two halves no message may hold, around each character that ends a parser's host part early.
HEAD, TAIL = "s3cr7tk", "q9z8xw"
JOINS = ["/", "#", "?", "@", ":", "[", "]", "%", " "]
MALFORMED = [
    "redis://[::1",
    "redis://[::1]:99999/0",
    "redis://h:99999999999/0",
    "redis://h:port/0",
    "redis://h:6379/0?socket_timeout=abc",
    "redis://:pw@[",
    "rediss://u:pw@h:-1/0",
]


def _password(join: str) -> str:
    return f"{HEAD}{join}{TAIL}"


def _leaks(text: str) -> bool:
    return HEAD in text or TAIL in text


@pytest.mark.parametrize("join", JOINS)
def test_no_part_of_a_password_is_shown_whatever_it_holds(join: str) -> None:
    url = f"redis://ci:{_password(join)}@127.0.0.1:6379/0"
    assert safe_url(url) == "redis://ci@127.0.0.1:6379/0"
    problem = check_url(url) or ""
    assert not _leaks(problem)
    if join in "/#?[]":
        assert problem == (
            "--skill-eval-ledger-url redis://ci@127.0.0.1:6379/0 is not a usable Redis URL: its "
            "user part holds / ? # [ or ] unencoded; percent-encode them (%2F %3F %23 %5B %5D) "
            "or give the password in SKILL_EVAL_LEDGER_PASSWORD"
        )
        with pytest.raises(LedgerError) as raised:
            RedisLedger(url, "k", 1.0)
        assert not _leaks(str(raised.value))
    # Without a user name, and as a `password=` query.
    assert safe_url(f"redis://:{_password(join)}@h:6379/0") == "redis://h:6379/0"
    query = f"unix:///run/r.sock?db=1&password={_password(join)}"
    assert not _leaks(safe_url(query))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=string.printable + "é…\u2028", min_size=1, max_size=12),
    st.sampled_from(["redis", "rediss", "unix", "http", "ftp"]),
)
def test_no_password_reaches_any_message(middle: str, scheme: str) -> None:
    password = f"{HEAD}{middle}{TAIL}"
    for url in (
        f"{scheme}://user:{password}@127.0.0.1:6379/0",
        f"{scheme}://:{password}@[::1]:6379/0",
        f"{scheme}://u:{password}@[::1",
    ):
        shown = [safe_url(url), check_url(url) or ""]
        try:
            RedisLedger(url, "k", 1.0)
        except LedgerError as error:
            shown.append(str(error))
        for text in shown:
            assert not _leaks(text), (url, text)
            assert "\n" not in text
            assert "\r" not in text


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_is_one_line(url: str) -> None:
    problem = check_url(url)
    assert problem is not None
    assert problem.startswith("--skill-eval-ledger-url ")
    assert "\n" not in problem


def test_a_client_library_message_is_shown_without_the_secrets() -> None:
    url = f"redis://ci:{HEAD}{TAIL}@127.0.0.1:6379/0?password={TAIL}{HEAD}"
    assert set(secrets_of(url)) == {f"ci:{HEAD}{TAIL}", f"{HEAD}{TAIL}", f"{TAIL}{HEAD}"}
    message = f"Error connecting to ci:{HEAD}{TAIL}@127.0.0.1\n({TAIL}{HEAD})"
    assert scrub(message, secrets_of(url)) == "Error connecting to …@127.0.0.1 (…)"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """One group whose scripts exist; no host starts, as the ledger admits no subject."""
    scripts = {"g/baseline": write_answer("no"), "g/candidate": write_answer("yes")}
    return make_root(tmp_path / "root", [body_group("g")], scripts)


def _output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("join", ["/", "#", "?"])
def test_a_password_a_parser_would_misread_is_one_usage_line_without_it(
    pytester: pytest.Pytester, root: Path, redis_server: RedisServer, join: str
) -> None:
    url = f"redis://ci:{_password(join)}@127.0.0.1:{redis_server.port}/0"
    result = run(pytester, root, "--skill-eval-ledger-url", url, "--skill-eval-max-cost", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, _output(result)
    assert not _leaks(_output(result))
    assert "Traceback" not in _output(result)
    (line,) = [t for t in result.stderr.str().splitlines() if t.startswith("ERROR: ")]
    assert line.startswith(
        f"ERROR: --skill-eval-ledger-url redis://ci@127.0.0.1:{redis_server.port}/0 is not a "
        "usable Redis URL: its user part holds / ? # [ or ] unencoded"
    )


@pytest.mark.parametrize("join", ["@", ":"])
def test_a_wrong_password_with_at_or_colon_is_never_printed(
    pytester: pytest.Pytester, root: Path, redis_server: RedisServer, join: str
) -> None:
    url = f"redis://default:{_password(join)}@127.0.0.1:{redis_server.port}/0"
    result = run(pytester, root, "--skill-eval-ledger-url", url, "--skill-eval-max-cost", "1")
    output = _output(result)
    assert not _leaks(output)
    assert "Traceback" not in output
    assert (
        f"the Redis ledger at redis://default@127.0.0.1:{redis_server.port}/0 refused this run"
    ) in output


@pytest.mark.parametrize("url", ["redis://[::1", "redis://h:99999999999/0", "redis://h:port/0"])
def test_a_malformed_url_on_the_command_line_is_one_usage_line(
    pytester: pytest.Pytester, root: Path, url: str
) -> None:
    result = run(pytester, root, "--skill-eval-ledger-url", url, "--skill-eval-max-cost", "1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, _output(result)
    assert "Traceback" not in _output(result)
    (line,) = [t for t in result.stderr.str().splitlines() if t.startswith("ERROR: ")]
    assert line.startswith(f"ERROR: --skill-eval-ledger-url {url} is not a usable Redis URL: ")
