"""Statistics and aggregates: intervals and exact tests, the sequential test and adaptive trials,
trigger rates, the per-group aggregate, the suite's significance gate and the noise floor.
"""
