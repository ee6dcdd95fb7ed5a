"""A view of finished results reads each evidence file from disk once (`read.read_once`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_skill_eval.analysis import gate
from pytest_skill_eval.evidence import memo, read, shapes
from pytest_skill_eval.session import SkillEvalSession
from pytest_skill_eval.views import render_html, render_text
from pytest_skill_eval.views.summary import render_markdown
from pytest_skill_eval.views.terminal import terminal_summary
from tests.support.writer import Lines


def _counting(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """How often each file is read from disk from now on."""
    reads: Counter[Path] = Counter()
    original = read._read_bytes

    def counted(path: Path) -> bytes:
        reads[path] += 1
        return original(path)

    monkeypatch.setattr(read, "_read_bytes", counted)
    return reads


def test_the_terminal_summary_reads_each_evidence_file_from_disk_once(
    result: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _counting(monkeypatch)
    writer = Lines()
    terminal_summary(writer, {1: result})
    assert any("answer" in line for line in writer.lines)
    runs = [path for path in reads if path.name == "run.json"]
    assert len(runs) == 2  # the baseline's and the candidate's
    assert reads.most_common(1)[0][1] == 1, reads.most_common(3)
    # Outside a view, every read goes to disk again.
    read.read_run(runs[0].parent)
    assert reads[runs[0]] == 2


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(render_text, id="skill-eval view"),
        pytest.param(render_html, id="skill-eval report"),
        pytest.param(render_markdown, id="skill-eval summary"),
    ],
)
def test_each_view_the_console_script_prints_reads_each_evidence_file_once(
    result: Path, monkeypatch: pytest.MonkeyPatch, view: Any
) -> None:
    reads = _counting(monkeypatch)
    shown = view(result)
    assert "answer" in shown
    assert [path.parent.name for path in reads if path.name == "run.json"] == [
        "baseline",
        "candidate",
    ]
    assert reads.most_common(1)[0][1] == 1, reads.most_common(3)


def test_a_later_read_is_a_fresh_value_of_what_was_read_first(result: Path) -> None:
    variant = next(result.rglob("baseline"))
    path = variant / "run.json"
    with read.read_once():
        found = read.read_run(variant)
        assert found is not None
        first = found[1]
        first["state"] = "changed by one caller"
        path.write_text("{not json", encoding="utf-8")  # the disk is not read again
        again = read.read_run(variant)
        assert again is not None
        assert again[1]["state"] == "cancelled"
        assert again[1] is not first
    with pytest.raises(read.DamagedEvidenceError, match="not valid JSON"):
        read.read_run(variant)


def test_a_file_read_without_a_shape_is_still_checked_against_one_asked_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"state": 3}), encoding="utf-8")
    with read.read_once():
        assert read.read_evidence_json(path) == {"state": 3}
        with pytest.raises(read.DamagedEvidenceError, match="state"):
            read.read_evidence_json(path, shapes.RUN)
        with pytest.raises(read.DamagedEvidenceError, match="state"):
            read.read_evidence_json(path, shapes.RUN)  # a failed check is never remembered


def test_the_controller_builds_the_summarys_readers_once_the_first_item_has_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = list(shapes._RECORDS)
    for name in names:
        monkeypatch.delitem(vars(shapes), name, raising=False)
    state: Any = SimpleNamespace(
        collected_ids={}, reported=set(), worker=False, readers_built=False
    )
    call = SimpleNamespace(nodeid="suite.json::g[baseline]", when="call")
    SkillEvalSession.pytest_runtest_logreport(state, call)  # type: ignore[arg-type]
    assert not any(name in vars(shapes) for name in names)
    teardown = SimpleNamespace(nodeid="suite.json::g[baseline]", when="teardown")
    SkillEvalSession.pytest_runtest_logreport(state, teardown)  # type: ignore[arg-type]
    assert all(name in vars(shapes) for name in names)
    # A worker writes evidence and reads none back: it never builds them.
    for name in names:
        monkeypatch.delitem(vars(shapes), name)
    worker: Any = SimpleNamespace(
        collected_ids={}, reported=set(), worker=True, readers_built=False
    )
    SkillEvalSession.pytest_runtest_logreport(worker, teardown)  # type: ignore[arg-type]
    assert not any(name in vars(shapes) for name in names)


def test_a_view_inside_another_shares_its_memo(
    result: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _counting(monkeypatch)
    with read.read_once():
        read.read_run(result / "groups" / "answer" / "baseline")
        shown = render_text(result)  # a view of its own, inside the first
    assert "answer" in shown
    assert reads.most_common(1)[0][1] == 1, reads.most_common(3)


def test_a_view_keeps_only_the_most_recent_texts_it_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    for path in (first, second):
        path.write_text('{"state": "done"}', encoding="utf-8")  # 17 characters each
    monkeypatch.setattr(memo, "READ_ONCE_LIMIT", 30)
    reads = _counting(monkeypatch)
    with read.read_once():
        for path in (first, second, second, first, first):
            assert read.read_evidence_json(path) == {"state": "done"}
    # The second file pushed the first out; reading the first again pushed the second out.
    assert reads == {first: 2, second: 1}


def test_what_the_gate_reads_of_an_earlier_result_is_what_it_verified(result: Path) -> None:
    # A view read the invocation while it was planted; the sealed bytes are back by the time
    # the gate verifies the result: what it then reads and remembers is what it verified.
    invocation = result / "invocation.json"
    genuine = invocation.read_bytes()
    planted = {**json.loads(genuine), "identicalArms": True, "selection": {"trial": 7}}
    invocation.chmod(0o644)
    with read.read_once():
        invocation.write_text(json.dumps(planted), encoding="utf-8")
        assert read.mapping(read.load_invocation(result))["identicalArms"] is True
        invocation.write_bytes(genuine)
        found = gate._admitted(result)
    assert found is not None
    assert (found.identical_arms, found.order[1]) == (False, 0)
    assert gate._admitted(result) == found  # as remembered with its verification
