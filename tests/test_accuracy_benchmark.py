"""The inputs of `benchmarks/accuracy_real.py`'s methods: `s5_grid` is S5 on
the very grid the grid methods see, read in sktime's (n, channels, grid)
layout (the benchmark is not part of the package)."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _accuracy_data as D  # noqa: E402
import accuracy_real as A  # noqa: E402

TINY = {"n_layers": 1, "d_model": 8, "state_size": 4, "max_epochs": 2, "min_epoch_steps": None}


def _dataset(task: str) -> D.Dataset:
    """Two-channel series of 12 points thinned to 7 (irregular, the grid
    0..11), the target from the first channel's level."""
    rng = np.random.default_rng(0)
    frames = [D.frame(np.arange(12.0), rng.normal(k % 2, 1.0, (12, 2)), ["a", "b"]) for k in range(20)]
    frames = D.thin(frames, 7 / 12, rng)
    y = np.array([k % 2 for k in range(20)]) if task == "classification" else rng.normal(size=20)
    return D.Dataset("tiny", task, "synthetic", frames[:14], y[:14], frames[14:], y[14:], np.arange(12.0), 12)


def test_s5_grid_fits_s5_on_the_grid_methods_inputs():
    """`s5_grid` on `as_grid`'s array equals the same S5 fitted on the
    interpolated values as frames indexed by the grid's steps: the layout is
    read as (series, channel, step), not transposed."""
    for task in ("classification", "regression"):
        data = _dataset(task)
        method = A.METHODS["s5_grid"]
        grid_train = method.prepare(data.X_train, data)
        grid_test = method.prepare(data.X_test, data)
        assert grid_train.shape == (14, 2, 12)
        model = method.build(data, TINY, 0).fit(grid_train, data.y_train)
        frames = [pd.DataFrame(g.T, index=np.arange(12.0), columns=["a", "b"]) for g in grid_train]
        reference = A._s5("gaps")(data, TINY, 0).fit(frames, data.y_train)
        test_frames = [pd.DataFrame(g.T, index=np.arange(12.0), columns=["a", "b"]) for g in grid_test]
        if task == "classification":
            got, want = model.predict_proba(grid_test), reference.predict_proba(test_frames)
        else:
            got, want = model.predict(grid_test), reference.predict(test_frames)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        kept = data.X_train[0].index.to_numpy().astype(int)  # the grid passes through every observation
        np.testing.assert_allclose(grid_train[0, :, kept].T, data.X_train[0].to_numpy().T)


def test_dss_fits_regression_sets_and_refuses_classification():
    """`dss` builds the DSS baseline with the S5 overrides it shares (an S5-only
    one is dropped) and fails a classification set with a clear error."""
    data = _dataset("regression")
    result = A.run_one(A.METHODS["dss"], data, {**TINY, "selective": "scaled"}, seed=0)
    assert result.error is None and np.isfinite(result.score)
    refused = A.run_one(A.METHODS["dss"], _dataset("classification"), TINY, seed=0)
    assert refused.score is None and "no classifier" in refused.error
