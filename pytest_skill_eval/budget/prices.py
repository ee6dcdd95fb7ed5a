"""What a model costs on a host: the operator's models file first, then the host's price source.

The models file (`skill_eval_pi_models`, `plan --estimate --models`) is a provider table whose
models may carry a `cost`; a model it defines is priced by that cost alone (none: it has no
price). Any other model is priced by the price source its host's registration names, which may
read a checked binary (`binaries`): a run whose models file prices every model needs no other
binary than its hosts'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from ..hosts.base import Executable
from ..hosts.pi.config import model_cost
from ..hosts.registry import registration_for


class PriceTable:
    """USD per million tokens of `provider/model_id` on a host, else None."""

    def __init__(
        self, models: Path | None, binaries: Callable[[str], Executable] | None = None
    ) -> None:
        self.models = models
        # Host name → its checked binary, for a price source that reads one; None: none is read.
        self.binaries = binaries

    def providers(self) -> dict[str, object]:
        """The models file's providers (empty without one)."""
        if self.models is None:
            return {}
        table = json.loads(self.models.read_text(encoding="utf-8"))
        providers = table.get("providers") if isinstance(table, dict) else None
        return providers if isinstance(providers, dict) else {}

    def price(self, provider: str, model_id: str, host: str) -> Mapping[str, float] | None:
        """The models file's `cost` of the model when it defines it, else the host's source's."""
        entry = self.providers().get(provider)
        models = entry.get("models") if isinstance(entry, dict) else None
        for model in models if isinstance(models, list) else ():
            if isinstance(model, dict) and model.get("id") == model_id:
                return model_cost(model.get("cost"))
        if self.binaries is None:
            return None
        return registration_for(host).price(self.binaries, provider, model_id)
