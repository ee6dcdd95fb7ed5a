"""A run whose run.json could not be written is on record in its fallback; every view shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_skill_eval.evidence.store as store
from pytest_skill_eval.definitions import load_definition
from pytest_skill_eval.evidence import EvidenceError, layout, read
from pytest_skill_eval.evidence.summary import write_summary
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.run import GroupRun
from pytest_skill_eval.run.variant import run_variant
from pytest_skill_eval.views import render_html, render_text
from pytest_skill_eval.views.terminal import terminal_summary
from tests.support.cancelled import cancelled_environment
from tests.support.roots import body_group, make_root
from tests.support.writer import Lines

INJECTED = "injected failure writing the baseline run record"


@pytest.fixture
def result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished result whose baseline run.json failed to persist (no Pi: runs are cancelled)."""
    root = make_root(tmp_path / "root", [body_group("answer")], {})
    loaded = load_definition(root / "suite.json", root, registered())
    result_dir = tmp_path / "runs" / "result"
    result_dir.mkdir(parents=True)
    env = cancelled_environment(root)
    real = store.write_once

    def write_once(path: Path, data: bytes) -> str:
        if path.name == layout.RUN and path.parent.name == "baseline":
            raise EvidenceError(INJECTED)
        return real(path, data)

    monkeypatch.setattr(store, "write_once", write_once)
    run = GroupRun(loaded.groups[0], lambda trial: result_dir, 1)
    run_variant(run, "baseline", env)
    run_variant(run, "candidate", env)
    run.finalise(env)
    monkeypatch.undo()
    write_summary(result_dir, 1)
    return result_dir


def test_the_fallback_is_written_beside_the_missing_run_json(result: Path) -> None:
    baseline = layout.variant_dir(result, "answer", "baseline")
    assert not (baseline / layout.RUN).exists()
    found = read.read_run(baseline)
    assert found is not None
    name, run = found
    assert name == layout.RUN_FALLBACK
    assert run["state"] == "infrastructure-failed"
    assert run["error"] is not None
    assert INJECTED in run["error"]["message"]


def test_the_text_view_shows_the_fallback_run_and_its_error(result: Path) -> None:
    text = render_text(result)
    assert "Baseline [missing]" not in text
    assert f"{layout.RUN} is missing" not in text
    assert "Baseline [infrastructure-failed]" in text
    assert INJECTED in text
    assert f"groups/answer/baseline/{layout.RUN_FALLBACK}" in text


def test_the_html_report_shows_the_fallback_run_and_its_error(result: Path) -> None:
    page = render_html(result, link_base=result)
    assert f"{layout.RUN} is missing" not in page
    assert INJECTED in page


def test_the_terminal_summary_reads_the_same_records(result: Path) -> None:
    writer = Lines()
    terminal_summary(writer, {1: result})
    [group_line] = [line for line in writer.lines if line.startswith("  group answer")]
    assert "baseline=infrastructure-failed" in group_line
