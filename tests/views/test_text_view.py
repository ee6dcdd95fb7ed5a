"""The text view on a fixed evidence directory: golden output, escaping, selectors, aggregates.

After an intended change of the view, rewrite the golden files with
`SKILL_EVAL_UPDATE_GOLDEN=1 pytest tests/views` and review their diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_skill_eval.analysis.trials import aggregate
from pytest_skill_eval.run import synthetic_record
from pytest_skill_eval.views import ViewError, render_text
from pytest_skill_eval.views.present import compact_json, escape_cell, format_number, js_number

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("SKILL_EVAL_UPDATE_GOLDEN") == "1"


def _normalise(text: str, root: Path) -> str:
    return text.replace(str(root), "<ROOT>")


def _assert_golden(name: str, text: str, root: Path) -> None:
    """Compare with `golden/<name>`; SKILL_EVAL_UPDATE_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    actual = _normalise(text, root).encode("utf-8")
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(actual)
    assert actual.decode("utf-8") == path.read_bytes().decode("utf-8")


def _root(result_dir: Path) -> Path:
    return result_dir.parents[2]


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def test_result_view_matches_golden(result_dir: Path) -> None:
    text = render_text(result_dir)
    assert text.startswith("Result 20261130215313-7e60c21e [partially-complete]\n")
    assert text.endswith("\n")
    _assert_golden("result.txt", text, _root(result_dir))


def test_grade_comes_before_the_variants(result_dir: Path) -> None:
    lines = render_text(result_dir, group="changelog-entry").splitlines()
    assert lines.index("Grade [grade-error]") < lines.index("Baseline [complete]")
    assert lines.index("Baseline [complete]") < lines.index("Candidate [complete]")


def test_group_selected_by_id_or_position_gives_the_same_view(result_dir: Path) -> None:
    by_id = render_text(result_dir, group="changelog-entry")
    by_position = render_text(result_dir, group="2")
    assert by_id == by_position
    assert "Group natural-activation" not in by_id
    _assert_golden("group-changelog-entry.txt", by_id, _root(result_dir))
    assert "Group natural-activation [complete] type=description" in render_text(
        result_dir, group="1"
    )


def test_variant_selector_shows_one_variant_and_its_own_grade(result_dir: Path) -> None:
    text = render_text(result_dir, group="2", variant="candidate")
    _assert_golden("changelog-entry-candidate.txt", text, _root(result_dir))
    lines = text.splitlines()
    # The only grade error belongs to a baseline expectation, so the candidate's grade is complete.
    assert "Grade [complete]" in lines
    assert "Grade errors:" not in lines
    assert "Baseline [complete]" not in lines
    assert "Comparisons:" not in lines
    assert all(not line.startswith("check\t") or "\tcandidate\t" in line for line in lines)

    baseline = render_text(result_dir, group="2", variant="baseline").splitlines()
    assert "Grade [grade-error]" in baseline
    assert "Candidate [complete]" not in baseline


def test_cells_escape_backslash_then_cr_lf_and_tab(result_dir: Path) -> None:
    lines = render_text(result_dir, group="changelog-entry").splitlines()
    # The baseline created files named "draft\v2<CR><LF>.txt" and "notes<TAB><script>.md".
    assert "  changes\tcreated\tdraft\\\\v2\\r\\n.txt\tnotes\\t<script>.md" in lines
    assert "  changes\tmodified\tCHANGELOG.md\tlogo.png" in lines
    assert "  changes\tdeleted" in lines
    assert (
        "error\tgrade\tbaseline-notes-read\t"
        "declared workspace resource path is unavailable: notes\\tdraft\\r\\n.md"
    ) in lines
    # Compact JSON escapes first ("\\t"), then the cell escapes its backslashes again.
    observed = next(line for line in lines if line.startswith("check\tbaseline-only-changelog"))
    assert '"draft\\\\\\\\v2\\\\r\\\\n.txt"' in observed
    assert '"notes\\\\t<script>.md"' in observed
    review = render_text(result_dir, group="1").splitlines()
    assert (
        "review\tQ1\tbaseline=unclear\tcandidate=yes\t"
        "Run A read SKILL.md first;\\trun B answered from the prompt alone."
    ) in review


def test_multi_line_response_is_printed_raw_and_indented(result_dir: Path) -> None:
    text = render_text(result_dir, group="changelog-entry", variant="baseline")
    assert (
        "  Turn 1 [settled]\n"
        "    response:\n"
        "      I added a line about semicolons to CHANGELOG.md.\n"
        "      Notes:\n"
        "      \t- kept in C:\\temp\\notes\n"
        '      <script>alert("response")</script>\n'
    ) in text


def test_scripted_runs_are_marked(result_dir: Path) -> None:
    text = render_text(result_dir)
    root = _root(result_dir)
    for group in ("natural-activation", "changelog-entry"):
        for variant in ("baseline", "candidate"):
            cassette = root / "scripts" / group / f"{variant}.yaml"
            assert f"  provider: scripted (cassette {cassette})" in text


def test_replayed_runs_are_marked(result_dir: Path) -> None:
    run = result_dir / "groups" / "natural-activation" / "candidate" / "run.json"
    _edit_json(run, lambda r: r["provider"].update(mode="replay", cassette="/c/x.yaml"))
    text = render_text(result_dir, group="1", variant="candidate")
    assert "  provider: replay (cassette /c/x.yaml)" in text


@pytest.mark.parametrize(
    ("group", "variant", "message"),
    [
        ("no-such-group", None, "Unknown group selector: no-such-group"),
        ("3", None, "Unknown group selector: 3"),
        ("0", None, "Unknown group selector: 0"),
        (None, "both", "Unknown variant selector: both (use baseline or candidate)"),
        ("1", "Candidate", "Unknown variant selector: Candidate"),
    ],
)
def test_unknown_selectors_are_view_errors(
    result_dir: Path, group: str | None, variant: str | None, message: str
) -> None:
    with pytest.raises(ViewError) as caught:
        render_text(result_dir, group=group, variant=variant)
    assert str(caught.value).startswith(message)
    if group is not None and "group" in message:
        assert "1=natural-activation, 2=changelog-entry" in str(caught.value)


def test_a_directory_without_summary_is_a_view_error(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match=r"has no summary\.json or aggregate\.json"):
        render_text(tmp_path)


def test_malformed_evidence_is_a_view_error_naming_the_file(result_dir: Path) -> None:
    (result_dir / "summary.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ViewError, match=r"summary\.json: not valid JSON"):
        render_text(result_dir)


def test_group_errors_and_budget_rows(result_dir: Path) -> None:
    def change(summary: dict[str, Any]) -> None:
        summary["budget"] = {"maxCost": 0.05, "spent": 0.0291149999, "exhausted": True}
        summary["groups"][1]["errors"] = [
            {"kind": "persistence", "artifact": "group.json", "message": "disk full\r\nretry"}
        ]

    _edit_json(result_dir / "summary.json", change)
    lines = render_text(result_dir).splitlines()
    assert lines[2] == "budget\tmax-cost=0.05\tspent=0.029115\texhausted=true"
    header = lines.index("Group errors:")
    assert lines[header + 1] == "error\tgroup\tgroup.json\tdisk full\\r\\nretry"


def test_aggregate_views_match_golden(unresolved_aggregate: Path, resolved_aggregate: Path) -> None:
    unresolved = render_text(unresolved_aggregate)
    resolved = render_text(resolved_aggregate)
    _assert_golden("aggregate-unresolved.txt", unresolved, unresolved_aggregate.parents[2])
    _assert_golden("aggregate-resolved.txt", resolved, resolved_aggregate.parents[2])
    comparisons = [line for line in unresolved.splitlines() if line.startswith("comparison\t")]
    assert len(comparisons) == 3
    # 3 of 3 against 0 of 3: the Wilson intervals overlap and p = 0.25. Connor's formula says
    # 4 pairs, but the exact test cannot reject below 6 discordant pairs: 3 more trials.
    unresolved_tail = (
        "\tmcnemar-p=0.25\tdifference unresolved"
        "\tabout 3 more paired trials (80% power, alpha 0.05; 6 in all)"
    )
    assert all(line.endswith(unresolved_tail) for line in comparisons)
    assert "difference unresolved" not in resolved
    assert "\tmcnemar-p=0.0078125\n" in resolved
    assert "check\tcandidate-reply\tcandidate\tresponse-text\tpass=8/8\trate=1\t" in resolved


def test_selectors_are_rejected_on_an_aggregate(resolved_aggregate: Path) -> None:
    for selectors in ({"group": "1"}, {"variant": "baseline"}):
        with pytest.raises(ViewError, match="selectors are not supported for an aggregate"):
            render_text(resolved_aggregate, **selectors)


def test_aggregate_written_by_the_trials_module_renders(result_dir: Path, tmp_path: Path) -> None:
    data = aggregate("20990101000000-00000000", [result_dir], requested=2)
    target = tmp_path / "agg"
    target.mkdir()
    (target / "aggregate.json").write_text(json.dumps(data), encoding="utf-8")
    lines = render_text(target).splitlines()
    assert lines[0] == "Aggregate 20990101000000-00000000 [cancelled] trials=1/2"
    assert (
        "check\tcandidate-reads-skill\tcandidate\tskill-read\tpass=1/1\trate=1\t"
        "interval=[0.20654931,1]\tpass@1=1\tpass^1=1"
    ) in lines
    (comparison,) = [c for c in lines if c.startswith("comparison\tskill-read-on-first-turn\t")]
    assert comparison.split("\t")[3] == "baseline=0/1"
    # One fail-to-pass pair: the exact test needs six discordant pairs before it can reject.
    assert comparison.endswith(
        "\tdifference unresolved\tabout 5 more paired trials (80% power, alpha 0.05; 6 in all)"
    )
    triggers = lines[lines.index("Trigger rates:") + 1 :]
    assert triggers[1] == (
        "trigger\tskills/changelog-keeper@b7601a489f87\tcandidate\tactivation\tread=1/1\t"
        "rate=1\tinterval=[0.20654931,1]\texcluded=none\tunobserved=0"
    )
    assert triggers[2].startswith("trigger-difference\tskills/changelog-keeper@b7601a489f87\t")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (5050, "5050"),
        (3.0, "3"),
        (0.017775, "0.017775"),
        (0.1 + 0.2, "0.3"),
        (1e-9, "0"),
        (2**-9, "0.00195313"),  # an exact half: rounded away from zero like toFixed
        (-(2**-9), "-0.00195313"),
        (123456789.123456789, "123456789.12345679"),
        (5.551115123125783e-17, "0"),
        (1e21, "1e+21"),
        (None, "unavailable"),
        (True, "unavailable"),
    ],
)
def test_number_formatting(value: Any, shown: str) -> None:
    assert format_number(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1e16, "10000000000000000"),
        (1.5e21, "1.5e+21"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (123.456, "123.456"),
    ],
)
def test_js_number_strings(value: float, shown: str) -> None:
    assert js_number(value) == shown


def test_compact_json_matches_json_stringify() -> None:
    value = {"a": [1, 2.0, 0.5, None, True], "b": "tab\there é", "c": {"d": 1e-7}}
    assert compact_json(value) == '{"a":[1,2,0.5,null,true],"b":"tab\\there é","c":{"d":1e-7}}'


def _unescape(cell: str) -> str:
    out, i = [], 0
    while i < len(cell):
        if cell[i] == "\\":
            out.append({"\\": "\\", "r": "\r", "n": "\n", "t": "\t"}[cell[i + 1]])
            i += 2
        else:
            out.append(cell[i])
            i += 1
    return "".join(out)


@given(st.text())
def test_escaped_cells_hold_no_separators_and_round_trip(text: str) -> None:
    cell = escape_cell(text)
    assert not {"\t", "\r", "\n"} & set(cell)
    assert _unescape(cell) == text


def _synthetic(variant: str, state: str, error: dict[str, str] | None) -> dict[str, Any]:
    """A run record of a variant whose subject never ran (the shape the group runner writes)."""
    prompt = "Note in the changelog that CSV export now handles semicolons (issue #42)."
    return dict(synthetic_record(variant, state, error, "body", prompt, [prompt]))


def test_synthetic_and_missing_runs(result_dir: Path) -> None:
    group = result_dir / "groups" / "changelog-entry"
    error = {"kind": "cancellation", "message": "budget exhausted: spent 0.05 of 0.05 USD"}
    (group / "baseline" / "run.json").write_text(
        json.dumps(_synthetic("baseline", "cancelled", error)), encoding="utf-8"
    )
    (group / "candidate" / "run.json").unlink()
    text = render_text(result_dir, group="changelog-entry")
    assert (
        "Baseline [cancelled]\n"
        "  usage\tunavailable\n"
        "  error: budget exhausted: spent 0.05 of 0.05 USD\n"
        "  artifacts\trun=groups/changelog-entry/baseline/run.json"
        "\ttranscript=groups/changelog-entry/baseline/transcript.json"
        "\tfinal=groups/changelog-entry/baseline/final.md\n"
        "\n"
        "Candidate [missing]\n"
        "  error: run.json is missing\n"
    ) in text


def test_a_group_id_that_would_leave_the_result_is_refused(result_dir: Path) -> None:
    _edit_json(result_dir / "summary.json", lambda s: s["groups"][0].update(id="../../x"))
    with pytest.raises(ViewError, match=r"summary\.json: at /groups/0/id: an unsafe id"):
        render_text(result_dir)


def test_declared_turns_are_listed_with_multi_line_prompts_indented(result_dir: Path) -> None:
    definition = result_dir / "groups" / "natural-activation" / "definition.json"
    _edit_json(definition, lambda d: d.update(input={"turns": ["First.", "Second\nand more."]}))
    lines = render_text(result_dir, group="1").splitlines()
    start = lines.index("Turns: 2")
    assert lines[start + 1 : start + 5] == [
        "  Turn 1 prompt: First.",
        "  Turn 2 prompt:",
        "    Second",
        "    and more.",
    ]


def test_a_group_is_selected_on_one_host_as_junit_names_it() -> None:
    from pytest_skill_eval.evidence.read import ReadError, select_groups

    summary = {
        "groups": [
            {"id": "lint", "position": 1},
            {"id": "lint", "position": 1, "host": "codex"},
            {"id": "long", "position": 2},
            {"id": "long", "position": 2, "host": "codex"},
        ]
    }
    assert select_groups(summary, "long@codex") == [summary["groups"][3]]
    assert select_groups(summary, "1@pi") == [summary["groups"][0]]
    assert len(select_groups(summary, "long")) == 2
    with pytest.raises(ReadError) as caught:
        select_groups(summary, "long@gemini-cli")
    # Each group once, with its hosts: not one `position=id` per host.
    assert "1=lint (on pi, codex), 2=long (on pi, codex); " in str(caught.value)
