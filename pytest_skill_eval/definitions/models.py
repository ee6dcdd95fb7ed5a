"""Schema v1 group and suite models: the single description of every definition rule."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Protocol, Self

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..common.wording import counted
from ..nodeids import DEFAULT_HOST
from .conversion import pointer_of
from .expectations import (
    Expectation,
    GroupType,
    ResourceReadExpectation,
)
from .fields import (
    VARIANTS,
    Boolean,
    DefinitionModel,
    Id,
    Index,
    Integer,
    NonEmptyStr,
    NotNull,
    RelativePath,
    SchemaVersion,
    SuiteReference,
    Text,
    Variant,
    rule_error,
    show,
    unique,
)
from .rules import check_command_placeholders, check_comparisons, fit_problem

NATIVE_TOOLS = frozenset({"read", "bash", "powershell", "edit", "write", "grep", "find", "ls"})
BODY_NATIVE_TOOLS = ("read", "write", "edit")
COMMAND_TOOL = "run_command"
MAX_COMMAND_TIMEOUT_MS = 600_000
DEFAULT_COMMAND_TIMEOUT_MS = 120_000

ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_ENVIRONMENT_KEYS = frozenset(
    [
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "SHELL",
        "BASH_ENV",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PI_PACKAGE_DIR",
    ]
)
RESERVED_ENVIRONMENT_PREFIXES = ("SKILL_EVAL_", "PI_", "LD_", "DYLD_")
SECRET_LIKE = re.compile(r"TOKEN|SECRET|PASSWORD|API[_-]?KEY|PRIVATE[_-]?KEY|CREDENTIAL", re.I)


class Input(DefinitionModel):
    """The task: one prompt or ordered turns."""

    prompt: Annotated[NonEmptyStr | None, NotNull] = None
    turns: Annotated[tuple[NonEmptyStr, ...] | None, NotNull, Field(min_length=1)] = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if self.prompt is not None and self.turns is not None:
            raise rule_error("give either 'prompt' or 'turns', not both", at=("turns",))
        if self.prompt is None and self.turns is None:
            raise rule_error("needs 'prompt' (one string) or 'turns' (an array of strings)")
        return self


class Command(DefinitionModel):
    """A command the subject may run through the run_command tool."""

    id: Id
    argv: Annotated[tuple[NonEmptyStr, ...], Field(min_length=1)]
    timeout_ms: Annotated[Integer, Field(ge=1, le=MAX_COMMAND_TIMEOUT_MS)] | None = None

    @property
    def effective_timeout_ms(self) -> int:
        """The declared timeout, or the 120000 ms default."""
        return DEFAULT_COMMAND_TIMEOUT_MS if self.timeout_ms is None else self.timeout_ms


class ExtensionBundle(DefinitionModel):
    """An extension entry file and the directories copied with it."""

    entry: RelativePath
    resources: Annotated[tuple[RelativePath, ...], Field(min_length=1), unique("resource")]

    @model_validator(mode="after")
    def _entry_inside_resources(self) -> Self:
        if not any(self.entry.startswith(resource + "/") for resource in self.resources):
            raise rule_error(
                f"entry {show(self.entry)} must lie inside one of the bundle's resources "
                f"{show(list(self.resources))}; add its directory to 'resources'",
                at=("entry",),
            )
        return self


def _name_problem(key: str) -> str | None:
    if not ENVIRONMENT_NAME.fullmatch(key):
        return f"{show(key)} is not a valid variable name (letters, digits, '_', no leading digit)"
    upper = key.upper()
    if upper in RESERVED_ENVIRONMENT_KEYS:
        return f"{key} is reserved for the evaluator and cannot be set by a definition"
    if upper.startswith(RESERVED_ENVIRONMENT_PREFIXES):
        return (
            f"{key} uses a reserved prefix ({', '.join(RESERVED_ENVIRONMENT_PREFIXES)}) "
            "and cannot be set by a definition"
        )
    return None


class Environment(DefinitionModel):
    """Literal (recorded) and inherited (never recorded) environment variables."""

    literal: dict[str, Text]
    inherit: Annotated[tuple[NonEmptyStr, ...], unique("variable")]

    @model_validator(mode="after")
    def _names(self) -> Self:
        for key in self.literal:
            problem = _name_problem(key)
            if problem is None and SECRET_LIKE.search(key):
                problem = (
                    f"{key} looks like a secret; literal values are recorded in evidence, so "
                    "pass it by name through 'inherit' instead"
                )
            if problem is not None:
                raise rule_error(problem, at=("literal", key))
        literal = {key.upper() for key in self.literal}
        for index, key in enumerate(self.inherit):
            problem = _name_problem(key)
            if problem is None and key.upper() in literal:
                problem = f"{key} is also set in 'literal'; declare each variable in one place"
            if problem is not None:
                raise rule_error(problem, at=("inherit", index))
        return self


class HostFacts(Protocol):
    """What a definition's rules ask of a host (its registration, `hosts/registration.py`)."""

    @property
    def name(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def extensions(self) -> bool: ...
    @property
    def thinking(self) -> tuple[str, ...] | None: ...


# The validation context key naming the registered hosts, in registration order: the loader's
# caller passes them (`model_validate(…, context={HOSTS: registered()})`).
HOSTS = "hosts"


def _hosts(context: Any) -> tuple[HostFacts, ...]:
    """The hosts a validation context names (none: a model built without the loader)."""
    found = context.get(HOSTS) if isinstance(context, dict) else None
    return tuple(found) if isinstance(found, Sequence) else ()


class Runtime(DefinitionModel):
    """The host profile shared by both variants."""

    host: str  # a registered host (`hosts/registry.py`)
    prompt: Literal["isolated", "host"] = "isolated"
    session: Boolean
    extensions: tuple[ExtensionBundle, ...]
    environment: Environment

    @field_validator("host")
    @classmethod
    def _registered_host(cls, host: str, info: ValidationInfo) -> str:
        known = [registered.name for registered in _hosts(info.context)]
        if known and host not in known:
            listed = ", ".join(repr(name) for name in known[:-1]) + f" or {known[-1]!r}"
            raise rule_error(f"must be {listed} (got {show(host)})")
        return host

    @model_validator(mode="after")
    def _unique_bundles(self) -> Self:
        seen: dict[tuple[str, tuple[str, ...]], int] = {}
        for index, bundle in enumerate(self.extensions):
            key = (bundle.entry, bundle.resources)
            if key in seen:
                raise rule_error(
                    f"duplicate extension bundle (same as index {seen[key]}); declare it once",
                    at=("extensions", index),
                )
            seen[key] = index
        return self


DEFAULT_RUNTIME = Runtime(
    host=DEFAULT_HOST,
    prompt="isolated",
    session=False,
    extensions=(),
    environment=Environment(literal={}, inherit=()),
)


class WorkingTreeSource(DefinitionModel):
    """Skills and context from the definition root's working tree."""

    kind: Literal["working-tree"]


class GitSource(DefinitionModel):
    """Skills and context from a Git commit."""

    kind: Literal["git"]
    ref: NonEmptyStr


Source = Annotated[WorkingTreeSource | GitSource, Field(discriminator="kind")]


class VariantEnvironment(DefinitionModel):
    """What one variant registers: ordered skills, its target, and context."""

    source: Source
    skills: Annotated[tuple[RelativePath, ...], unique("skill")]
    target: Index | None
    context: Annotated[tuple[RelativePath, ...], unique("context entry")]

    @model_validator(mode="after")
    def _target_in_range(self) -> Self:
        if self.target is not None and self.target >= len(self.skills):
            if not self.skills:
                message = "must be null when 'skills' is empty"
            else:
                message = (
                    f"target {self.target} is out of range: 'skills' has {len(self.skills)} "
                    f"entries (use 0..{len(self.skills) - 1} or null)"
                )
            raise rule_error(message, at=("target",))
        return self

    @property
    def target_skill(self) -> str | None:
        """The declared path of the target skill, or None."""
        return None if self.target is None else self.skills[self.target]


class Variants(DefinitionModel):
    """Exactly the baseline and candidate environments; also readable as a mapping."""

    baseline: VariantEnvironment
    candidate: VariantEnvironment

    @model_validator(mode="after")
    def _candidate_has_target(self) -> Self:
        if self.candidate.target is None and self.candidate.skills:
            raise rule_error(
                "the candidate declares skills, so it must name its target: set 'target' to "
                "the zero-based index of the skill under evaluation",
                at=("candidate", "target"),
            )
        return self

    def __getitem__(self, variant: str) -> VariantEnvironment:
        if variant == "baseline":
            return self.baseline
        if variant == "candidate":
            return self.candidate
        raise KeyError(variant)

    def keys(self) -> tuple[Variant, ...]:
        """The variant names, baseline first."""
        return VARIANTS

    def values(self) -> tuple[VariantEnvironment, ...]:
        """The environments, baseline first."""
        return (self.baseline, self.candidate)

    def items(self) -> tuple[tuple[Variant, VariantEnvironment], ...]:
        """(name, environment) pairs, baseline first."""
        return (("baseline", self.baseline), ("candidate", self.candidate))


class ModelChoice(DefinitionModel):
    """The subject's provider/model and optional thinking level."""

    model: NonEmptyStr
    thinking: Annotated[NonEmptyStr | None, NotNull] = None


class Group(DefinitionModel):
    """One behavioural question asked of a baseline and a candidate variant."""

    schema_version: SchemaVersion
    kind: Literal["group"]
    id: Id
    type: GroupType
    input: Input
    fixture: RelativePath | None
    tools: Annotated[tuple[NonEmptyStr, ...], unique("tool")]
    commands: Annotated[Annotated[tuple[Command, ...], Field(min_length=1)] | None, NotNull] = None
    runtime: Annotated[Runtime | None, NotNull] = None
    variants: Variants
    expectations: tuple[Expectation, ...]
    review_questions: tuple[NonEmptyStr, ...]
    model: Annotated[ModelChoice | None, NotNull] = None

    # The registered hosts this group was validated against: `on_host` checks another by them.
    _hosts: tuple[HostFacts, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _cross_field_rules(self, info: ValidationInfo) -> Self:
        self._hosts = _hosts(info.context)
        self._check_tools()
        skill_counts = [len(self.variants.baseline.skills), len(self.variants.candidate.skills)]
        check_command_placeholders([c.argv for c in self.commands or ()], skill_counts)
        self._check_expectations()
        check_comparisons(self.expectations)
        self._check_host()
        return self

    def _check_host(self) -> None:
        """What the host cannot run is refused at collection, not at run time."""
        runtime = self.effective_runtime
        registration = next((h for h in self._hosts if h.name == runtime.host), None)
        if registration is None:
            return  # validated without the registered hosts, or an unknown one (refused above)
        if runtime.extensions and not registration.extensions:
            raise rule_error(
                f"runtime extension bundles are Pi's; runtime.host {runtime.host} cannot load them",
                ("runtime", "extensions"),
            )
        thinking = self.model.thinking if self.model is not None else None
        accepted = registration.thinking
        if thinking is not None and accepted is not None and thinking not in accepted:
            levels = ", ".join(accepted)
            message = (
                f"thinking level '{thinking}' has no {registration.display_name} equivalent; "
                f"use {levels}"
            )
            raise rule_error(message, ("model", "thinking"))

    def on_host(self, host: str) -> Group:
        """This group with its runtime on `host` (an invocation's choice), checked like a
        declared one; the rest of the runtime is kept."""
        if host == self.effective_runtime.host:
            return self
        runtime = self.effective_runtime.model_copy(update={"host": host})
        moved = self.model_copy(update={"runtime": runtime})
        moved._check_host()
        return moved

    def cannot_run(self, host: str) -> str | None:
        """Why this group cannot run on `host` (an invocation's choice), or None if it can: a
        fact of that host, reported as its items' skip, not an error of the suite."""
        try:
            self.on_host(host)
        except PydanticCustomError as error:
            return error.message()
        return None

    @property
    def turns(self) -> tuple[str, ...]:
        """The declared prompts in order; a single `prompt` is one turn."""
        if self.input.turns is not None:
            return self.input.turns
        assert self.input.prompt is not None  # guaranteed by Input's validator
        return (self.input.prompt,)

    @property
    def is_one_shot(self) -> bool:
        """A description group with a single prompt runs in one-shot JSON mode."""
        return self.type == "description" and self.input.prompt is not None

    @property
    def effective_runtime(self) -> Runtime:
        """The declared runtime, or the default: pi host, isolated prompt, nothing else."""
        return DEFAULT_RUNTIME if self.runtime is None else self.runtime

    def expectations_for(self, variant: str) -> tuple[Expectation, ...]:
        """The expectations of one variant, in declaration order."""
        return tuple(e for e in self.expectations if e.variant == variant)

    def _check_tools(self) -> None:
        seen: dict[str, int] = {}
        for index, command in enumerate(self.commands or ()):
            if command.id in seen:
                raise rule_error(
                    f"duplicate command id '{command.id}' (already at index {seen[command.id]})",
                    ("commands", index, "id"),
                )
            seen[command.id] = index
        if self.commands is not None and self.type != "body":
            raise rule_error("'commands' are only valid in body groups; remove them", ("commands",))
        if self.commands is not None and COMMAND_TOOL not in self.tools:
            raise rule_error(
                f"'commands' need the '{COMMAND_TOOL}' tool; add it to 'tools'", ("commands",)
            )
        has_extensions = bool(self.effective_runtime.extensions)
        for index, tool in enumerate(self.tools):
            at = ("tools", index)
            if self.type == "description":
                if tool != "read":
                    raise rule_error(
                        f"description groups allow only the 'read' tool; remove '{tool}'", at
                    )
            elif tool == COMMAND_TOOL:
                if self.commands is None:
                    raise rule_error(
                        f"the '{COMMAND_TOOL}' tool needs declared 'commands' "
                        '(e.g. [{"id": "unit-tests", "argv": ["npm", "test"]}])',
                        at,
                    )
            elif tool in NATIVE_TOOLS and tool not in BODY_NATIVE_TOOLS:
                raise rule_error(
                    f"native tool '{tool}' is not supported; body groups allow read, write, "
                    f"edit, {COMMAND_TOOL} (with declared commands) and extension tools",
                    at,
                )
            elif tool not in NATIVE_TOOLS and not has_extensions:
                raise rule_error(
                    f"custom tool '{tool}' needs a runtime extension bundle that provides it; "
                    "declare one in runtime.extensions or remove the tool",
                    at,
                )

    def _check_expectations(self) -> None:
        first: dict[str, int] = {}
        for index, expectation in enumerate(self.expectations):
            if expectation.id in first:
                raise rule_error(
                    f"duplicate expectation id '{expectation.id}' "
                    f"(already used by {pointer_of(('expectations', first[expectation.id]))})",
                    ("expectations", index, "id"),
                )
            first[expectation.id] = index
            self._check_expectation(index, expectation)

    def _check_expectation(self, index: int, expectation: Expectation) -> None:
        problem = fit_problem(expectation, self.type, len(self.turns))
        if problem is not None:
            field, message = problem
            raise rule_error(message, ("expectations", index, field))
        if isinstance(expectation, ResourceReadExpectation) and expectation.index is not None:
            environment = self.variants[expectation.variant]
            listed = environment.skills if expectation.resource == "skill" else environment.context
            name = "skills" if expectation.resource == "skill" else "context"
            if expectation.index >= len(listed):
                raise rule_error(
                    f"index {expectation.index} is out of range: the {expectation.variant} "
                    f"variant's '{name}' has {counted(len(listed), 'entry')}",
                    ("expectations", index, "index"),
                )


class Suite(DefinitionModel):
    """An ordered list of group files."""

    schema_version: SchemaVersion
    kind: Literal["suite"]
    id: Id
    groups: Annotated[tuple[SuiteReference, ...], Field(min_length=1), unique("group reference")]
