"""Gemini CLI as a subject host.

`binary` locates and checks the pinned CLI and declares its system layers; `config` writes the
settings of one run; `events` translates `--output-format stream-json` into the neutral
observation; `host` implements the seam.
"""
