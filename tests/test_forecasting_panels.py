"""Panels as users hold them (docs/forecasting.md, "Panels: each series'
own times"): each series forecast at its own times (a (series, time)
MultiIndex) or at leads after its own last observation, against the
one-index call on that series alone; ISO date strings; errors naming the
argument; `horizon_` in the index's units; a column a series has not
observed yet forecast NaN for that series only."""

import copy
import pickle

import numpy as np
import pandas as pd
import pytest

from s5ts.forecasting import Forecaster

FAST = {"n_layers": 1, "d_model": 8, "state_size": 4, "max_epochs": 2, "random_state": 0}


def _series(rng, n, start, tz=None, columns=("y",)):
    """`n` irregular observations (whole seconds, so leads from the last one are exact) from `start`."""
    hours = np.cumsum(rng.exponential(1.0, n))
    index = (pd.Timestamp(start, tz=tz) + pd.to_timedelta(hours, unit="h")).floor("s")
    return pd.DataFrame({c: np.cumsum(rng.normal(size=n)) for c in columns}, index=index)


@pytest.fixture(scope="module")
def panel():
    rng = np.random.default_rng(0)
    return pd.concat(
        {"a": _series(rng, 60, "2024-01-01"), "b": _series(rng, 40, "2024-01-03"), "c": _series(rng, 50, "2024-01-02")},
        names=["id", "time"],
    )


@pytest.fixture(scope="module")
def model(panel):
    return Forecaster(**FAST).fit(panel)


def _alone(model, sid):
    """The model with series `sid` alone: its one-index call is the old call, for that series only."""
    one = copy.copy(model)
    one.series_ = {sid: model.series_[sid]}
    return one


def _first(panel, sid):
    return panel.xs(sid).index[0]


def _last(panel, sid):
    return panel.xs(sid).index[-1]


def test_each_series_at_its_own_times_equals_the_one_index_call_on_it(panel, model):
    # Series b starts two days after a: 2024-01-02 12:00 is before b's first
    # observation, so one index of times for every series raises, but asked
    # of a and c alone it is forecast (in-sample, one step ahead). The rows
    # are not series-major and come back in the order given.
    early = pd.Timestamp("2024-01-02 12:00")
    asked = [
        ("c", _last(panel, "c") + pd.Timedelta(hours=3)),
        ("a", early),
        ("b", _first(panel, "b") + pd.Timedelta(minutes=10)),
        ("a", _last(panel, "a") + pd.Timedelta(hours=1)),
        ("c", early),
        ("b", _last(panel, "b") + pd.Timedelta(hours=2)),
    ]
    index = pd.MultiIndex.from_tuples(asked, names=["id", "time"])
    assert _first(panel, "b") > early > max(_first(panel, "a"), _first(panel, "c"))
    with pytest.raises(ValueError, match="times: series 'b' cannot forecast at 2024-01-02 12:00:00"):
        model.predict(pd.DatetimeIndex([early]))
    mean, var, out = model.predict_distribution(index)
    assert out.equals(index) and list(out.names) == ["id", "time"]
    for row, (sid, when) in enumerate(asked):
        alone_mean, alone_var, alone_index = _alone(model, sid).predict_distribution(pd.DatetimeIndex([when]))
        assert list(alone_index) == [(sid, when)]
        np.testing.assert_allclose(mean[row], alone_mean[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(var[row], alone_var[0], rtol=1e-5, atol=1e-9)
    assert np.isfinite(mean).all() and (var > 0).all()
    # a list of (series, time) tuples is the same MultiIndex
    frame = model.predict(asked)
    np.testing.assert_array_equal(frame.to_numpy(), model.predict(index).to_numpy())


def test_leads_after_each_last_observation_equal_the_absolute_times(panel, model):
    leads = ["2h", pd.Timedelta(minutes=30), np.timedelta64(1, "D")]
    steps = pd.to_timedelta([2, 0.5, 24], unit="h")
    mean, var, index = model.predict_distribution(leads=leads)
    absolute = pd.MultiIndex.from_tuples(
        [(sid, _last(panel, sid) + step) for sid in ("a", "b", "c") for step in steps], names=["id", "time"]
    )
    assert index.equals(absolute)  # series-major, each series' leads in the order given
    expected_mean, expected_var, _ = model.predict_distribution(absolute)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-6)
    np.testing.assert_allclose(var, expected_var, rtol=1e-6)
    # one lead, as a string
    one = model.predict(leads="2h")
    np.testing.assert_allclose(one.to_numpy(), mean[::3], rtol=1e-6)
    assert list(one.index) == [(sid, _last(panel, sid) + pd.Timedelta(hours=2)) for sid in ("a", "b", "c")]


def test_leads_on_a_numeric_index_are_numbers():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.exponential(1.0, 50))
    y = pd.Series(np.sin(t), index=t, name="y")
    model = Forecaster(**FAST).fit(y, horizon=6.0)
    assert model.horizon_ == 6.0 and isinstance(model.horizon_, float)
    got = model.predict(leads=[0.5, 4])
    expected = model.predict(t[-1] + np.array([0.5, 4.0]))
    assert got.index.equals(expected.index)
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="leads: '2h' is not a number"):
        model.predict(leads="2h")
    with pytest.raises(ValueError, match="times: '2024-03-01' is a string, but the forecaster was fitted on numeric"):
        model.predict(["2024-03-01"])
    with pytest.raises(ValueError, match="times: a MultiIndex names series, but the forecaster was fitted on one series"):
        model.predict([("a", 60.0)])


def test_bad_times_and_leads_are_named(panel, model):
    later = _last(panel, "a") + pd.Timedelta(hours=1)
    with pytest.raises(ValueError, match=r"times: series 'zz', 7 not in the fitted panel"):
        model.predict([("a", later), ("zz", later), (7, later)])
    with pytest.raises(ValueError, match="times: a MultiIndex of 3 levels"):
        model.predict(pd.MultiIndex.from_tuples([("a", "x", later)]))
    with pytest.raises(ValueError, match="times: 'soon' is not an ISO 8601 date"):
        model.predict(["2024-03-01", "soon"])
    with pytest.raises(ValueError, match="times: '03/01/2024' is not an ISO 8601 date"):
        model.predict(["03/01/2024"])  # month or day first: not read
    with pytest.raises(ValueError, match="times: the time at position 1 is missing"):
        model.predict(pd.DatetimeIndex([later, pd.NaT]))
    with pytest.raises(TypeError, match=r"times are numeric \(tz None\), but the forecaster was fitted on datetime"):
        model.predict([1.0, 2.0])
    with pytest.raises(TypeError, match=r"times are datetime \(tz UTC\)"):
        model.predict(pd.DatetimeIndex([later], tz="UTC"))
    with pytest.raises(ValueError, match="times: '2024-03-01T00:00\\+01:00' has a UTC offset"):
        model.predict(["2024-03-01T00:00+01:00"])
    with pytest.raises(ValueError, match="leads: 3.0 is a number, but y is indexed by datetimes"):
        model.predict(leads=3.0)
    with pytest.raises(ValueError, match="leads: 'soon' is not a duration"):
        model.predict(leads=["1h", "soon"])
    with pytest.raises(ValueError, match="leads must be positive .* got '-1h'"):
        model.predict(leads=["1h", "-1h"])
    with pytest.raises(ValueError, match="leads must be positive"):
        model.predict(leads=pd.Timedelta(0))
    with pytest.raises(TypeError, match="predict needs times or leads"):
        model.predict()
    with pytest.raises(TypeError, match="not both"):
        model.predict([later], leads="1h")
    # a time before the series' first observation, asked of that series alone
    with pytest.raises(ValueError, match="series 'b': cannot forecast at 2024-01-02 12:00:00: it is not after"):
        model.predict([("b", pd.Timestamp("2024-01-02 12:00"))])


def test_iso_strings_are_read_as_the_index(panel, model):
    strings = ["2024-01-06", "2024-01-06 12:30", "2024-01-07T01:02:03"]
    got = model.predict(strings)
    expected = model.predict(pd.DatetimeIndex(strings))
    assert got.index.equals(expected.index)
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    np.testing.assert_array_equal(model.predict("2024-01-06").to_numpy(), expected.to_numpy()[[0, 3, 6]])
    np.testing.assert_array_equal(model.predict([("b", "2024-01-06 12:30")]).to_numpy(), expected.to_numpy()[[4]])


def test_strings_on_a_time_zone_are_wall_times_there():
    rng = np.random.default_rng(5)
    y = _series(rng, 60, "2024-10-20", tz="Europe/Berlin")
    model = Forecaster(**FAST).fit(y)
    stamps = pd.DatetimeIndex(["2024-10-26 08:00", "2024-10-28 09:15"]).tz_localize("Europe/Berlin")
    expected = model.predict(stamps)
    got = model.predict(["2024-10-26 08:00", "2024-10-28T08:15+00:00"])  # the second: 09:15 in Berlin (CET)
    assert got.index.equals(expected.index) and str(got.index.tz) == "Europe/Berlin"
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    # ValueError on every pandas (pandas 2 raises pytz's errors, which are not ValueErrors)
    with pytest.raises(ValueError, match="times: '2024-10-27 02:30' is not one time in the forecaster's time zone "
                                         r"Europe/Berlin \(it occurs twice there"):
        model.predict(["2024-10-27 02:30"])  # twice that night: clocks go back at 03:00
    with pytest.raises(ValueError, match=r"times: '2025-03-30 02:30' is not one time .*\(the clocks skip it there\)"):
        model.predict(["2025-03-30 02:30"])  # never: clocks go forward at 02:00
    assert model.predict(["2024-10-27T02:30+01:00"]).index[0] == pd.Timestamp("2024-10-27 01:30", tz="UTC")


def test_strings_on_a_timedelta_index_are_durations():
    rng = np.random.default_rng(6)
    hours = np.cumsum(rng.exponential(1.0, 50))
    y = pd.Series(np.sin(hours), index=pd.to_timedelta(hours, unit="h").round("s"), name="y")
    model = Forecaster(**FAST).fit(y, horizon="12h")
    assert model.horizon_ == pd.Timedelta(hours=12)
    got = model.predict(["3 days", "80h"])
    expected = model.predict(pd.to_timedelta(["3 days", "80h"]))
    assert got.index.equals(expected.index)
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
    leads = model.predict(leads="5h")
    np.testing.assert_allclose(leads.to_numpy(), model.predict(y.index[-1:] + pd.Timedelta(hours=5)).to_numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="times: 'soon' is not a duration"):
        model.predict(["soon"])


def test_horizon_is_in_the_index_units_and_survives_pickling(panel, model):
    spans = [(_last(panel, sid) - _first(panel, sid)).total_seconds() for sid in ("a", "b", "c")]
    assert isinstance(model.horizon_, pd.Timedelta)
    assert model.horizon_.total_seconds() == pytest.approx(np.median(spans) / 4, rel=1e-9)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.horizon_ == model.horizon_
    np.testing.assert_array_equal(restored.predict(leads="3h").to_numpy(), model.predict(leads="3h").to_numpy())


def test_a_column_not_observed_yet_is_nan_for_that_series_only():
    # Series p never observes column "b"; q observes it from its 20th
    # observation on. Each is forecast NaN (mean and variance) where it has
    # no value of "b" before the time asked, and "a" is forecast everywhere.
    rng = np.random.default_rng(7)
    p, q = _series(rng, 50, "2024-01-01", columns=("a", "b")), _series(rng, 60, "2024-01-01", columns=("a", "b"))
    p["b"] = np.nan
    q.iloc[:20, 1] = np.nan
    y = pd.concat({"p": p, "q": q}, names=["id", "time"])
    model = Forecaster(**FAST, fallback=None).fit(y)  # a series new to the model has S5's forecast, as p then
    inside = q.index[10] + (q.index[11] - q.index[10]) / 2  # before q's first "b"
    later = pd.Timedelta(hours=2)
    asked = pd.MultiIndex.from_tuples([("p", p.index[30]), ("p", p.index[-1] + later), ("q", inside), ("q", q.index[-1] + later)])
    mean, var, _ = model.predict_distribution(asked)
    unobserved = np.array([[False, True], [False, True], [False, True], [False, False]])
    assert np.isnan(mean[unobserved]).all() and np.isnan(var[unobserved]).all()
    assert np.isfinite(mean[~unobserved]).all() and (var[~unobserved] > 0).all()
    # A new series with "b" not observed yet, added by update, is forecast as p is.
    updated = copy.deepcopy(model).update(pd.concat({"r": p}, names=["id", "time"]))
    times = p.index[-1] + pd.to_timedelta([1, 5], unit="h")
    np.testing.assert_allclose(
        updated.predict([("r", t) for t in times]).to_numpy(), model.predict([("p", t) for t in times]).to_numpy(), rtol=1e-5
    )
    with pytest.raises(ValueError, match="column 'b' of y has no observed value in any series"):
        Forecaster(**FAST).fit(pd.concat({"p": p, "q": q.assign(b=np.nan)}, names=["id", "time"]))


def test_exogenous_x_is_needed_only_at_each_series_own_times():
    rng = np.random.default_rng(8)
    y = pd.concat({"a": _series(rng, 50, "2024-01-01"), "b": _series(rng, 40, "2024-01-02")}, names=["id", "time"])
    X = pd.DataFrame({"temp": rng.normal(size=len(y))}, index=y.index)
    model = Forecaster(**FAST).fit(y, X)
    last = {sid: y.xs(sid).index[-1] for sid in ("a", "b")}
    asked = pd.MultiIndex.from_tuples([("b", last["b"] + pd.Timedelta(hours=4)), ("a", last["a"] + pd.Timedelta(hours=1))])
    future = pd.DataFrame({"temp": [0.5, -1.0]}, index=asked)  # no row of a at b's time, nor of b at a's
    got = model.predict(asked, future)
    for row, (sid, when) in enumerate(asked):
        alone = _alone(model, sid).predict(pd.DatetimeIndex([when]), future.xs(sid, drop_level=False))
        np.testing.assert_allclose(got.to_numpy()[row], alone.to_numpy()[0], rtol=1e-5)
    by_leads = model.predict(leads=["4h", "1h"], X=pd.DataFrame(
        {"temp": 0.0}, index=pd.MultiIndex.from_tuples([(s, last[s] + pd.Timedelta(hours=h)) for s in last for h in (4, 1)])
    ))
    assert np.isfinite(by_leads.to_numpy()).all()
    with pytest.raises(ValueError, match="series 'a': X has no row at time"):
        model.predict(leads="2h", X=future)
