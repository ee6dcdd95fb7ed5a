"""Tests of spreading a run over machines."""
