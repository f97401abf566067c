"""sktime panel adapters: optional import, faithful delegation on irregular
panels, other mtypes, tuning, and sktime's own conformance suite."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sktime")

from sklearn.model_selection import KFold  # noqa: E402

from conftest import assert_passes_check_estimator  # noqa: E402
from s5ts import S5Classifier, S5Regressor  # noqa: E402
from s5ts.sktime import S5TimeSeriesClassifier, S5TimeSeriesRegressor  # noqa: E402
from s5ts.sktime._common import FAST_PARAMETERS, PANEL_PARAMETERS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST = dict(FAST_PARAMETERS)


def _run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)


def test_import_s5ts_does_not_import_sktime_or_matplotlib():
    result = _run_python("import sys, s5ts; print('sktime' in sys.modules, 'matplotlib' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False False"


def test_missing_sktime_names_the_extra():
    code = (
        "import sys\n"
        "sys.modules['sktime'] = None\n"
        "import s5ts\n"
        "try:\n"
        "    import s5ts.sktime\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert 'pip install -e ".[sktime]" in the s5ts checkout' in result.stdout


@pytest.mark.parametrize(
    "adapter, inner", [(S5TimeSeriesRegressor, S5Regressor), (S5TimeSeriesClassifier, S5Classifier)]
)
def test_parameters_mirror_the_s5ts_estimators(adapter, inner):
    ours = inspect.signature(adapter.__init__).parameters
    theirs = inspect.signature(inner.__init__).parameters
    assert set(PANEL_PARAMETERS.defaults) <= set(ours)
    for name in ours:
        if name != "self":
            assert ours[name].default == theirs[name].default, name


# --------------------------------------------------------------------------
# an irregular, unequal-length, multivariate panel with a missing value


def _panel(seed=0, n=12):
    """(X pd-multiindex, regression targets, labels): series of 5-14
    observations at random datetimes; two variables; two NaN."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-03-01")
    frames, targets, labels = [], [], []
    for i in range(n):
        hours = np.sort(rng.uniform(0, 72, rng.integers(5, 15)))
        slope = 1.0 if i % 2 else -1.0
        index = pd.MultiIndex.from_product(
            [[f"s{i}"], start + pd.to_timedelta(hours, unit="h")], names=["series", "time"]
        )
        frame = pd.DataFrame(
            {"level": slope * hours / 72 + 0.1 * rng.normal(size=len(hours)), "other": np.cos(hours / 9)},
            index=index,
        )
        frames.append(frame)
        targets.append(frame["level"].iloc[-1])
        labels.append("up" if slope > 0 else "down")
    X = pd.concat(frames)
    # A missing value in each half, so both folds of a 2-fold split fit on
    # (and then predict) data with NaN.
    series = X.index.get_level_values(0)
    for name in ("s0", f"s{n - 4}"):
        X.iloc[np.flatnonzero(series == name)[1], 1] = np.nan
    return X, np.asarray(targets), np.asarray(labels)


@pytest.fixture(scope="module")
def panel():
    return _panel()


@pytest.fixture(scope="module")
def regressor(panel):
    X, y, _ = panel
    return S5TimeSeriesRegressor(**FAST).fit(X, y)


@pytest.fixture(scope="module")
def classifier(panel):
    X, _, labels = panel
    return S5TimeSeriesClassifier(**FAST).fit(X, labels)


def test_regressor_delegates_to_s5regressor(panel, regressor):
    X, y, _ = panel
    direct = S5Regressor(**FAST).fit(X, y)
    prediction = regressor.predict(X)
    assert prediction.shape == (len(y),)
    assert np.all(np.isfinite(prediction))
    np.testing.assert_allclose(prediction, direct.predict(X), rtol=1e-6)
    assert regressor.estimator_.n_features_in_ == 2


def _retimed(X, hours_of):
    """X with each series' times replaced by start + hours_of(k) for step k."""
    frames = []
    for sid, frame in X.groupby(level=0, sort=False):
        times = pd.Timestamp("2024-03-01") + pd.to_timedelta(hours_of(np.arange(len(frame))), unit="h")
        frames.append(frame.set_axis(pd.MultiIndex.from_product([[sid], times], names=X.index.names)))
    return pd.concat(frames)


def test_regressor_reads_the_timestamps(panel, regressor):
    X, _, _ = panel
    base = regressor.predict(X)
    # Shifting every time by one day keeps every gap: same predictions.
    shifted = X.set_axis(
        pd.MultiIndex.from_arrays(
            [X.index.get_level_values(0), X.index.get_level_values(1) + pd.Timedelta("1D")],
            names=X.index.names,
        )
    )
    np.testing.assert_allclose(regressor.predict(shifted), base, rtol=1e-6)
    # The same values on other irregular grids give other predictions.
    early_dense = regressor.predict(_retimed(X, lambda k: k**1.5))
    regular = regressor.predict(_retimed(X, lambda k: 4.0 * k))
    assert not np.allclose(early_dense, regular, rtol=1e-4)


def test_classifier_delegates_to_s5classifier(panel, classifier):
    X, _, labels = panel
    direct = S5Classifier(**FAST).fit(X, labels)
    proba = classifier.predict_proba(X)
    assert proba.shape == (len(labels), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(proba, direct.predict_proba(X), rtol=1e-5, atol=1e-7)
    assert classifier.classes_.tolist() == ["down", "up"]
    assert set(classifier.predict(X)) <= {"down", "up"}


def test_classifier_accepts_a_list_of_frames(panel, classifier):
    # sktime's "df-list" mtype: one frame per series, each with its own times.
    X, _, _ = panel
    frames = [frame.droplevel(0) for _, frame in X.groupby(level=0, sort=False)]
    np.testing.assert_allclose(classifier.predict_proba(frames), classifier.predict_proba(X), rtol=1e-6)


def test_bad_parameter_is_a_value_error(panel):
    X, y, _ = panel
    with pytest.raises(ValueError, match="d_model"):
        S5TimeSeriesRegressor(**dict(FAST, d_model=0)).fit(X, y)


def test_tuning_with_sktime_grid_search(panel):
    from sktime.classification.model_selection import TSCGridSearchCV
    from sktime.regression.model_selection import TSRGridSearchCV

    X, y, labels = panel
    grid = {"learning_rate": [1e-3, 1e-2]}
    search = TSRGridSearchCV(
        S5TimeSeriesRegressor(**FAST), grid, cv=KFold(2), scoring="neg_mean_squared_error"
    )
    search.fit(X, y)
    assert search.best_params_["learning_rate"] in grid["learning_rate"]
    assert len(search.cv_results_["mean_test_score"]) == 2
    assert search.predict(X).shape == y.shape

    search = TSCGridSearchCV(S5TimeSeriesClassifier(**FAST), grid, cv=KFold(2))
    search.fit(X, labels)
    assert search.best_params_["learning_rate"] in grid["learning_rate"]
    assert set(search.predict(X)) <= {"down", "up"}


# --------------------------------------------------------------------------
# sktime's conformance suite (one to six minutes each; part of every run)


@pytest.mark.parametrize(
    "estimator",
    [
        S5TimeSeriesRegressor,
        S5TimeSeriesClassifier,
        # The forecaster's: tests/test_sktime_forecaster_conformance.py (its
        # own file, so that pytest-xdist runs it beside these two).
    ],
)
def test_sktime_check_estimator(estimator, own_persistent_cache):
    assert_passes_check_estimator(estimator)


# --------------------------------------------------------------------------
# sktime's other time and array formats reach the model as they should


def test_adapters_read_numpy3d_in_sktime_axis_order(panel):
    X, y, _ = panel
    rng = np.random.default_rng(0)
    numpy3d = rng.normal(size=(12, 2, 9))  # sktime: (instance, variable, time)
    regressor = S5TimeSeriesRegressor(**FAST).fit(numpy3d, y)
    assert regressor.estimator_.n_features_in_ == 2
    direct = S5Regressor(**FAST).fit(numpy3d.transpose(0, 2, 1), y)
    np.testing.assert_allclose(regressor.predict(numpy3d), direct.predict(numpy3d.transpose(0, 2, 1)), rtol=1e-6)


def test_adapters_take_period_times_as_their_start(panel):
    X, y, labels = panel
    days = [pd.period_range("2024-01-01", periods=len(f), freq="D") for _, f in X.groupby(level=0, sort=False)]
    stamps = [p.to_timestamp(how="start") for p in days]

    def reindexed(times):
        parts = [f.set_axis(pd.MultiIndex.from_arrays([f.index.get_level_values(0), t], names=X.index.names))
                 for (_, f), t in zip(X.groupby(level=0, sort=False), times)]
        return pd.concat(parts)

    periods, timestamps = reindexed(days), reindexed(stamps)
    classifier = S5TimeSeriesClassifier(**FAST).fit(periods, labels)
    direct = S5Classifier(**FAST).fit(timestamps, labels)
    np.testing.assert_allclose(classifier.predict_proba(periods), direct.predict_proba(timestamps), rtol=1e-5, atol=1e-7)


def test_adapters_refuse_tz_aware_after_naive(panel, regressor, classifier):
    X, _, _ = panel
    aware = X.set_axis(
        pd.MultiIndex.from_arrays(
            [X.index.get_level_values(0), X.index.get_level_values(1).tz_localize("UTC")], names=X.index.names
        )
    )
    for adapter in (regressor, classifier):
        with pytest.raises(ValueError, match="fitted on tz-naive datetimes, but X has tz-aware"):
            adapter.predict(aware)
