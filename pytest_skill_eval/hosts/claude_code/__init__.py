"""Claude Code (`@anthropic-ai/claude-code`, pinned) as a subject host.

Facts it relies on were verified against 2.1.332 offline (the host RECIPE): stream-json events,
user-scope skills under an isolated `CLAUDE_CONFIG_DIR`, a PreToolUse hook as the path guard.
"""
