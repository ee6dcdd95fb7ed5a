"""The Pi coding agent CLI as a subject host."""
