"""Formatting shared by the text view and the HTML report: numbers, rates, cells, run facts.

Nothing here reads files; every function takes evidence already loaded and says how it is shown,
so both views print the same number, interval or path the same way (reference §8).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from pathlib import Path
from typing import Any

from ..analysis.trials import ALPHA, mcnemar_exact, wilson_interval
from ..evidence.states import SIMULATED_MODES


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty one (evidence may lack optional parts)."""
    return value if isinstance(value, Mapping) else {}


def expectation_variants(definition: Mapping[str, Any]) -> dict[str, str]:
    """Expectation id to variant, from the group definition."""
    found: dict[str, str] = {}
    for expectation in definition.get("expectations") or []:
        if isinstance(expectation, dict):
            identity, variant = expectation.get("id"), expectation.get("variant")
            if isinstance(identity, str) and isinstance(variant, str):
                found[identity] = variant
    return found


def declared_turns(definition: Mapping[str, Any], run: Mapping[str, Any] | None) -> list[str]:
    """The declared prompts: from the definition, else from the run record."""
    declared = definition.get("input") or {}
    if isinstance(declared.get("prompt"), str):
        return [declared["prompt"]]
    if isinstance(declared.get("turns"), list):
        return [str(t) for t in declared["turns"]]
    return [str(p) for p in (run or {}).get("prompts") or []]


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


def text_block(label: str, text: str, indent: str) -> list[str]:
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


def tool_outcome(call: Mapping[str, Any]) -> str:
    """`incomplete`, `failed` (an error, or a declared command that exited non-zero, was killed
    or timed out) or `succeeded`, as `tool-call` grades it."""
    if not call.get("completed"):
        return "incomplete"
    return "failed" if call.get("isError") or call.get("exitCode", 0) != 0 else "succeeded"


def changes_of(run: Mapping[str, Any]) -> dict[str, list[str]]:
    """The run's final workspace changes (created, modified, deleted)."""
    changes = mapping(mapping(run.get("effects")).get("changes"))
    return {
        key: [str(p) for p in changes.get(key) or []] for key in ("created", "modified", "deleted")
    }


# Provider modes whose cost is priced like a real model but never paid.


def run_spend(run: Mapping[str, Any]) -> tuple[float, bool] | None:
    """What a run cost in USD and whether it was only simulated; None when it records no cost.

    Records written before `spend` existed fall back to the usage total and the provider mode.
    """
    spend = run.get("spend")
    usd = spend.get("usd") if isinstance(spend, Mapping) else None
    if isinstance(usd, int | float) and not isinstance(usd, bool):
        return float(usd), bool(mapping(spend).get("simulated"))
    total = mapping(mapping(run.get("usage")).get("cost")).get("total")
    if not isinstance(total, int | float) or isinstance(total, bool):
        return None
    return float(total), mapping(run.get("provider")).get("mode") in SIMULATED_MODES


def cost_label(usd: Any, simulated: bool, *, dollar: str = "$") -> str:
    """A cost as shown: "$0.01" spent, or "simulated $0.01" (priced, never paid)."""
    shown = f"{dollar}{format_number(usd)}"
    return f"simulated {shown}" if simulated else shown


def run_cost_label(run: Mapping[str, Any]) -> str | None:
    """The run's cost as shown everywhere (terminal, views, JUnit); None when it has none."""
    spend = run_spend(run)
    return cost_label(*spend) if spend is not None else None


def usage_cells(usage: Any, spend: tuple[float, bool] | None = None) -> list[str]:
    """The usage row's cells after its label; `spend` (the run's) gives the cost cell."""
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
    if spend is not None:
        cells.append(f"cost={cost_label(*spend, dollar='')}")
    elif isinstance(total, int | float) and not isinstance(total, bool):
        cells.append(f"cost={format_number(total)}")
    return cells


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


def p_value_text(comparison: Mapping[str, Any]) -> str:
    """`McNemar p=…` over paired trials; `Fisher p=… unpaired: why` when an arm was reused."""
    unpaired = comparison.get("unpaired")
    if isinstance(unpaired, Mapping):
        return f"Fisher p={float(unpaired['p']):.4g} unpaired: {unpaired['why']}"
    return f"McNemar p={float(comparison.get('mcnemarP') or 0):.4g}"


def comparison_stats(comparison: Mapping[str, Any]) -> tuple[Rate, Rate, float, bool]:
    """Both variants' rates, the McNemar p-value, and whether the difference is unresolved."""
    rates = mapping(comparison.get("rates"))
    baseline = rate_of(comparison.get("baseline") or {}, rates.get("baseline") or None)
    candidate = rate_of(comparison.get("candidate") or {}, rates.get("candidate") or None)
    unpaired = comparison.get("unpaired")  # an arm reused from another invocation
    p_value = unpaired.get("p") if isinstance(unpaired, Mapping) else comparison.get("mcnemarP")
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
    recorded = comparison.get("differenceUnresolved")
    if isinstance(recorded, bool):  # the aggregate's own decision (sequential under `auto`)
        return baseline, candidate, float(p_value), recorded
    return baseline, candidate, float(p_value), not (separated and p_value < ALPHA)


def format_interval(interval: Sequence[float] | None) -> str:
    """`[lo,hi]` with view number formatting, or `unavailable`."""
    if interval is None:
        return "unavailable"
    return f"[{format_number(interval[0])},{format_number(interval[1])}]"


def describe(kind: str, data: Mapping[str, Any]) -> str:
    """One-paragraph text for a check or comparison sub-result."""
    if kind == "comparison":
        return (
            f"comparison {data['id']} ({data['kind']}): {data['transition']} "
            f"(baseline {data['baseline']['check']}={data['baseline']['state']}, "
            f"candidate {data['candidate']['check']}={data['candidate']['state']})"
        )
    excerpt = excerpt_of(data)
    # Second, so that JUnit's shortened `message` attribute (whole lines) still carries it.
    text = f"\nobserved text: {excerpt}" if excerpt is not None else ""
    return (
        f"check {data['id']} ({data['kind']}, {data['variant']}): {data['state']}{text}\n"
        f"expected: {_compact(data.get('expected'))}\n"
        f"observed: {_compact(observation(data))}"
    )


def observation(check: Mapping[str, Any]) -> Any:
    """A check's `observed` without the excerpt, which `excerpt_of` shows on its own."""
    observed = check.get("observed")
    if not isinstance(observed, Mapping) or "excerpt" not in observed:
        return observed
    return {k: v for k, v in observed.items() if k not in ("excerpt", "excerptAt")}


def excerpt_of(check: Mapping[str, Any]) -> str | None:
    """A failed text check's excerpt, quoted on one line with its offset; None without one.

    `…` marks text cut off before or after it; the check's hash names the whole text.
    """
    observed = check.get("observed")
    if not isinstance(observed, Mapping) or not isinstance(observed.get("excerpt"), str):
        return None
    at = observed.get("excerptAt")
    before = "…" if isinstance(at, int) and at > 0 else ""
    return f"at {at}: {before}{_compact(observed['excerpt'])}"


def _compact(value: Any) -> str:
    """Compact one-line JSON, as sub-result descriptions and JUnit properties show values."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def reused_label(marker: Mapping[str, Any]) -> str:
    """How a view names a reused run's source: `<result id> seal sha256:<root>`."""
    return f"{marker.get('result')} seal {marker.get('root')}"
