"""What runs cost: the forecast before a live run spends, and per-arm usage facts after it."""
