"""Benchmark data sets, generated on first use and cached on disk.

- `load_pendulum`: the irregularly sampled noisy pendulum (S5 paper, Table 3).
"""

from ._pendulum import load_pendulum

__all__ = ["load_pendulum"]
