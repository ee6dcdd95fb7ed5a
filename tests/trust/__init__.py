"""Tests of the evaluator under a hostile subject, a bad day and a careless definition."""
