"""`skill-eval verify` takes the aggregate id a trials run prints: it verifies every trial result
and the aggregate's own record, and says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.commands import cli
from pytest_skill_eval.evidence import layout
from tests.support.roots import body_group, make_root, on_fast_host, write_answer
from tests.support.runs import aggregates, results, run_detached
from tests.support.shared import once, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]


def _build(directory: Path) -> None:
    root = directory / "root"
    scripts = {f"g/{v}": write_answer("yes") for v in ("baseline", "candidate")}
    make_root(root, [body_group("g", **on_fast_host())], scripts)
    done = run_detached(root, "--skill-eval-trials", "2", "-q")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
@shared_setup
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One group in two trials on the fastest real host, scripted: two results, one aggregate."""
    return once(tmp_path_factory, "verify-aggregate", _build) / "root"


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Path:
    """A private copy of the built definition root."""
    copy = tmp_path / "root"
    shutil.copytree(built, copy, symlinks=True)
    return copy


def test_an_aggregate_id_verifies_every_trial_and_its_record(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (aggregate,) = aggregates(root)
    assert cli.main(["--root", str(root), "verify", aggregate.name]) == 0
    out = capsys.readouterr().out.splitlines()
    # One line per trial, in the aggregate's order (trials begun in the same second sort by
    # their random suffix, so compare them as sets of lines).
    assert sorted(line.split(" (")[0] for line in out[:-1]) == sorted(
        f"verified: {t}" for t in results(root)
    )
    assert out[-1] == (
        f"verified: aggregate {aggregate.name}: 2 trial result(s) and its own record ({aggregate})"
    )


def test_a_tampered_trial_fails_the_aggregate_naming_the_file(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (aggregate,) = aggregates(root)
    summary = results(root)[1] / layout.SUMMARY
    summary.write_bytes(summary.read_bytes().replace(b'"state"', b'"state" ', 1))
    assert cli.main(["verify", str(aggregate)]) == 1
    captured = capsys.readouterr()
    assert f"changed: {summary}" in captured.out
    assert captured.err == f"{captured.out.count(chr(10))} difference(s) in aggregate {aggregate}\n"


def test_an_edited_aggregate_record_is_named(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (aggregate,) = aggregates(root)
    path = aggregate / layout.AGGREGATE
    record = json.loads(path.read_text(encoding="utf-8"))
    record["state"] = "passed" if record["state"] != "passed" else "failed"
    path.write_text(json.dumps(record), encoding="utf-8")
    assert cli.main(["verify", str(aggregate)]) == 1
    assert capsys.readouterr().out == f"changed: {path} (state not what its trials give)\n"


def test_a_missing_trial_is_named_and_a_seal_is_refused(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (aggregate,) = aggregates(root)
    gone = results(root)[0]
    shutil.rmtree(gone)
    assert cli.main(["verify", str(aggregate)]) == 1
    assert f"missing: trial result {gone}\n" in capsys.readouterr().out
    assert cli.main(["verify", str(aggregate), "--seal", "sha256:" + "0" * 64]) == 1
    assert "is an aggregate, which has no seal of its own" in capsys.readouterr().err
