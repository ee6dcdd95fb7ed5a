"""GitHub Copilot CLI (`@github/copilot`, its native `@github/copilot-linux-x64` build, pinned)
as a subject host."""
