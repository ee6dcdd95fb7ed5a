"""`python -m bench hosts [HOST ...]`: which hosts it compares, and one line for a wrong name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import __main__ as bench_main
from bench import hosts
from bench.common import REPLY, bare_runs
from pytest_skill_eval.hosts.registry import names


def test_every_registered_host_has_a_stock_command_and_none_is_chosen_by_default() -> None:
    assert set(hosts.HOSTS) == set(names())
    assert hosts.selected([]) == hosts.HOSTS


def test_named_hosts_are_compared_in_the_order_named() -> None:
    assert hosts.selected(["opencode", "gemini-cli"]) == ("opencode", "gemini-cli")


def test_an_unknown_host_is_refused_in_one_line_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench_main.main(["hosts", "gemini", "opencode"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert "unknown host(s): gemini;" in out
    assert "gemini-cli" in out


def test_without_a_loopback_only_namespace_it_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(hosts.MARKER, raising=False)
    monkeypatch.setattr("tests.support.namespaces.shutil.which", lambda name: None)
    with pytest.raises(SystemExit) as refused:
        hosts.main(["pi"])
    message = str(refused.value)
    assert "\n" not in message
    assert "unshare -rn" in message


def test_warm_starts_share_one_home_after_an_untimed_first_run(tmp_path: Path) -> None:
    def command(route: object, base: Path) -> tuple[list[str], dict[str, str]]:
        (base / "home").mkdir(exist_ok=True)
        # Each run adds one mark to a file in the home it was given.
        append = "import sys; open(sys.argv[1], 'a').write('x')"
        return [sys.executable, "-c", append, str(base / "home" / "runs")], {}

    timed = bare_runs([{"response": REPLY}], 2, tmp_path, command, reuse=True)
    assert len(timed) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["bare0"]
    assert (tmp_path / "bare0" / "home" / "runs").read_text() == "xxx"
