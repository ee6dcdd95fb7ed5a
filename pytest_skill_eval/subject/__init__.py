"""subject."""
