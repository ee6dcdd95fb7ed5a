"""opencode (`opencode-ai`, its native `opencode-linux-x64` build, pinned) as a subject host."""
