"""Subject hosts: the coding agents the evaluator runs, behind one seam."""
