"""The names a scripted run's model goes by, the same on every host: the provider and model a
host is configured with when a group declares none, and the API key it sends the loopback route
(checked nowhere: it only has to be a key no variable could supply)."""

from __future__ import annotations

DEFAULT_PROVIDER = "skill-eval"
DEFAULT_MODEL = "scripted"
# A host may read an apiKey that names an existing env var from that variable (Pi does);
# hyphens make this literal impossible as a POSIX variable name, so it is always used as written.
SCRIPTED_API_KEY = "skill-eval-scripted-key-not-a-variable"
