"""Leaf helpers every layer may use (they import nothing but `errors`): counted nouns and
echoed values in messages, and one check per option value shared by pytest's options and the CLI.
"""
