"""OpenAI Codex CLI as a subject host.

`binary` locates and checks the pinned CLI and the machine (system config layers, read
confinement); `sandbox` builds the mount namespace that confines its reads; `config` writes the
hardened `config.toml` of one run; `events` translates `codex exec --json` into the neutral
observation; `host` implements the seam.
"""
