"""The controller's preparation of an invocation: check the hosts, pin Git sources, open the
ledger, and write each trial's invocation record (or a planned run's shard directory)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence

from ..analysis import floor_choice
from ..definitions import VARIANTS, DefinitionError, LoadedDefinition, LoadedGroup
from ..definitions.selection import recorded_selectors
from ..evidence.records import InvocationRecord
from ..evidence.store import utc_now
from ..evidence.summary import invocation_definitions, write_invocation
from ..hosts import check_environment
from ..hosts.registry import registration_for
from ..run import resume
from ..run.preflight import check_skills
from ..run.records import cannot_run_records
from ..scale.plan import Plan, check_groups
from ..scale.shard import create_shard_dir
from ..workspace import ResourceError
from .services import Services


def prepare_controller(services: Services) -> None:
    """Check the hosts in use, pin Git sources, open the ledger, and write each trial's
    invocation record. A wrong setup raises a SkillEvalError (a usage error to the glue)."""
    settings = services.settings
    if not settings.collect_only:
        for host in sorted(services.hosts_in_use()):
            services.binary(host)
    definitions = []
    invalid = False
    for path in settings.paths:
        try:
            loaded = services.definition(path)
        except DefinitionError:
            invalid = True  # reported as a collection error, with its pointer: no result
            continue
        definitions.append(loaded)
        services.loaded_groups.update({g.group.id: g for g in loaded.groups})
        for group in loaded.groups:
            for host in services.hosts_for(group):
                if settings.hosts and group.group.cannot_run(host) is not None:
                    continue  # that host's items are skips
                try:  # a variable of the host's isolation: a collection error, no result
                    check_environment(group.path, group.group, host, chosen=bool(settings.hosts))
                except DefinitionError:
                    invalid = True
            for variant in group.group.variants.values():
                if variant.source.kind == "git":
                    # An unresolvable ref is recorded by the variant when it runs.
                    with contextlib.suppress(ResourceError):
                        services.resolver.resolve("git", variant.source.ref)
    if services.plan is not None:
        check_groups(services.plan, services.loaded_groups.values(), settings.root)
    if settings.collect_only or invalid:
        return
    if services.plan is not None:
        _prepare_shard(services, services.plan)
        return
    # `-k` narrows what these checks look at, as `--skill-eval-group` does.
    selected = services.keyword_selected(definitions)
    if settings.max_cost is not None:
        services.endpoints.check_priced(selected_groups(services, selected), settings.max_cost)
    services.endpoints.check_credentials(selected, settings.group_selectors, settings.hosts)
    services.open_ledger()
    _write_invocations(services, definitions)


def _write_invocations(services: Services, definitions: list[LoadedDefinition]) -> None:
    """Write each trial's invocation record; its trials share the invocation's nonce."""
    settings = services.settings
    shared = secrets.token_hex(16)
    floor = floor_choice.Recorder(settings.results_dir, settings.noise_floor)
    # The same for every trial: a host's facts and the skills it would refuse (each linted once).
    cannot = (
        cannot_run_records(
            definitions, settings.group_selectors, settings.hosts, _refused_skills(services)
        )
        if settings.hosts
        else []
    )
    for trial in range(1, settings.trials + 1):
        result_dir = services.result_dir(trial)
        invocation: InvocationRecord = {
            "schema_version": 1,
            "id": result_dir.name,
            "root": str(settings.root),
            "definitions": invocation_definitions(definitions),
            "selection": {
                "group": recorded_selectors(settings.group_selectors),
                "variant": settings.variant_selector,
                "trial": trial,
                "trials": settings.trials,
            },
            "pins": services.resolver.pinned(),
            "provider": {
                "cassettes": str(settings.cassettes) if settings.cassettes else None,
                "record": settings.record,
            },
            "failOn": settings.fail_on,
            "alpha": settings.alpha,
            "startedAt": utc_now(),
            "nonce": shared,
        }
        if settings.hosts:
            invocation["hosts"] = list(settings.hosts)
            invocation["cannotRun"] = list(cannot)
        floor.record(invocation)
        inputs = services.environment().inputs
        groups = services.loaded_groups
        services.loop.record(invocation, groups.values(), services.hosts_for, inputs)
        now = resume.current_inputs(inputs, groups)
        resume.carry_over(settings.resume, settings.results_dir, result_dir, invocation, now)
        write_invocation(result_dir, invocation)


def _prepare_shard(services: Services, plan: Plan) -> None:
    """A planned run: the plan's result ids inside a fresh shard directory, no invocation."""
    index, count = services.settings.shard or (1, 1)
    services.shard_dir = create_shard_dir(services.settings.results_dir, plan, index, count)
    services.result_dirs = {
        t: services.shard_dir / plan.result_id(t) for t in range(1, plan.trials + 1)
    }
    services.open_ledger()


def _refused_skills(services: Services) -> Callable[[LoadedGroup, Sequence[str]], dict[str, str]]:
    """Which of `hosts` would refuse a skill of a group's selected variants, and why: the
    linter's refusals (`run.preflight.check_skills`), which make those items skips. A skill the
    linter cannot read here is left to the items' own check, which reports it."""
    settings = services.settings
    variants = [v for v in VARIANTS if settings.variant_selector in (None, v)]

    def refused(loaded: LoadedGroup, hosts: Sequence[str]) -> dict[str, str]:
        hosts_of = [registration_for(host) for host in hosts]
        try:
            found = check_skills(loaded, variants, settings.root, services.resolver, hosts_of)
        except (ResourceError, OSError):
            return {}
        return found.refused

    return refused


def selected_groups(services: Services, definitions: list[LoadedDefinition]) -> list[LoadedGroup]:
    """The loaded groups of `definitions` (already narrowed by `-k`), by id as loaded."""
    ids = {loaded.group.id for definition in definitions for loaded in definition.groups}
    return [g for g in services.loaded_groups.values() if g.group.id in ids]
