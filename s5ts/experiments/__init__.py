"""Reproductions of published experiments (imported on demand: they pull in
the data sets, the baselines and, for figures, matplotlib)."""
