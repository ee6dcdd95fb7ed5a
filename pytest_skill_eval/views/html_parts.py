"""The plain values the HTML templates are given, part by part: what `html.py` and
`html_run.py` build from the evidence and the templates show (escaping every value).

A value read from the evidence as it is (an id, a state) stays `object`: the template prints
it; whatever a view computes has its type.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from .decision import BottomLine
from .diff import FileChange
from .glance import ConsistencyCell
from .markup import Link
from .usage import UsageRow

# ---------------------------------------------------------------------------------------------
# The report's head: the decision and the groups across hosts


class Gate(TypedDict):
    """The significance gate's decision, when the run was gated."""

    failed: bool
    text: str


class Decision(TypedDict):
    """The bottom line that leads the report: the gate's decision, then each group's."""

    gate: Gate | None
    groups: list[BottomLine]


class CrossHostRow(TypedDict):
    """A check or comparison of a group on each host, and whether it held on all of them."""

    kind: str
    id: str
    cells: list[str]
    held: bool


class CrossHost(TypedDict):
    """A group that ran on several hosts: each host's states and the verdict."""

    id: str
    hosts: tuple[str, ...]
    held: bool
    verdict: str
    cannot_run: dict[str, str]
    rows: list[CrossHostRow]


# ---------------------------------------------------------------------------------------------
# One group of a result


class GradeError(TypedDict):
    """Why a grade is `grade-error`: the expectation (`system`: none) and the reason."""

    id: object
    reason: str


class GroupError(TypedDict):
    """A group-level problem: the artifact (or kind) it concerns and the message."""

    artifact: object
    message: str


class Side(TypedDict):
    """One variant's side of a comparison: its check and that check's state."""

    check: object
    state: object


class Comparison(TypedDict):
    """A comparison of a grade: each side and the transition between them."""

    id: object
    kind: object
    sides: list[Side]
    transition: object


class Review(TypedDict):
    """The semantic review of a group: its state, model, answers and errors."""

    state: object
    model: object
    answers: list[dict[str, object]]
    errors: list[object]


class GroupView(TypedDict):
    """One group of a result: its record and grade, declared turns and questions, checks,
    errors, comparisons, review, each variant's run, usage and raw links."""

    id: str
    state: object
    grade: object
    type: object
    position: object
    variant_states: list[tuple[str, object]]
    turns: list[str]
    questions: list[object]
    checks: list[dict[str, object]]
    grade_errors: list[GradeError]
    group_errors: list[GroupError]
    comparisons: list[Comparison]
    review: Review | None
    variants: list[VariantView | MissingVariant]
    usage: list[UsageRow]
    links: list[Link]


# ---------------------------------------------------------------------------------------------
# Rates of an aggregate


class RateBar(TypedDict):
    """An interval bar's positions, in percent of its width."""

    left: str
    width: str
    point: str


class RateView(TypedDict):
    """A rate as shown: passes of total, the bar (None: no observation) and the numbers."""

    passes: int
    total: int
    bar: RateBar | None
    shown: str


class TriggerSide(TypedDict):
    """One variant's trigger rate: reads of observed runs, and the runs left out."""

    variant: str
    read: int
    observed: int
    rate: RateView
    excluded: str
    unobserved: object


class TriggerRow(TypedDict):
    """One trigger rate of a skill: each variant's side and the difference between them."""

    name: str
    sides: list[TriggerSide]
    difference: str | None


class Trigger(TypedDict):
    """A skill's trigger rates."""

    label: str
    rates: list[TriggerRow]


class AggregateComparison(TypedDict):
    """A comparison over trials: each side's rate, the transitions, the test and its stop."""

    id: object
    kind: object
    baseline: RateView
    candidate: RateView
    transitions: str
    p_value: str
    unresolved: bool
    sample_size: str | None
    sequential: str | None


class AggregateCheck(TypedDict):
    """A check over trials: its counts, rate and consistency."""

    id: object
    variant: object
    kind: object
    passed: object
    failed: object
    unavailable: object
    rate: RateView
    consistency: list[ConsistencyCell]


class AggregateGroup(TypedDict):
    """A group over trials: why its trials stopped, its comparisons, checks and usage."""

    id: object
    trials: object
    stop: str | None
    comparisons: list[AggregateComparison]
    checks: list[AggregateCheck]
    usage: list[UsageRow]


# ---------------------------------------------------------------------------------------------
# One variant's run (`html_run.py`)


class Fact(TypedDict):
    """One fact row; `form` says how the template shows `value` (text, clip, json, usage...)."""

    name: str
    value: object
    form: str
    cassette: object


class Call(TypedDict):
    """A tool call of a turn: the tool, how it ended, its arguments and its output."""

    tool: object
    outcome: str
    args: object
    output: str | None


class MessageCall(TypedDict):
    """A tool call a message asked for."""

    name: object
    arguments: object


class Message(TypedDict):
    """A transcript message: its role, thinking, text, the calls it asked for, its error."""

    role: str
    thinking: str
    text: str
    calls: list[MessageCall]
    error: str


class TurnView(TypedDict):
    """One turn: its flags, prompts, calls, reply, usage, time, workspace changes, messages."""

    number: object
    flags: str
    prompt: str
    delivered: str | None
    calls: list[Call]
    response: str
    assistant_error: str | None
    usage: str | None
    wall: int | None
    workspace: str | None
    messages: list[Message]


class Badge(TypedDict):
    """The provider mode's badge."""

    css: str
    title: str
    label: str


class MissingVariant(TypedDict):
    """A variant with no run record: the file it lacks."""

    missing: Literal[True]
    title: str
    file: str


class OfferedRow(TypedDict):
    """One skill as the host offered it to the model: its name, state and the text sent."""

    name: object
    state: str
    sent: object


class VariantView(TypedDict):
    """One variant's run: its state and mode, facts, raw links, turns and changed files."""

    missing: Literal[False]
    title: str
    name: str
    state: object
    mode: Badge | None
    facts: list[Fact]
    links: list[Link]
    turns: list[TurnView]
    changes: list[FileChange] | None
    offered: list[OfferedRow]
