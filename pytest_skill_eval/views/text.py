"""The grade-first text view of a result or an aggregate (reference §8), TAB-separated rows."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path
from typing import Any

from ..errors import SkillEvalError
from ..trials import ALPHA, mcnemar_exact, wilson_interval

VARIANTS = ("baseline", "candidate")
_POSITION = re.compile(r"[0-9]+")


class ViewError(SkillEvalError):
    """A result cannot be shown as asked: unknown selector, unreadable evidence, and the like."""


# ---------------------------------------------------------------------------------------------
# Reading a result


@dataclass(frozen=True, slots=True)
class GroupEvidence:
    """Everything the views read about one group of a result."""

    record: Mapping[str, Any]
    directory: Path
    definition: Mapping[str, Any]
    grade: Mapping[str, Any] | None
    grade_file: str | None
    review: Mapping[str, Any] | None
    runs: Mapping[str, Mapping[str, Any] | None]
    run_files: Mapping[str, str | None]

    @property
    def id(self) -> str:
        """The group id."""
        return str(self.record.get("id"))

    @property
    def group_file(self) -> str:
        """The group record file name (`group.json` or its fallback)."""
        artifacts = self.record.get("artifacts") or {}
        return str(artifacts.get("group") or "group.json")


def read_json_file(path: Path) -> Any:
    """Read one JSON evidence file; unreadable or malformed evidence is a ViewError."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ViewError(f"cannot read {path}: {error.strerror or error}") from error
    except ValueError as error:
        raise ViewError(f"{path} is not valid JSON ({error}); the evidence is damaged") from error


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one (evidence may lack optional parts)."""
    return value if isinstance(value, Mapping) else {}


def _optional_json(path: Path) -> Any:
    return read_json_file(path) if path.is_file() else None


def is_aggregate(result_dir: Path) -> bool:
    """Whether a directory holds an aggregate over trials rather than one result."""
    return (result_dir / "aggregate.json").is_file()


def load_summary(result_dir: Path) -> dict[str, Any]:
    """`summary.json` of a result directory, or a ViewError saying what the directory lacks."""
    path = result_dir / "summary.json"
    if not path.is_file():
        raise ViewError(
            f"{result_dir} has no summary.json or aggregate.json: it is not a finished result. "
            "Pass a result id or directory under .skill-eval/runs."
        )
    summary = read_json_file(path)
    if not isinstance(summary, dict) or not isinstance(summary.get("groups"), list):
        raise ViewError(f"{path} has no groups list; the evidence is damaged")
    return summary


def load_group(result_dir: Path, record: Mapping[str, Any]) -> GroupEvidence:
    """Read the definition, grade, review and both runs of one summarised group."""
    identity = str(record.get("id"))
    if identity in ("", ".", "..") or "/" in identity or "\\" in identity:
        raise ViewError(f"{result_dir / 'summary.json'} names an unsafe group id: {identity!r}")
    group_dir = result_dir / "groups" / identity
    definition = _optional_json(group_dir / "definition.json")
    grade_file = (record.get("artifacts") or {}).get("grade")
    grade = None
    if isinstance(grade_file, str):
        grade = _optional_json(group_dir / grade_file)
    runs: dict[str, Mapping[str, Any] | None] = {}
    run_files: dict[str, str | None] = {}
    for variant in VARIANTS:
        # A failed persistence leaves its record beside (or instead of) run.json; it is the truth.
        run_files[variant] = None
        runs[variant] = None
        for name in ("run-persistence-error.json", "run.json"):
            path = group_dir / variant / name
            if path.is_file():
                run = read_json_file(path)
                if not isinstance(run, dict):
                    raise ViewError(f"{path} is not a JSON object; the evidence is damaged")
                run_files[variant] = name
                runs[variant] = run
                break
    return GroupEvidence(
        record=record,
        directory=group_dir,
        definition=definition if isinstance(definition, dict) else {},
        grade=grade if isinstance(grade, dict) else None,
        grade_file=grade_file if isinstance(grade_file, str) else None,
        review=_optional_json(group_dir / "semantic-grade.json"),
        runs=runs,
        run_files=run_files,
    )


def select_groups(summary: Mapping[str, Any], group: str | None) -> list[Mapping[str, Any]]:
    """The summarised groups selected by position (`^\\d+$`) or id; all when `group` is None."""
    records: list[Mapping[str, Any]] = [g for g in summary["groups"] if isinstance(g, dict)]
    if group is None:
        return records
    if _POSITION.fullmatch(group):
        chosen = [r for r in records if r.get("position") == int(group)]
    else:
        chosen = [r for r in records if r.get("id") == group]
    if not chosen:
        known = ", ".join(f"{r.get('position')}={r.get('id')}" for r in records) or "none"
        raise ViewError(
            f"Unknown group selector: {group} (this result has groups {known}; "
            "give an id or a 1-based position)"
        )
    return chosen


def check_variant(variant: str | None) -> None:
    """Reject a variant selector other than baseline or candidate."""
    if variant is not None and variant not in VARIANTS:
        raise ViewError(f"Unknown variant selector: {variant} (use baseline or candidate)")


def expectation_variants(definition: Mapping[str, Any]) -> dict[str, str]:
    """Expectation id to variant, from the group definition."""
    found: dict[str, str] = {}
    for expectation in definition.get("expectations") or []:
        if isinstance(expectation, dict):
            identity, variant = expectation.get("id"), expectation.get("variant")
            if isinstance(identity, str) and isinstance(variant, str):
                found[identity] = variant
    return found


def visible_grade_errors(group: GroupEvidence, variant: str | None) -> list[Mapping[str, Any]]:
    """Grade errors, hiding those of the other variant's expectations when one is selected."""
    errors: list[Mapping[str, Any]] = [
        e for e in (group.grade or {}).get("errors") or [] if isinstance(e, Mapping)
    ]
    if variant is None:
        return errors
    owners = expectation_variants(group.definition)
    return [e for e in errors if owners.get(str(e.get("id")), variant) == variant]


def selected_grade_state(group: GroupEvidence, variant: str | None) -> str:
    """The group's grade state; with a variant selected, recomputed from that variant alone."""
    if variant is None or group.grade is None:
        return str(group.record.get("grade") or (group.grade or {}).get("state") or "unavailable")
    if visible_grade_errors(group, variant):
        return "grade-error"
    checks = [c for c in group.grade.get("checks") or [] if c.get("variant") == variant]
    if checks and all(c.get("state") == "unavailable" for c in checks):
        return "unavailable"
    return "complete"


def declared_turns(definition: Mapping[str, Any], run: Mapping[str, Any] | None) -> list[str]:
    """The declared prompts: from the definition, else from the run record."""
    declared = definition.get("input") or {}
    if isinstance(declared.get("prompt"), str):
        return [declared["prompt"]]
    if isinstance(declared.get("turns"), list):
        return [str(t) for t in declared["turns"]]
    return [str(p) for p in (run or {}).get("prompts") or []]


# ---------------------------------------------------------------------------------------------
# Formatting


def escape_cell(text: str) -> str:
    """Backslash first, then CR, LF and TAB as `\\r`, `\\n`, `\\t`: one cell stays one cell."""
    return text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def row(*cells: str) -> str:
    """One TAB-separated row of escaped cells."""
    return "\t".join(escape_cell(cell) for cell in cells)


def js_number(value: float) -> str:
    """A float as JavaScript's `String(number)` prints it (shortest digits, JS exponent rules)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    k = len(digits)
    n = int(digits_tuple.exponent) + k  # value = 0.digits × 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    exponent = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if exponent > 0 else '-'}{abs(exponent)}"


def format_number(value: Any) -> str:
    """Integers as they are; other numbers rounded to 8 decimals (reference §8.5)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "unavailable"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_number(value)  # toFixed gives up on these too
    # JavaScript's toFixed rounds halves away from zero on the exact binary value.
    rounded = Decimal(value).quantize(
        Decimal("1e-8"), rounding=ROUND_HALF_UP, context=Context(prec=40)
    )
    return js_number(float(rounded))


def compact_json(value: Any) -> str:
    """`JSON.stringify` without spacing: insertion order, no ASCII escaping, JS numbers."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{compact_json(v)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _text_block(label: str, text: str, indent: str) -> list[str]:
    """`label: text`, or `label:` and the lines indented, for multi-line text (printed raw)."""
    if "\n" not in text:
        return [f"{indent}{label}: {text}" if text else f"{indent}{label}:"]
    inner = " " * max(len(indent) + 2, 4)
    return [f"{indent}{label}:", *(f"{inner}{line}" for line in text.split("\n"))]


def relative(result_dir: Path, path: Path | str) -> str:
    """A path relative to the result directory with `/` separators, else absolute."""
    target = Path(path)
    try:
        return target.relative_to(result_dir).as_posix()
    except ValueError:
        return target.as_posix()


def provider_label(run: Mapping[str, Any]) -> str | None:
    """`scripted (cassette <path>)` and friends; None when the run records no provider."""
    provider = run.get("provider")
    if not isinstance(provider, Mapping) or not provider.get("mode"):
        return None
    mode = str(provider["mode"])
    cassette = provider.get("cassette")
    return f"{mode} (cassette {cassette})" if cassette else mode


def tool_names(run: Mapping[str, Any]) -> list[str]:
    """Distinct tool names of a run, in order of first use."""
    names: list[str] = []
    for turn in run.get("turns") or []:
        for call in turn.get("toolActivity") or []:
            name = str(call.get("toolName"))
            if name not in names:
                names.append(name)
    return names


def changes_of(run: Mapping[str, Any]) -> dict[str, list[str]]:
    """The run's final workspace changes (created, modified, deleted)."""
    changes = mapping(mapping(run.get("effects")).get("changes"))
    return {
        key: [str(p) for p in changes.get(key) or []] for key in ("created", "modified", "deleted")
    }


def usage_cells(usage: Any) -> list[str]:
    """The usage row's cells after its label."""
    if not isinstance(usage, Mapping):
        return ["unavailable"]
    cells = [
        f"input={format_number(usage.get('input'))}",
        f"output={format_number(usage.get('output'))}",
        f"cache-read={format_number(usage.get('cacheRead'))}",
        f"cache-write={format_number(usage.get('cacheWrite'))}",
    ]
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, Mapping) else None
    if isinstance(total, int | float) and not isinstance(total, bool):
        cells.append(f"cost={format_number(total)}")
    return cells


# ---------------------------------------------------------------------------------------------
# The result view


def render_text(result_dir: Path, *, group: str | None = None, variant: str | None = None) -> str:
    """The text view of a result or an aggregate directory; ends with a newline."""
    result_dir = Path(result_dir)
    if is_aggregate(result_dir):
        if group is not None or variant is not None:
            raise ViewError(
                "selectors are not supported for an aggregate; view an individual trial instead"
            )
        return render_aggregate_text(result_dir)
    summary = load_summary(result_dir)
    records = select_groups(summary, group)
    check_variant(variant)
    lines = [
        f"Result {summary.get('id', result_dir.name)} [{summary.get('state')}]",
        f"Path: {escape_cell(str(result_dir))}",
    ]
    lines.extend(_budget_rows(summary.get("budget")))
    for record in records:
        lines.append("")
        lines.extend(_group_lines(result_dir, load_group(result_dir, record), variant))
    return "\n".join(lines) + "\n"


def _budget_rows(budget: Any) -> list[str]:
    if not isinstance(budget, Mapping):
        return []
    exhausted = "true" if budget.get("exhausted") else "false"
    return [
        row(
            "budget",
            f"max-cost={format_number(budget.get('maxCost'))}",
            f"spent={format_number(budget.get('spent'))}",
            f"exhausted={exhausted}",
        )
    ]


def _group_lines(result_dir: Path, group: GroupEvidence, variant: str | None) -> list[str]:
    definition = group.definition
    record = group.record
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    group_type = definition.get("type") or (first_run or {}).get("evaluationType")
    lines = [f"Group {group.id} [{record.get('state')}] type={group_type}"]
    declared = definition.get("input") or {}
    turns = declared_turns(definition, first_run)
    if "turns" in declared:
        lines.append(f"Turns: {len(turns)}")
        for number, prompt in enumerate(turns, start=1):
            lines.extend(_text_block(f"Turn {number} prompt", prompt, "  "))
    elif turns:
        lines.extend(_text_block("Prompt", turns[0], ""))
    questions = [str(q) for q in definition.get("review_questions") or []]
    if questions:
        lines.append("Review questions:")
        lines.extend(f"  - {q}" for q in questions)

    lines.append(f"Grade [{selected_grade_state(group, variant)}]")
    checks = [
        c
        for c in (group.grade or {}).get("checks") or []
        if variant is None or c.get("variant") == variant
    ]
    lines.extend(_check_row(c) for c in checks)
    if not checks:
        lines.append("  (no selected checks)")
    grade_errors = visible_grade_errors(group, variant)
    if grade_errors:
        lines.append("Grade errors:")
        lines.extend(
            row("error", "grade", str(e.get("id") or "system"), str(e.get("reason")))
            for e in grade_errors
        )
    group_errors = [e for e in record.get("errors") or [] if isinstance(e, Mapping)]
    if group_errors:
        lines.append("Group errors:")
        lines.extend(
            row(
                "error",
                "group",
                str(e.get("artifact") or e.get("kind")),
                str(e.get("message")),
            )
            for e in group_errors
        )
    comparisons = (group.grade or {}).get("comparisons") or []
    if variant is None and comparisons:
        lines.append("Comparisons:")
        lines.extend(_comparison_row(c) for c in comparisons)
    lines.extend(_review_lines(group.review, variant))
    for name in VARIANTS:
        if variant is not None and name != variant:
            continue
        lines.append("")
        lines.extend(_variant_lines(result_dir, group, name))
    lines.append(
        row(
            "artifacts",
            f"definition=groups/{group.id}/definition.json",
            f"grade=groups/{group.id}/{group.grade_file}",
            f"group=groups/{group.id}/{group.group_file}",
        )
    )
    return lines


def _check_row(check: Mapping[str, Any]) -> str:
    observed = check.get("observed")
    if check.get("kind") == "response-text" and isinstance(observed, Mapping):
        shown = f"response@turn:{observed.get('turn')}"
    else:
        shown = compact_json(observed)
    return row(
        "check",
        str(check.get("id")),
        str(check.get("variant")),
        str(check.get("kind")),
        str(check.get("state")),
        f"expected={compact_json(check.get('expected'))}",
        f"observed={shown}",
    )


def _comparison_row(comparison: Mapping[str, Any]) -> str:
    sides = []
    for side in VARIANTS:
        data = mapping(comparison.get(side))
        sides.append(f"{side}={data.get('check')}:{data.get('state')}")
    return row(
        "comparison",
        str(comparison.get("id")),
        str(comparison.get("kind")),
        str(comparison.get("transition")),
        *sides,
    )


def _review_lines(review: Mapping[str, Any] | None, variant: str | None) -> list[str]:
    if not isinstance(review, Mapping):
        return []
    lines = [
        f"Advisory review [{review.get('state')}] model={review.get('model')} "
        "(not canonical evidence)"
    ]
    shown = [v for v in VARIANTS if variant is None or v == variant]
    for number, answer in enumerate(review.get("answers") or [], start=1):
        if not isinstance(answer, Mapping):
            continue
        lines.append(
            row(
                "review",
                f"Q{number}",
                *(f"{v}={answer.get(v)}" for v in shown),
                str(answer.get("rationale")),
            )
        )
    lines.extend(row("error", "review", str(e)) for e in review.get("errors") or [])
    return lines


def _variant_lines(result_dir: Path, group: GroupEvidence, variant: str) -> list[str]:
    run = group.runs.get(variant)
    if run is None:
        return [f"{variant.capitalize()} [missing]", "  error: run.json is missing"]
    state = run.get("state")
    complete = state == "complete"
    lines = [f"{variant.capitalize()} [{state}]"]
    provider = provider_label(run)
    if provider:
        lines.append(f"  provider: {escape_cell(provider)}")
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    if run.get("evaluationType") == "description" and (complete or turns):
        activation = run.get("activation") or {}
        prefix = "" if complete else "observed "
        read = "yes" if activation.get("targetRead") else "no"
        read_turns = ",".join(str(t) for t in activation.get("readTurns") or []) or "none"
        lines.append(f"  {prefix}target-read: {read}")
        lines.append(f"  {prefix}read-turns: {read_turns}")
    delivery = run.get("delivery")
    if run.get("evaluationType") == "body" and isinstance(delivery, Mapping):
        lines.append(f"  delivery: {delivery.get('kind')} on turn {delivery.get('turn')}")
        lines.append(f"  tools-used: {escape_cell(','.join(tool_names(run))) or 'none'}")
        for key, paths in changes_of(run).items():
            lines.append(row("  changes", key, *paths))
    for turn in turns:
        flags = "settled" if turn.get("settled") else "unsettled"
        if turn.get("targetRead"):
            flags += ", target-read"
        lines.append(f"  Turn {turn.get('turn')} [{flags}]")
        lines.extend(_text_block("response", str(turn.get("response") or ""), "    "))
    if complete and not turns:
        lines.extend(_text_block("response", str(run.get("response") or ""), "  "))
    lines.append(row("  usage", *usage_cells(run.get("usage"))))
    process = mapping(run.get("process"))
    assistant_error = process.get("assistantError") or next(
        (t.get("assistantError") for t in turns if t.get("assistantError")), None
    )
    if assistant_error:
        lines.append(f"  assistant-error: {escape_cell(str(assistant_error))}")
    if process.get("terminationReason"):
        lines.append(f"  termination: {escape_cell(str(process['terminationReason']))}")
    for key, label in (("protocolErrors", "protocol-errors"), ("parseErrors", "parse-errors")):
        count = len(process.get(key) or [])
        if count:
            lines.append(f"  {label}: {count}")
    error = run.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        lines.append(f"  error: {escape_cell(str(error['message']))}")
    if run.get("hint"):
        lines.append(f"  hint: {escape_cell(str(run['hint']))}")
    lines.append(row("  artifacts", *_artifact_cells(result_dir, group, variant, run)))
    return lines


def artifact_paths(
    result_dir: Path, group: GroupEvidence, variant: str, run: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(name, path relative to the result) of every raw artifact a run names, run file first."""
    variant_dir = group.directory / variant
    base = relative(result_dir, variant_dir)
    found = [("run", f"{base}/{group.run_files.get(variant) or 'run.json'}")]
    if run.get("workspace"):
        found.append(("workspace", f"{base}/workspace"))
    artifacts = mapping(run.get("artifacts"))
    transcript = artifacts.get("transcript")
    found.append(
        ("transcript", f"{base}/{transcript if isinstance(transcript, str) else 'transcript.json'}")
    )
    for name, value in artifacts.items():
        if name != "transcript" and isinstance(value, str):
            found.append((str(name), f"{base}/{value}"))
    return found


def _artifact_cells(
    result_dir: Path, group: GroupEvidence, variant: str, run: Mapping[str, Any]
) -> list[str]:
    return [f"{name}={path}" for name, path in artifact_paths(result_dir, group, variant, run)]


# ---------------------------------------------------------------------------------------------
# The aggregate view


@dataclass(frozen=True, slots=True)
class Rate:
    """A pass rate with its 95% Wilson interval; None parts when nothing was observed."""

    passes: int
    total: int
    rate: float | None
    interval: tuple[float, float] | None


def rate_of(counts: Mapping[str, Any], recorded: Mapping[str, Any] | None = None) -> Rate:
    """The recorded rate and interval of pass/fail counts, computed when the file lacks them."""
    passes, fails = int(counts.get("pass") or 0), int(counts.get("fail") or 0)
    total = passes + fails + int(counts.get("unavailable") or 0)
    recorded = recorded if recorded is not None else counts
    rate = recorded.get("passRate")
    interval = recorded.get("interval")
    if "passRate" not in recorded:
        rate = passes / (passes + fails) if passes + fails else None
        interval = wilson_interval(passes, passes + fails)
    pair = (float(interval[0]), float(interval[1])) if isinstance(interval, list | tuple) else None
    return Rate(passes, total, float(rate) if isinstance(rate, int | float) else None, pair)


def comparison_stats(comparison: Mapping[str, Any]) -> tuple[Rate, Rate, float, bool]:
    """Both variants' rates, the McNemar p-value, and whether the difference is unresolved."""
    rates = mapping(comparison.get("rates"))
    baseline = rate_of(comparison.get("baseline") or {}, rates.get("baseline") or None)
    candidate = rate_of(comparison.get("candidate") or {}, rates.get("candidate") or None)
    p_value = comparison.get("mcnemarP")
    if not isinstance(p_value, int | float):
        transitions = comparison.get("transitions") or {}
        p_value = mcnemar_exact(
            int(transitions.get("fail-to-pass") or 0), int(transitions.get("pass-to-fail") or 0)
        )
    separated = (
        baseline.interval is not None
        and candidate.interval is not None
        and (
            baseline.interval[1] < candidate.interval[0]
            or candidate.interval[1] < baseline.interval[0]
        )
    )
    return baseline, candidate, float(p_value), not (separated and p_value < ALPHA)


def format_interval(interval: Sequence[float] | None) -> str:
    """`[lo,hi]` with view number formatting, or `unavailable`."""
    if interval is None:
        return "unavailable"
    return f"[{format_number(interval[0])},{format_number(interval[1])}]"


def _rate_cells(prefix: str, rate: Rate) -> list[str]:
    shown = format_number(rate.rate) if rate.rate is not None else "unavailable"
    return [f"{prefix}rate={shown}", f"{prefix}interval={format_interval(rate.interval)}"]


def render_aggregate_text(aggregate_dir: Path) -> str:
    """The aggregate view: trials, then per group comparison and check counts with statistics."""
    data = read_json_file(aggregate_dir / "aggregate.json")
    if not isinstance(data, Mapping):
        raise ViewError(
            f"{aggregate_dir / 'aggregate.json'} is not an object; the evidence is damaged"
        )
    trials = [t for t in data.get("trials") or [] if isinstance(t, Mapping)]
    lines = [
        f"Aggregate {data.get('id', aggregate_dir.name)} [{data.get('state')}] "
        f"trials={len(trials)}/{data.get('requestedTrials')}",
        f"Path: {escape_cell(str(aggregate_dir))}",
    ]
    lines.extend(_budget_rows(data.get("budget")))
    inputs = data.get("inputs")
    if isinstance(inputs, Mapping) and "identical" in inputs:
        lines.append(row("inputs", f"identical={'true' if inputs['identical'] else 'false'}"))
    lines.extend(row("trial", str(t.get("id")), str(t.get("state"))) for t in trials)
    for group in data.get("groups") or []:
        lines.append("")
        lines.append(f"Group {group.get('id')} trials={group.get('trials')}")
        for comparison in group.get("comparisons") or []:
            lines.append(_aggregate_comparison_row(comparison))
        for check in group.get("checks") or []:
            rate = rate_of(check)
            lines.append(
                row(
                    "check",
                    str(check.get("id")),
                    str(check.get("variant")),
                    str(check.get("kind")),
                    f"pass={rate.passes}/{rate.total}",
                    *_rate_cells("", rate),
                )
            )
    return "\n".join(lines) + "\n"


def _aggregate_comparison_row(comparison: Mapping[str, Any]) -> str:
    baseline, candidate, p_value, unresolved = comparison_stats(comparison)
    transitions: Iterable[tuple[str, Any]] = (comparison.get("transitions") or {}).items()
    cells = [
        "comparison",
        str(comparison.get("id")),
        str(comparison.get("kind")),
        f"baseline={baseline.passes}/{baseline.total}",
        f"candidate={candidate.passes}/{candidate.total}",
        *(f"{name}={count}" for name, count in transitions if count),
        *_rate_cells("baseline-", baseline),
        *_rate_cells("candidate-", candidate),
        f"mcnemar-p={format_number(p_value)}",
    ]
    if unresolved:
        cells.append("difference unresolved")
    return row(*cells)
