"""The forecast as numbers: recorded usage × prices × trials, its range, and what it cannot see.

No host starts: the example suite's scripts are priced with a fixed table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.budget.estimate import EstimateError, forecast_lines
from pytest_skill_eval.budget.forecast import FALLBACK_TEXT, Trials, forecast, render
from pytest_skill_eval.commands.cli import main
from pytest_skill_eval.definitions import LoadedGroup, load_definition
from pytest_skill_eval.hosts import binaries
from pytest_skill_eval.hosts.registry import registered

EXAMPLE = Path(__file__).resolve().parents[2] / "example_suites" / "changelog"
# gpt-4.1's price in USD per million tokens.
PRICES = {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0.0}
# From the scripts: natural-activation 900+1100+1500 in, 14+30+12 out; changelog-entry
# 1000+1300+1400+1600+1900+2000 in, 20+60+15+20+60+12 out.
NATURAL = (3500 * 2 + 56 * 8) / 1e6
ENTRY = (9200 * 2 + 187 * 8) / 1e6


def _root(tmp_path: Path, model: str | None = "fakeco/m1") -> Path:
    root = tmp_path / "changelog"
    # Without the results an earlier run of the example left (the README's main job does).
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    for path in (root / "groups").glob("*.json"):
        group = json.loads(path.read_text(encoding="utf-8"))
        if model is not None:
            group["model"] = {"model": model}
        path.write_text(json.dumps(group), encoding="utf-8")
    return root


def _price(provider: str, model_id: str, host: str) -> dict[str, float] | None:
    return PRICES if (provider, model_id) == ("fakeco", "m1") else None


def _selected(root: Path) -> list[tuple[LoadedGroup, tuple[str, ...], tuple[str, ...]]]:
    loaded = load_definition(root / "suite.json", root, registered())
    return [(g, ("baseline", "candidate"), ("pi",)) for g in loaded.groups]


def test_each_group_is_priced_from_its_recorded_usage_times_the_trials(tmp_path: Path) -> None:
    root = _root(tmp_path)
    result = forecast(_selected(root), root / "scripts", Trials(3), _price)
    rows = {row.group: row for row in result.rows}
    assert rows["natural-activation"].per_trial == pytest.approx((NATURAL, NATURAL))
    assert rows["changelog-entry"].per_trial == pytest.approx((ENTRY, ENTRY))
    assert result.total == pytest.approx((3 * (NATURAL + ENTRY), 3 * (NATURAL + ENTRY)))
    assert not result.unrecorded
    assert not result.unpriced


def test_auto_trials_span_the_fewest_that_can_resolve_to_the_maximum() -> None:
    # Arms that agree in every trial stop for futility after 6; arms that differ in every
    # trial resolve after 7; anything else may run to the maximum.
    assert Trials(20, auto=True).span(has_comparisons=True) == (6, 20)
    assert (Trials(20, auto=True).agreeing, Trials(20, auto=True).resolving) == (6, 7)
    assert Trials(50, auto=True).span(has_comparisons=True) == (7, 50)
    assert Trials(20, auto=True).span(has_comparisons=False) == (1, 1)  # nothing to resolve
    # Seven discordant pairs are the fewest that resolve: with at most 4 trials, none can, and
    # every comparison stops after its first.
    assert Trials(4, auto=True).span(has_comparisons=True) == (1, 1)
    assert Trials(3).span(has_comparisons=True) == (3, 3)


def test_the_range_spans_the_cheapest_and_the_dearest_recording_of_a_variant(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    dearer = root / "scripts" / "natural-activation" / "baseline-trial2.yaml"
    dearer.write_text(
        "version: 1\ninteractions:\n  - response:\n      text: done\n"
        "      usage: {input: 10000, output: 100}\n",
        encoding="utf-8",
    )
    loaded = load_definition(root / "suite.json", root, registered())
    natural = [(loaded.groups[0], ("baseline",), ("pi",))]
    one = forecast(natural, root / "scripts", Trials(1), _price)  # trial 1 only: its file
    two = forecast(natural, root / "scripts", Trials(2), _price)
    cheap, dear = (900 * 2 + 14 * 8) / 1e6, (10000 * 2 + 100 * 8) / 1e6
    assert one.rows[0].per_trial == pytest.approx((cheap, cheap))
    assert two.rows[0].per_trial == pytest.approx((cheap, dear))
    assert two.total == pytest.approx((2 * cheap, 2 * dear))


def test_a_group_without_a_recording_is_named_and_priced_from_the_stated_fallback(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    shutil.rmtree(root / "scripts" / "changelog-entry")
    trials = Trials(1)
    result = forecast(_selected(root), root / "scripts", trials, _price)
    row = next(r for r in result.rows if r.group == "changelog-entry")
    assert row.unrecorded == ("baseline", "candidate")
    low_call, high_call = (2000 * 2 + 200 * 8) / 1e6, (20000 * 2 + 1000 * 8) / 1e6
    assert row.per_trial == pytest.approx((2 * low_call, 2 * 10 * high_call))
    lines = render(result, trials)
    assert (
        "no recording: changelog-entry on pi (baseline, candidate); estimated from the "
        f"fallback of {FALLBACK_TEXT}"
    ) in lines


def test_a_model_without_a_price_is_named_and_left_out_of_the_total(tmp_path: Path) -> None:
    root = _root(tmp_path, model="nowhere/m9")
    trials = Trials(1)
    result = forecast(_selected(root), root / "scripts", trials, _price)
    assert result.total == (0, 0)
    lines = render(result, trials)
    assert (
        "  changelog-entry on pi, nowhere/m9: not priced (model nowhere/m9 has no known price)"
        in lines
    )
    assert lines[-1] == (
        "not in the total (no known price): natural-activation on pi, changelog-entry on pi"
    )


def test_a_damaged_recording_is_one_error_naming_its_file(tmp_path: Path) -> None:
    root = _root(tmp_path)
    damaged = root / "scripts" / "natural-activation" / "baseline.yaml"
    damaged.write_text("version: 1\ninteractions: {not: a list}\n", encoding="utf-8")
    with pytest.raises(EstimateError, match=str(damaged)):
        forecast_lines(_selected(root), root / "scripts", Trials(1), _price)


def _models(tmp_path: Path) -> Path:
    table = {"providers": {"fakeco": {"models": [{"id": "m1", "cost": PRICES}]}}}
    path = tmp_path / "models.json"
    path.write_text(json.dumps(table), encoding="utf-8")
    return path


def test_plan_estimate_prints_the_forecast_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _root(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    args = ["plan", str(root / "suite.json"), "--root", str(root), "--estimate"]
    code = main([*args, "--cassettes", str(root / "scripts"), "--models", str(_models(tmp_path)),
                 "--trials", "auto", "--max-trials", "10"])  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert (
        out[0] == f"forecast of a live run: trials auto, at most 10; usage from {root / 'scripts'}"
    )
    assert out[1] == (
        "  natural-activation on pi, fakeco/m1: $0.022344 to $0.074480 "
        "(3 to 10 trial(s) of $0.007448 to $0.007448 each)"
    )
    assert out[3] == "total: $0.082032 to $0.273440"
    assert out[4] == (
        "auto: a group stops after 3 trials when its arms agree in every one (futility), after "
        "7 when they differ in every one (resolved), and runs up to 10 only while a comparison "
        "may still resolve"
    )
    assert sorted(tmp_path.rglob("*")) == sorted([*before, tmp_path / "models.json"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "skill-eval: plan needs -o PLAN, the plan file to write (or --estimate)"),
        (["--estimate", "--max-trials", "5"], "skill-eval: --max-trials needs --trials auto"),
        (["--estimate", "--cassettes", "/nonexistent/scripts"],
         "skill-eval: --cassettes /nonexistent/scripts is not a directory; pass the directory"),
        (["--estimate", "--models", "/nonexistent/models.json"],
         "skill-eval: --models /nonexistent/models.json is not a file; pass a Pi models.json"),
    ],
)  # fmt: skip
def test_plan_estimate_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    root = _root(tmp_path)
    code = main(["plan", str(root / "suite.json"), "--root", str(root), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1
    assert err[0].startswith(message)


def test_collect_only_with_estimate_prints_the_forecast(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path)
    result = pytester.runpytest_subprocess(
        *("-p", "no:cacheprovider", "--collect-only", "-q"),
        *("--skill-eval", str(root / "suite.json"), "--skill-eval-root", str(root)),
        *("--skill-eval-estimate", str(root / "scripts"), "--skill-eval-trials", "2"),
        *("-o", f"skill_eval_pi_models={_models(tmp_path)}"),
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f"skill-eval: forecast of a live run: trials 2; usage from {root / 'scripts'}",
            "skill-eval:   natural-activation on pi, fakeco/m1: $0.014896 to $0.014896 *",
            "skill-eval:   changelog-entry on pi, fakeco/m1: $0.039792 to $0.039792 *",
            "skill-eval: total: $0.054688 to $0.054688",
        ]
    )
    assert not (root / ".skill-eval").exists()  # nothing ran, nothing was written


def test_an_estimate_directory_that_is_not_there_is_one_usage_line(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = _root(tmp_path)
    result = pytester.runpytest_subprocess(
        *("-p", "no:cacheprovider", "--collect-only", "-q"),
        *("--skill-eval", str(root / "suite.json"), "--skill-eval-root", str(root)),
        *("--skill-eval-estimate", str(tmp_path / "missing")),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --skill-eval-estimate {tmp_path / 'missing'} is not a directory; pass the *"]
    )
    assert "Traceback" not in result.stderr.str()


def test_plan_estimate_prices_from_the_pi_installed_in_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Pi (whose model registry prices the groups) is in the project's node_modules, beside its
    # ini file above the definition root; nothing beside the installed package, nothing on PATH.
    project = tmp_path / "project"
    root = _root(project, model="openai/gpt-4.1")
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    (project / "node_modules").symlink_to(EXAMPLE.parents[1] / "node_modules")
    monkeypatch.setattr(binaries, "PACKAGE_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    args = ["plan", str(root / "suite.json"), "--root", str(root), "--estimate"]
    assert main([*args, "--cassettes", str(root / "scripts")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "  natural-activation on pi, openai/gpt-4.1: $0.007448 to $0.007448 "
        "(1 trial(s) of $0.007448 to $0.007448 each)"
    )
