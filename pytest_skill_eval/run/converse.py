"""CONVERSE: one subject of a materialised variant against its model endpoint.

Apart from the variant's steps (`variant.py`) so that a group run may start the next group's
first subject (`GroupRun`'s pre-start) without the steps importing the group run back.
"""

from __future__ import annotations

from ..definitions import Group
from ..hosts.base import PromptGate
from ..hosts.subject import Endpoint, SubjectResult, run_subject
from ..workspace.materialise import PreparedVariant
from .environment import Environment


def converse(
    definition: Group,
    prepared: PreparedVariant,
    endpoint: Endpoint,
    env: Environment,
    gate: PromptGate | None = None,
) -> SubjectResult:
    """The subject of `prepared` against `endpoint` (a pre-start holds its first prompt at
    `gate`)."""
    return run_subject(
        group=definition,
        prepared=prepared,
        binary=env.binary(definition.effective_runtime.host),
        endpoint=endpoint,
        cancel=env.cancel,
        no_progress_s=env.no_progress_s,
        gate=gate,
    )
