"""The statistics every view shows: trigger rates, pass@k / pass^k, and the sample size.

Each figure is read from the record when it carries it, and computed from the counts when an
older record lacks it, so every view shows the same numbers for the same evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..analysis.sequential import FUTILITY
from ..analysis.trials import consistency, sample_size
from ..analysis.triggers import EXCLUDED, RATES, trigger_rates
from ..evidence.aggregates import Consistency, SampleSize, TriggerRate
from .offered import counts_text
from .present import escape_cell, format_interval, format_number, mapping

RATE_LABELS = {"activation": "activation", "falseActivation": "false-activation"}


def result_trigger_rates(result_dir: Path) -> list[TriggerRate]:
    """Trigger rates of a single result, computed from its evidence at view time."""
    return trigger_rates([result_dir])


def aggregate_trigger_rates(data: Mapping[str, Any]) -> list[TriggerRate]:
    """The trigger rates an aggregate recorded (none in aggregates written before them)."""
    found = data.get("triggerRates")
    return cast(list[TriggerRate], found) if isinstance(found, list) else []


def skill_label(rate: Mapping[str, Any]) -> str:
    """`declared/path@sha256-prefix` of a trigger rate's target skill."""
    skill = mapping(rate.get("skill"))
    sha = skill.get("sha256")
    return f"{skill.get('declaredPath')}@{str(sha)[:12] if sha else 'unknown'}"


def excluded_text(counts: Mapping[str, Any]) -> str:
    """`infrastructure-failed:1,cancelled:2` of the excluded runs, or `none`."""
    excluded = mapping(counts.get("excluded"))
    shown = [f"{state}:{excluded[state]}" for state in EXCLUDED if excluded.get(state)]
    return ",".join(shown) or "none"


def trigger_text_rows(rates: Sequence[Mapping[str, Any]]) -> list[str]:
    """TAB-separated rows: per skill, variant and rate the counts; then each difference."""
    lines: list[str] = []
    for rate in rates:
        label = escape_cell(skill_label(rate))
        variants = mapping(rate.get("variants"))
        for name in RATES:
            for variant in ("baseline", "candidate"):
                counts = mapping(mapping(variants.get(variant)).get(name))
                if not counts.get("observed") and not _left_out(counts):
                    continue
                lines.append(
                    "\t".join(
                        [
                            "trigger",
                            label,
                            variant,
                            RATE_LABELS[name],
                            f"read={counts.get('read')}/{counts.get('observed')}",
                            f"rate={_number(counts.get('rate'))}",
                            f"interval={format_interval(_pair(counts.get('interval')))}",
                            f"excluded={excluded_text(counts)}",
                            f"unobserved={counts.get('unobserved') or 0}",
                            *_not_offered_cells(mapping(variants.get(variant))),
                        ]
                    )
                )
            difference = mapping(mapping(rate.get("difference")).get(name))
            if difference:
                lines.append(
                    "\t".join(
                        [
                            "trigger-difference",
                            label,
                            RATE_LABELS[name],
                            f"candidate-minus-baseline={_number(difference.get('difference'))}",
                            f"interval={format_interval(_pair(difference.get('interval')))}",
                        ]
                    )
                )
    return lines


def trigger_terminal_lines(rates: Sequence[Mapping[str, Any]]) -> list[str]:
    """Indented lines for pytest's terminal summary."""
    lines = []
    for rate in rates:
        variants = mapping(rate.get("variants"))
        for name in RATES:
            parts = []
            for variant in ("baseline", "candidate"):
                counts = mapping(mapping(variants.get(variant)).get(name))
                if not counts.get("observed") and not _left_out(counts):
                    continue
                interval = _pair(counts.get("interval"))
                span = f" 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
                left_out = excluded_text(counts)
                beside = "" if left_out == "none" else f", excluded {left_out}"
                parts.append(
                    f"{variant} {counts.get('read')}/{counts.get('observed')}{span}{beside}"
                )
            if parts:
                lines.append(
                    f"  trigger {skill_label(rate)} {RATE_LABELS[name]}: "
                    + "; ".join(parts)
                    + _not_offered_note(variants)
                )
    return lines


def _not_offered_note(variants: Mapping[str, Any]) -> str:
    """`; the candidate's target was not offered intact in 2 of 2 runs (cut 2)`, or ""."""
    said = counts_text(mapping(mapping(variants.get("candidate")).get("offered")), "run")
    return f"; the candidate's target was not offered intact {said}" if said else ""


def _not_offered_cells(variant: Mapping[str, Any]) -> list[str]:
    """A `target-not-intact=in 2 of 2 runs (cut 2)` cell when the host did not offer the
    variant's target intact in some of its runs."""
    said = counts_text(mapping(variant.get("offered")), "run")
    return [f"target-not-intact={said}"] if said else []


def consistency_of(check: Mapping[str, Any]) -> list[Consistency]:
    """pass@k and pass^k of an aggregate check row (recorded, else computed from its counts)."""
    found = check.get("consistency")
    if isinstance(found, list):
        return cast(list[Consistency], found)
    passes, fails = int(check.get("pass") or 0), int(check.get("fail") or 0)
    return consistency(passes, passes + fails)


def consistency_cells(check: Mapping[str, Any]) -> list[str]:
    """`pass@k=..` and `pass^k=..` cells for k = 1 and k = n."""
    cells = []
    for row in consistency_of(check):
        cells.append(f"pass@{row['k']}={format_number(row['passAtK'])}")
        cells.append(f"pass^{row['k']}={format_number(row['passHatK'])}")
    return cells


def sample_size_of(comparison: Mapping[str, Any]) -> SampleSize | None:
    """Paired trials needed to separate an unresolved comparison (recorded, else computed)."""
    if "sampleSize" in comparison:
        found = comparison.get("sampleSize")
        return cast(SampleSize, found) if isinstance(found, Mapping) else None
    transitions = mapping(comparison.get("transitions"))
    return sample_size({str(k): int(v or 0) for k, v in transitions.items()})


def sample_size_text(comparison: Mapping[str, Any]) -> str:
    """What to print beside "difference unresolved"."""
    size = sample_size_of(comparison)
    if size is None:
        return "no observed difference to size a trial count on"
    return (
        f"about {size['more']} more paired trials (80% power, alpha 0.05; {size['pairs']} in all)"
    )


def sequential_text(comparison: Mapping[str, Any]) -> str | None:
    """The sequential test's decision under `--skill-eval-trials auto`; None otherwise."""
    found = comparison.get("sequential")
    if not isinstance(found, Mapping):
        return None
    e_value, threshold = _number(found.get("eValue")), _number(found.get("threshold"))
    if found.get("resolvedAtTrial") is not None:
        return (
            f"sequential test: resolved after trial {found['resolvedAtTrial']} "
            f"(E={e_value} >= {threshold})"
        )
    why = {
        "max-trials": "the maximum number of trials ran",
        "budget-exhausted": "the spend ceiling was reached",
        "cannot-resolve": "stopped: no outcome of the trials left could resolve it",
        "unlikely-to-resolve": "stopped: the chance to resolve by the maximum was under "
        f"{FUTILITY:.0%}",
    }.get(str(found.get("stop")), "the run ended early")
    return f"sequential test: unresolved (E={e_value} < {threshold}); {why}"


def _left_out(counts: Mapping[str, Any]) -> bool:
    return excluded_text(counts) != "none" or bool(counts.get("unobserved"))


def _number(value: Any) -> str:
    return format_number(value) if isinstance(value, int | float) else "unavailable"


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, list | tuple) and len(value) == 2:
        return float(value[0]), float(value[1])
    return None


def noise_floor_lines(data: Mapping[str, Any]) -> list[str]:
    """The aggregate's noise floor, one line per check: disagreements of identical arms."""
    floor = data.get("noiseFloor")
    if not isinstance(floor, Mapping):
        return []
    lines = [
        f"noise floor: {floor.get('trials')} trials of identical arms (the baseline arm ran the "
        f"candidate's definition); flaky above a disagreement rate of {floor.get('bound')}"
    ]
    for key, row in sorted((floor.get("perCheck") or {}).items()):
        interval = row.get("interval")
        span = f" 95% CI [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else ""
        verdict = "flaky: never gates until a new floor clears it" if row.get("flaky") else "steady"
        lines.append(
            f"  {key}: identical arms disagreed {row.get('disagreements')}/{row.get('trials')}"
            f"{span} - {verdict}"
        )
    return lines
