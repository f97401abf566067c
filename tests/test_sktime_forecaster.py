"""S5Forecaster on irregular time: horizons of every kind, Gaussian
intervals, in-sample forecasts against sequence mode, state-advancing
update against the whole history, exogenous X, and the damped-oscillator
comparison with sktime's NaiveForecaster."""

import copy
import warnings

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sktime")

from scipy.stats import norm  # noqa: E402
from sktime.forecasting.base import ForecastingHorizon  # noqa: E402

from s5ts.forecasting import advance, observation_steps, query_steps  # noqa: E402
from s5ts.sktime import S5Forecaster  # noqa: E402

FAST = {"n_layers": 1, "d_model": 4, "state_size": 2, "max_epochs": 3, "random_state": 0}
START = pd.Timestamp("2024-01-01")
LEADS = [37, 400, 1234, 5000]  # seconds after the cutoff: irregular


def _seconds(n=28, seed=0):
    """Irregular integer observation times (seconds)."""
    return np.cumsum(np.random.default_rng(seed).integers(60, 600, n))


def _values(seconds, seed=0):
    noise = 0.05 * np.random.default_rng(seed + 100).normal(size=len(seconds))
    return np.exp(-seconds / 20000) * np.cos(seconds / 1500) + noise


def _series(kind, n=28, seed=0):
    s = _seconds(n, seed)
    index = {
        "datetime": pd.DatetimeIndex(START + pd.to_timedelta(s, unit="s")),
        "timedelta": pd.TimedeltaIndex(pd.to_timedelta(s, unit="s")),
        "int": pd.Index(s),
    }[kind]
    return pd.Series(_values(s, seed), index=index, name="y")


def _absolute(times):
    return ForecastingHorizon(times, is_relative=False)


def _relative_timedeltas(seconds):
    return ForecastingHorizon(pd.to_timedelta(seconds, unit="s"), is_relative=True)


@pytest.fixture(scope="module")
def series():
    return _series("datetime")


@pytest.fixture(scope="module")
def fitted(series):
    return S5Forecaster(**FAST).fit(series)


def test_forecasts_at_irregular_absolute_times(series, fitted):
    assert series.index.freq is None
    future = pd.DatetimeIndex(series.index[-1] + pd.to_timedelta(LEADS, unit="s"))
    prediction = fitted.predict(_absolute(future))
    assert isinstance(prediction, pd.Series) and prediction.name == "y"
    assert prediction.index.equals(future)
    assert np.all(np.isfinite(prediction))
    # Each time is forecast from its own lead.
    assert len(np.unique(prediction.round(7))) == len(LEADS)


def test_relative_timedelta_horizon_equals_absolute(series, fitted):
    future = pd.DatetimeIndex(series.index[-1] + pd.to_timedelta(LEADS, unit="s"))
    relative = fitted.predict(_relative_timedeltas(LEADS))
    assert relative.index.equals(future)
    np.testing.assert_allclose(relative, fitted.predict(_absolute(future)), rtol=1e-6)


def test_any_index_kind_gives_the_same_forecasts(fitted):
    # The same observations, on a TimedeltaIndex and on integer seconds:
    # the same gaps, hence the same model and forecasts.
    expected = fitted.predict(_relative_timedeltas(LEADS)).to_numpy()
    by_timedelta = S5Forecaster(**FAST).fit(_series("timedelta"))
    prediction = by_timedelta.predict(_relative_timedeltas(LEADS))
    assert prediction.index.equals(by_timedelta.cutoff[0] + pd.to_timedelta(LEADS, unit="s"))
    np.testing.assert_allclose(prediction, expected, rtol=1e-5, atol=1e-6)
    by_int = S5Forecaster(**FAST).fit(_series("int"))
    prediction = by_int.predict(LEADS)  # relative integers: index units after the cutoff
    assert prediction.index.tolist() == [int(by_int.cutoff[0]) + lead for lead in LEADS]
    np.testing.assert_allclose(prediction, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Timedelta horizons need"):
        by_int.predict(_relative_timedeltas([10]))


def test_relative_integer_horizon_on_irregular_index_is_a_clear_error(series, fitted):
    with pytest.raises(ValueError, match="need an index with a frequency"):
        fitted.predict(fh=[1, 2])
    with pytest.raises(ValueError, match="need an index with a frequency"):
        S5Forecaster(**FAST).fit(series, fh=[1])


def test_intervals_and_quantiles_are_the_forecaster_s_and_variance_the_gaussian(series, fitted):
    # predict_var and predict_proba are the Gaussian; intervals and quantiles
    # are the core forecaster's, each coverage calibrated on its own
    # (tests/test_forecasting.py): at 95 % and above the Gaussian's.
    fh = _relative_timedeltas(LEADS)
    mean = fitted.predict(fh).to_numpy()
    var = fitted.predict_var(fh)["y"].to_numpy()
    alphas = [0.01, 0.025, 0.25, 0.5, 0.75, 0.975]
    quantiles = fitted.predict_quantiles(fh, alpha=alphas)["y"]
    intervals = fitted.predict_interval(fh, coverage=[0.5, 0.95])["y"]
    assert np.all(var > 0)
    np.testing.assert_allclose(quantiles[0.5], mean, rtol=1e-6)
    np.testing.assert_allclose(quantiles[0.975] - mean, norm.ppf(0.975) * np.sqrt(var), rtol=1e-5)
    np.testing.assert_allclose(mean - quantiles[0.01], norm.ppf(0.99) * np.sqrt(var), rtol=1e-5)
    assert np.all(quantiles[0.75] - mean <= norm.ppf(0.75) * np.sqrt(var) * (1 + 1e-6))
    np.testing.assert_allclose(intervals[(0.95, "lower")], quantiles[0.025], rtol=1e-6)
    np.testing.assert_allclose(intervals[(0.5, "upper")], quantiles[0.75], rtol=1e-6)
    assert np.all(np.diff(quantiles.to_numpy(), axis=1) > 0)
    future = pd.DatetimeIndex(series.index[-1] + pd.to_timedelta(LEADS, unit="s"))
    core = fitted.forecaster_.predict_quantiles(future, alphas)["y"]
    np.testing.assert_allclose(quantiles.to_numpy(), core.to_numpy(), rtol=1e-12)
    distribution = fitted.predict_proba(fh)
    np.testing.assert_allclose(distribution.mean()["y"], mean, rtol=1e-6)
    np.testing.assert_allclose(distribution.var()["y"], var, rtol=1e-5)


def test_in_sample_forecasts_are_one_step_from_the_state_before(series, fitted):
    # At an observation time t_k, the forecast is one query step from the
    # state after step k-1 (the network run step by step in a Python loop).
    core = fitted.forecaster_
    record = core.series_[None]
    layout = core._layout
    u, gaps, spreads = observation_steps(layout, record.times, record.y, None, record.scale)
    model = fitted.network_
    network = model.network
    state, states = network.init_state(), []
    for k in range(len(gaps)):
        state, _ = network.step(state, jnp.asarray(u[k]), jnp.asarray(gaps[k]))
        states.append(state)
    expected = []
    for k in range(1, len(gaps)):
        q, lead = query_steps(layout, record.times[k : k + 1], None, record.times[k - 1 : k])
        mean, _ = model.query(states[k - 1], jnp.asarray(q[0]), jnp.asarray(lead[0]))
        expected.append(record.y[k - 1, 0] + spreads[k - 1, 0] * float(mean[0]))
    in_sample = fitted.predict(_absolute(series.index[1:]))
    np.testing.assert_allclose(in_sample, expected, rtol=1e-4, atol=1e-5)
    assert np.all(fitted.predict_var(_absolute(series.index[1:])) > 0)


def test_full_in_sample_horizon_is_nan_at_the_first_time_only(series, fitted):
    # sktime's full in-sample horizon includes the first observation, which
    # has no history: the adapter gives NaN there, the core raises, and a
    # time before the first observation raises in both.
    whole = _absolute(series.index)
    mean, intervals, var = fitted.predict(whole), fitted.predict_interval(whole), fitted.predict_var(whole)
    for frame in (mean, intervals, var):
        rows = np.asarray(frame, dtype=float).reshape(len(series), -1)
        assert np.isnan(rows[0]).all() and np.isfinite(rows[1:]).all()
    np.testing.assert_allclose(mean.iloc[1:], fitted.predict(_absolute(series.index[1:])), rtol=1e-6)
    with pytest.raises(ValueError, match="first observation"):
        fitted.forecaster_.predict(series.index[:1])
    with pytest.raises(ValueError, match="first observation"):
        fitted.predict(_absolute(series.index[:1] - pd.Timedelta("1s")))


def _panel(parts: dict) -> pd.DataFrame:
    frames = [
        s.to_frame().set_axis(pd.MultiIndex.from_product([[k], s.index], names=["unit", "time"]))
        for k, s in parts.items()
    ]
    return pd.concat(frames)


@pytest.fixture(scope="module")
def panel_fitted(series):
    other = _series("datetime", n=24, seed=1)
    return S5Forecaster(**FAST).fit(_panel({"a": series.iloc[:20], "b": other}))


def test_update_advances_the_state_like_the_whole_history(series, panel_fitted):
    before = copy.deepcopy(panel_fitted)
    future = _absolute(pd.DatetimeIndex(series.index[-1] + pd.to_timedelta(LEADS, unit="s")))
    # "a" continues from its stored state: the same state as its whole
    # history run from the zero state in one go; "c" is new to the model.
    updated = copy.deepcopy(panel_fitted).update(_panel({"a": series.iloc[20:], "c": series}), update_params=False)
    prediction = updated.predict(future)
    assert prediction.index.names == ["unit", "time"]
    assert set(prediction.index.get_level_values(0)) == {"a", "b", "c"}
    core = updated.forecaster_
    record = core.series_["a"]
    np.testing.assert_array_equal(record.times, core.series_["c"].times)
    u, gaps, _ = observation_steps(core._layout, record.times, record.y, None, record.scale)
    whole = advance(core.network_.network, core.network_.network.init_state(), u, gaps)
    for carried, recomputed in zip(record.state, whole):
        np.testing.assert_allclose(carried, recomputed, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(prediction.loc["b"], before.predict(future).loc["b"], rtol=1e-6)
    assert not np.allclose(prediction.loc["a"], before.predict(future).loc["a"])
    # One observation at a time gives the same state.
    stepwise = copy.deepcopy(panel_fitted)
    for k in range(20, len(series)):
        stepwise.update(_panel({"a": series.iloc[k : k + 1]}), update_params=False)
    np.testing.assert_allclose(stepwise.predict(future).loc["a"], prediction.loc["a"], rtol=1e-5, atol=1e-6)
    assert updated.cutoff[0] == series.index[-1]


def test_update_skips_rows_it_already_knows(series, fitted):
    new_times = pd.DatetimeIndex(series.index[-1] + pd.to_timedelta([90, 700], unit="s"))
    new = pd.Series([0.3, -0.1], index=new_times, name="y")
    only_new = copy.deepcopy(fitted).update(new, update_params=False)
    with_overlap = copy.deepcopy(fitted).update(pd.concat([series.iloc[-5:], new]), update_params=False)
    fh = _relative_timedeltas(LEADS)
    np.testing.assert_allclose(with_overlap.predict(fh), only_new.predict(fh), rtol=1e-6)
    same_times = _absolute(new_times[-1] + pd.to_timedelta(LEADS, unit="s"))
    assert not np.allclose(only_new.predict(fh), fitted.predict(same_times))


def test_exogenous_features_at_the_forecast_times(series):
    rng = np.random.default_rng(3)
    extra_times = pd.DatetimeIndex(series.index[-1] + pd.to_timedelta(LEADS, unit="s"))
    all_times = series.index.append(extra_times)
    X = pd.DataFrame({"driver": rng.normal(size=len(all_times))}, index=all_times)
    y = series + 0.5 * X["driver"].iloc[: len(series)].to_numpy()
    forecaster = S5Forecaster(**FAST, fallback=None).fit(y, X=X.iloc[: len(series)])  # S5's forecast reads X
    fh = _absolute(extra_times)
    prediction = forecaster.predict(fh, X=X.iloc[len(series) :])
    assert prediction.index.equals(extra_times) and np.all(np.isfinite(prediction))
    shifted = forecaster.predict(fh, X=X.iloc[len(series) :] + 1.0)
    assert not np.allclose(prediction, shifted)
    with pytest.raises(ValueError, match="exogenous X"):
        forecaster.predict(fh)
    with pytest.raises(ValueError, match="no row at time"):
        forecaster.predict(fh, X=X.iloc[len(series) : -1])


def test_exogenous_features_indexed_by_periods_at_predict():
    # Periods in predict's X are their start times, as in fit's y and X.
    months = pd.period_range("2020-01", periods=30, freq="M")
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"driver": rng.normal(size=30)}, index=months)
    y = pd.Series(np.sin(np.arange(30) / 3) + 0.5 * X["driver"].to_numpy(), index=months, name="y")
    forecaster = S5Forecaster(**FAST, fallback=None).fit(y.iloc[:27], X=X.iloc[:27])
    fh = ForecastingHorizon([1, 2, 3], is_relative=True)
    by_period = forecaster.predict(fh, X=X.iloc[27:])
    by_time = forecaster.forecaster_.predict(months[27:].to_timestamp(), X=X.iloc[27:].set_axis(months[27:].to_timestamp()))
    assert by_period.index.equals(months[27:])
    np.testing.assert_allclose(by_period.to_numpy(), by_time.to_numpy().ravel(), rtol=1e-6)
    assert not np.allclose(by_period, forecaster.predict(fh, X=X.iloc[27:] + 1.0))


# --------------------------------------------------------------------------
# the docs page's comparison (docs/sktime.md), with the same data and model


def _oscillator(t, amplitude, phase, period=2000.0, damping=0.05):
    w = 2 * np.pi / period
    return amplitude * np.exp(-damping * w * t) * np.cos(w * np.sqrt(1 - damping**2) * t + phase)


def test_beats_naive_forecaster_on_a_damped_oscillator_at_irregular_times():
    from sktime.forecasting.naive import NaiveForecaster

    rng = np.random.default_rng(0)
    future = np.array([4120, 4260, 4390, 4555, 4610, 4780, 4890, 4975])
    frames, truth = [], []
    for i in range(16):
        t = np.unique(np.cumsum(rng.exponential(100, 80)).astype(np.int64))
        t = t[t < 4000]
        amplitude, phase = rng.uniform(0.5, 1.5), rng.uniform(0, 2 * np.pi)
        values = _oscillator(t, amplitude, phase) + 0.05 * rng.normal(size=len(t))
        index = pd.MultiIndex.from_product([[i], t], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
        truth.append(_oscillator(future, amplitude, phase))
    y = pd.concat(frames)
    truth = np.concatenate(truth)
    fh = _absolute(pd.Index(future))
    s5 = S5Forecaster(
        n_layers=1, d_model=8, state_size=4, max_epochs=300, learning_rate=1e-2, random_state=0
    )
    s5.fit(y)
    with warnings.catch_warnings():  # sktime 1.2 announces a new default in every forecaster
        warnings.simplefilter("ignore", FutureWarning)
        naive = NaiveForecaster().fit(y)
    mae_s5 = np.abs(s5.predict(fh)["y"].to_numpy() - truth).mean()
    mae_naive = np.abs(naive.predict(fh)["y"].to_numpy() - truth).mean()
    assert mae_s5 < 0.5 * mae_naive
