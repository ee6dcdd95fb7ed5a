"""Leaf helpers every layer may use (they import nothing but `errors`): counted nouns and
echoed values in messages, one check per option value shared by pytest's options and the CLI,
and what a directory entry is, how it is opened safely and how its name is recorded.
"""
