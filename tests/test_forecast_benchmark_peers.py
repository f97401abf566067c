"""The peers and the seed handling of `benchmarks/forecast_real.py` against
naive references: drift and its empirical intervals, the statsforecast
models read off their grid, and the mean / range over seeds. The
statsforecast check is skipped without it (the `benchmarks` extra)."""

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import _forecast_data as D  # noqa: E402
import forecast_real as F  # noqa: E402

START = pd.Timestamp("2000-01-01")


def _irregular(n=80, seed=0, days=10):
    rng = np.random.default_rng(seed)
    times = START + pd.to_timedelta(np.cumsum(rng.integers(1, days + 1, n)), unit="D")
    return pd.DataFrame({"y": 0.3 * np.arange(n) + rng.normal(size=n)}, index=pd.DatetimeIndex(times))


def test_drift_adds_the_first_to_last_slope_and_its_intervals_match_loops():
    y = _irregular()
    train, test = y.iloc[:50], y.iloc[50:]
    t, v = list(train.index), train["y"].to_numpy()
    slope = (v[-1] - v[0]) / ((t[-1] - t[0]) / pd.Timedelta(1, "ns"))
    forecast = F.drift(train, test.index, None, {})
    for k, when in enumerate(test.index):
        lead = when - t[-1]
        point = v[-1] + slope * (lead / pd.Timedelta(1, "ns"))
        errors = []
        for j in range(len(t)):
            before = [i for i in range(len(t)) if t[i] <= t[j] - lead]
            if before:
                o = before[-1]
                errors.append(v[j] - v[o] - slope * ((t[j] - t[o]) / pd.Timedelta(1, "ns")))
        assert forecast["mean"].iloc[k] == pytest.approx(point)
        if len(errors) >= F.MIN_ERRORS:
            q = np.quantile(errors, [0.1, 0.9, 0.025, 0.975])
            got = forecast[["lower_80", "upper_80", "lower_95", "upper_95"]].iloc[k].to_numpy()
            np.testing.assert_allclose(got, point + q)
        else:
            assert forecast[["lower_80", "upper_95"]].iloc[k].isna().all()


def test_a_panel_subject_a_per_subject_method_cannot_fit_gets_its_last_value():
    a = _irregular(30, seed=1)
    b = pd.DataFrame({"y": [1.0, 2.0, 3.0]}, index=a.index[[24, 26, 27]])  # one point before the cutoff
    panel = pd.concat({"a": a, "b": b}, names=["subject", "time"])
    cutoff = a.index[25]
    train, test = D.split(panel, cutoff)
    future = test.index

    def picky(y, times, spec):
        if len(y) < 3:
            raise ValueError("too short")
        return F.frame(times, 1.0)

    out = F.per_subject(picky)(train, future, None, {})
    assert (out.loc["b", "mean"] == train.loc["b", "y"].iloc[-1]).all()
    assert (out.loc["a", "mean"] == 1.0).all() and "fell back" in out.attrs["info"]


def test_statsforecast_forecasts_are_read_off_the_grid_from_the_last_observation():
    models = pytest.importorskip("statsforecast.models")
    rng = np.random.default_rng(0)
    days = pd.date_range("2001-01-01", periods=200, freq="D")
    y = pd.Series(np.sin(np.arange(200) * 2 * np.pi / 7) + 0.02 * np.arange(200) + rng.normal(0, 0.1, 200), index=days)
    y = y.iloc[np.sort(rng.choice(200, 120, replace=False))]
    y = y.set_axis(pd.DatetimeIndex(y.index, freq=None))
    spec = D.Spec("toy", "", "", "daily", "D", D.WEEKLY, 7, y.index[-1])
    ahead = y.index[-1] + pd.to_timedelta([1, 3, 10], unit="D")
    between = y.index[-1] + pd.Timedelta(hours=12)
    out = F._statsforecast("AutoTheta")(y, pd.DatetimeIndex([between, *ahead]), spec)
    grid = pd.date_range(y.index[0], y.index[-1], freq="D")
    values = np.interp(F.ns(grid), F.ns(y.index), y.to_numpy())
    direct = models.AutoTheta(season_length=7).fit(values).predict(h=10, level=[80, 95])
    np.testing.assert_allclose(out["mean"].iloc[1:], direct["mean"][[0, 2, 9]], rtol=1e-6)
    np.testing.assert_allclose(out["upper_95"].iloc[1:], direct["hi-95"][[0, 2, 9]], rtol=1e-6)
    # half a day after the last observation: half way from it to the first grid step ahead
    assert out["mean"].iloc[0] == pytest.approx((values[-1] + direct["mean"][0]) / 2)


def test_seeded_results_are_averaged_and_summaries_give_the_range_over_seeds():
    spec = D.Spec("t", "", "", "daily", "D", None, None, START, kind="short")
    task = D.Task(spec, _irregular(10), _irregular(5), n_original=15, kept=None)
    results = [F.Result("t", "s5", seed=s, mase=m, mae=m, coverage_95=c) for s, m, c in
               [(0, 1.0, 0.9), (1, 2.0, 1.0), (2, 3.0, 0.8)]]
    results.append(F.Result("t", "last_value", seed=F.SEED, mase=2.5, mae=2.5, coverage_95=0.5))
    mean = {r.method: r for r in F.averaged(results)}
    assert mean["s5"].mase == pytest.approx(2.0) and mean["s5"].coverage_95 == pytest.approx(0.9)
    assert mean["last_value"].mase == 2.5
    assert [r.seed for r in F.for_seed(results, 1)] == [1, F.SEED]
    rows = {row[0]: row for row in F.summary_rows(results, [task], ["s5", "last_value"], [0, 1, 2])}
    assert rows["s5"][2] == "2.000 (1.000–3.000)"  # geo-mean MASE: mean over seeds (lowest–highest)
    assert rows["last_value"][2] == "2.500"
    assert rows["s5"][4] == "0.7 (0–1)"  # wins: s5 beats last_value with seeds 0 and 1
