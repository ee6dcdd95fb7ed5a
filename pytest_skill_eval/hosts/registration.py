"""What declares a host: one frozen `HostRegistration` per host, read by everything else.

A host is its subpackage (`hosts/<name>/`, the heavy `Host` implementation and its event
translation) and one registration in `hosts/<name>/registration.py`, listed once in
`hosts/registry.py`. Option validation and help, node ids, evidence directory names, the
cross-host table, the plan, the model server's route and tool dialect, price lookup, credentials
and the binary check read the registration; none of them names a host.

A registration is cheap to import: its implementation, binary check, tool renderer and skill
catalog reader are found by convention in its own subpackage (`host.py`'s `<Name>Host`,
`binary.py`'s `checked`, `tools.py`'s `render`, `offered.py`'s `catalog`) and imported only when
they are needed; its price source is the shared one unless it names its own as
`"module:attribute"`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..common.skill_limits import SkillLimits
from .environment import OwnedEnvironment
from .layers import SystemLayer
from .workspace_layers import WorkspaceLayer

if TYPE_CHECKING:
    from .base import Executable, Host
    from .options import HostOptions


# The price source of every host that ships no price table the evaluator can read offline: the
# model registry of the pinned Pi package (`hosts/pi/config.py`), the one such table installed.
SHARED_PRICE_SOURCE = "pytest_skill_eval.hosts.pi.config:price"


class UnknownHostError(LookupError):
    """A `runtime.host` no host registration answers to."""


class BinaryCheck(Protocol):
    """Locates a host's binary and refuses one it cannot trust (version, machine)."""

    def __call__(self, options: HostOptions, root: Path) -> Executable: ...


class PriceSource(Protocol):
    """USD per million tokens for `provider/model_id` as a host prices it, else None."""

    def __call__(
        self, binaries: Callable[[str], Executable], provider: str, model_id: str
    ) -> Mapping[str, float] | None: ...


def load(reference: str) -> Any:
    """The attribute a `"package.module:attribute"` reference names, imported now."""
    module, _, attribute = reference.partition(":")
    if not module or not attribute:
        raise ValueError(f"{reference!r} is not a 'module:attribute' reference")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class ToolDialect:
    """How the neutral tools of `modelserver/tools.py` are shown to the model on a host.

    `shown` says, for each neutral tool the host can show, what the model sees instead (for the
    docs and the model server); `hidden` says why the host cannot show the others. The function
    that writes one neutral call as the host's own calls is its subpackage's `tools.render`
    (`hosts/dialect.py` calls it as `render(call, skill_file, workspace) -> list[ToolCall]`).
    """

    shown: Mapping[str, str]
    hidden: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HostRegistration:
    """Everything the evaluator knows about one host before its implementation is imported."""

    name: str  # the `runtime.host` value, node ids' `@host`, evidence directories' host
    display_name: str  # how messages, the cross-host table and the views name it
    package: str  # the npm package, pinned
    version: str  # the pinned version
    # The wire APIs the model server routes for it; one: it speaks that whatever the provider,
    # several: it speaks the provider's (Pi).
    apis: tuple[str, ...]
    tools: ToolDialect
    # What it reads from outside its isolated home (managed settings, /etc): none may exist.
    system_layers: tuple[SystemLayer, ...]
    # What it reads from the subject's workspace as each process starts and no switch of its
    # own turns off: checked before each later turn's process (`workspace_layers`).
    workspace_layers: tuple[WorkspaceLayer, ...]
    # The variables of its isolation (`hosts.environment`): no definition may set them.
    owned_environment: OwnedEnvironment
    auth_advice: str  # how an operator gets credentials to a live run of this host
    # A Node program: a binary with a `runtime` (`hosts.runtime.NodeBinary`) starts as
    # `<pinned node> <entry>` with a private copy of the evaluator's warm compile cache.
    runs_on_node: bool
    # `--skill-eval-<binary_option> PATH`, ini `skill_eval_<binary_option>` (`-` as `_`); "":
    # its name.
    binary_option: str = ""
    # Its subpackage, where `host.py`, `binary.py` and `tools.py` are its implementation, check
    # and renderer; "": `pytest_skill_eval.hosts.<name>` (`-` as `_`).
    subpackage: str = ""
    # The executable looked for on PATH and in node_modules/.bin; "": its `binary_option`.
    command: str = ""
    # The entry the package installs, relative to the definition root; "": the package's
    # `node_modules/.bin/<command>`.
    binary: str = ""
    # Fact kinds (neutral tool names for `tool-call` checks) it cannot observe → why: a check of
    # one is `unavailable` with that reason, never a guessed fail.
    unobservable: Mapping[str, str] = field(default_factory=dict)
    # The variables its key is read from whatever the model, most usual first; empty: the
    # provider's (`credentials.PROVIDER_KEYS`).
    credential_variables: tuple[str, ...] = ()
    # `model.thinking` levels it accepts; None: every level a definition may declare.
    thinking: tuple[str, ...] | None = None
    # Records what the model received from inside (Pi's observer extension); else `context-text`
    # is taken from the requests the loopback server saw.
    observes_context: bool = False
    # Its multi-turn dialogue holds the first prompt until `Launch.gate` opens (`run.prestart`).
    defers_first_prompt: bool = False
    # It reads every prompt on stdin (`hosts.dialogue`), so a one-prompt run can hold it too.
    prompt_on_stdin: bool = False
    # Every run, of one prompt or several, is one conversation on its stdin (Codex's
    # app-server): its stdin stays a pipe even for a one-shot run (`hosts.launch`).
    converses_on_stdin: bool = False
    extensions: bool = False  # loads `runtime.extensions` bundles (Pi's format)
    # A live run takes the operator's credentials file and provider table (the ini keys
    # `skill_eval_pi_auth` and `skill_eval_pi_models`, in Pi's format).
    operator_files: bool = False
    # `"module:function"` pricing a model as this host would (a `PriceSource`).
    price_source: str = SHARED_PRICE_SOURCE
    # What it refuses or cuts of a declared skill (`definitions/skill_lint.py` reads them).
    skill_limits: SkillLimits = field(default_factory=SkillLimits)
    # What it writes anew into each run's model requests (a date, ids): a regular expression and
    # the placeholder text that stands for it, so a recorded request matches a replayed one.
    request_stamps: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        option = self.binary_option or self.name
        object.__setattr__(self, "binary_option", option)
        subpackage = self.subpackage or f"{__package__}.{self.name.replace('-', '_')}"
        object.__setattr__(self, "subpackage", subpackage)
        command = self.command or option
        object.__setattr__(self, "command", command)
        object.__setattr__(self, "binary", self.binary or f"node_modules/.bin/{command}")

    @property
    def option(self) -> str:
        """The command-line option naming its binary."""
        return f"--skill-eval-{self.binary_option}"

    @property
    def ini(self) -> str:
        """The ini key naming its binary."""
        return f"skill_eval_{self.binary_option.replace('-', '_')}"

    @property
    def install(self) -> str:
        """How to install the pinned binary, as messages say it."""
        return f"`npm install {self.package}@{self.version}`"

    @property
    def fixed_api(self) -> str | None:
        """The one wire API it speaks whatever the provider; None: it speaks the provider's."""
        return self.apis[0] if len(self.apis) == 1 else None

    @property
    def host(self) -> str:
        """`"module:Class"` of its `Host`: `<Name>Host` in its subpackage's `host.py`."""
        words = self.subpackage.rpartition(".")[2].split("_")
        return f"{self.subpackage}.host:{''.join(w.capitalize() for w in words)}Host"

    @property
    def check(self) -> str:
        """`"module:function"` of its `BinaryCheck`: `checked` in its subpackage's `binary.py`."""
        return f"{self.subpackage}.binary:checked"

    @property
    def render(self) -> str:
        """`"module:function"` writing a neutral tool call as its own: `tools.py`'s `render`."""
        return f"{self.subpackage}.tools:render"

    @property
    def offered(self) -> str:
        """`"module:function"` reading the skills one model request lists to the model:
        `offered.py`'s `catalog` (`hosts.offered.CatalogReader`)."""
        return f"{self.subpackage}.offered:catalog"

    def implementation(self) -> Host:
        """A new instance of its `Host` (imports the implementation now)."""
        made: Host = load(self.host)()
        return made

    def check_binary(self, options: HostOptions, root: Path) -> Executable:
        """Its binary, located and checked (imports the check now)."""
        check: BinaryCheck = load(self.check)
        return check(options, root)

    def price(
        self, binaries: Callable[[str], Executable], provider: str, model_id: str
    ) -> Mapping[str, float] | None:
        """The price its source gives `provider/model_id` (None: it does not list it);
        `binaries` gives the checked binary of a host by name, for a source that reads one."""
        source: PriceSource = load(self.price_source)
        return source(binaries, provider, model_id)
