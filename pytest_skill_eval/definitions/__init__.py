"""definitions."""
