"""OpenAI Codex CLI as a subject host.

`binary` locates and checks the pinned CLI and the machine (system config layers, read
confinement); `sandbox` builds the mount namespace that confines its reads; `config` writes the
hardened `config.toml` of one run; `app_server` reads the app-server's messages as `codex exec
--json` events, which `events` translates into the neutral observation; `host` implements the
seam, one app-server for all of a subject's turns.
"""
