"""The console script's side: `skill-eval` and its subcommands, comparing two results, the advisory
review.
"""
