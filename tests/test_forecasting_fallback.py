"""The forecaster's fallback to simple forecasts on each series' held-out
end (`_simple`, `_fallback`): the simple forecasts against naive loops in
float64, the held-out pairs, the choice and its shrinkage, predictions that
follow the chosen candidate, and forecasts of never-negative quantities
that stay at or above zero."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from s5ts.forecasting import Forecaster
from s5ts.forecasting._calendar import WEEK, Cycle
from s5ts.forecasting._calibration import LeadCalibration, lead_calibration
from s5ts.forecasting._fallback import (
    HISTORY_COUNT,
    INTERVAL_SHRINKAGE,
    S5,
    SHRINKAGE,
    Trial,
    candidate_names,
    choose,
    held_out_pairs,
    history_choice,
    history_errors,
    interval_scales,
    rolling_pairs,
    simple_part,
)
from s5ts.forecasting._simple import CYCLE_QUANTILE, DRIFT_MEMORY, shows_cycle, simple_forecast, simple_names, smoother_time

FAST = {"n_layers": 1, "d_model": 8, "state_size": 4, "max_epochs": 2, "random_state": 0}


def _series(rng, n=40):
    times = np.cumsum(rng.uniform(0.5, 3.0, n))
    y = rng.normal(size=(n, 2)).cumsum(axis=0)
    y[rng.random((n, 2)) < 0.25] = np.nan
    y[0] = [1.0, np.nan]
    return times, y


def _naive(name, times, y, k, T, tau, period=None):
    """One simple forecast of column by column, by loops over the history up to k."""
    out = []
    for j in range(y.shape[1]):
        seen = [(times[i], y[i, j]) for i in range(k + 1) if not math.isnan(y[i, j])]
        if not seen:
            out.append(math.nan)
            continue
        t_last, last = seen[-1]
        if name == "last_value":
            out.append(last)
        elif name == "drift":
            t_first, first = seen[0]
            if t_last > t_first:  # the slope damped with a time constant of DRIFT_MEMORY of its span
                memory = DRIFT_MEMORY * (t_last - t_first)
                out.append(last + (last - first) / (t_last - t_first) * memory * (1 - math.exp(-(T - t_last) / memory)))
            else:
                out.append(last)
        elif name == "smoother":
            w = [math.exp(-(times[k] - t) / tau) for t, _ in seen]
            out.append(sum(wi * v for wi, (_, v) in zip(w, seen)) / sum(w))
        else:  # seasonal
            m = max(1, math.ceil((T - times[k]) / period))
            when = T - m * period
            if not (seen[0][0] <= when <= t_last):
                out.append(last)
                continue
            for (t0, v0), (t1, v1) in zip(seen, seen[1:] + [seen[-1]]):
                if t0 <= when <= t1:
                    out.append(v0 if t1 == t0 else v0 + (v1 - v0) * (when - t0) / (t1 - t0))
                    break
    return out


@pytest.mark.parametrize("name", ["last_value", "drift", "smoother", "seasonal_weekly"])
def test_simple_forecasts_match_naive_loops(name):
    rng = np.random.default_rng(1)
    times, y = _series(rng)
    period = 9.0
    cycles = (Cycle("weekly", period, 2),)
    origins = rng.integers(0, len(times), 25)
    at = times[origins] + rng.uniform(0.1, 20.0, 25)
    got = simple_forecast(name, times, y, origins, at, tau=2.5, cycles=cycles)
    want = np.array([_naive(name, times, y, k, T, 2.5, period) for k, T in zip(origins, at)])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_simple_names_follow_the_cycles_and_unknown_names_raise():
    assert simple_names(()) == ("last_value", "drift", "smoother")
    assert simple_names((Cycle("weekly", WEEK, 2),))[-1] == "seasonal_weekly"
    with pytest.raises(ValueError, match="seasonal_yearly"):
        simple_forecast("seasonal_yearly", np.arange(3.0), np.ones((3, 1)), np.array([2]), np.array([4.0]), tau=1.0)


def test_smoother_time_prefers_a_long_memory_on_noise_and_a_short_one_on_a_walk():
    rng = np.random.default_rng(2)
    times = np.arange(300.0)
    noise = rng.normal(size=(300, 1))
    walk = rng.normal(size=(300, 1)).cumsum(axis=0)
    assert smoother_time(times, noise, 250) >= 8.0
    assert smoother_time(times, walk, 250) <= 1.0


def _naive_shows_cycle(times, y, stop, period, quantile):
    """One and half a period back against each observation, column by column, by loops."""
    ratios, counts = [], []
    for c in range(y.shape[1]):
        seen = [(times[i], y[i, c]) for i in range(stop) if not math.isnan(y[i, c])]
        if not seen:
            continue

        def at(when):  # linear interpolation between the observations around `when`
            for (t0, v0), (t1, v1) in zip(seen, seen[1:]):
                if t0 <= when <= t1:
                    return v0 + (v1 - v0) * (when - t0) / (t1 - t0)
            return seen[0][1] if when < seen[0][0] else seen[-1][1]

        one = [v - at(t - period) for t, v in seen if t >= seen[0][0] + period]
        half = [v - at(t - period / 2) for t, v in seen if t >= seen[0][0] + period]
        if len(one) < 3:
            continue

        def mean_square(d):
            return sum((x - sum(d) / len(d)) ** 2 for x in d) / len(d)

        if mean_square(half) > 0:
            ratios.append(mean_square(one) / mean_square(half))
            counts.append(len(one))
    if not counts:
        return False
    n = sum(counts)
    return sum(r * k for r, k in zip(ratios, counts)) / n < scipy.stats.f.ppf(quantile, n - 1, n - 1)


def test_a_seasonal_candidate_needs_a_history_that_shows_its_cycle():
    weekly = Cycle("weekly", WEEK, 2)
    stop = 250
    decided = {}
    for seed in range(10):
        rng = np.random.default_rng(seed)
        times = np.sort(rng.uniform(0.0, 12 * WEEK, 300))
        season = np.sin(2 * np.pi * times / WEEK)[:, None] * np.array([[5.0, 3.0]])
        noise = rng.normal(scale=0.5, size=(300, 2))
        cases = {
            "seasonal": season + noise,
            # a season on a trend: the trend's growth over one period is the same in every one-period difference
            "trending season": season + 3.0 * times[:, None] / WEEK + noise,
            # columns in units a thousand times apart: each column's ratio is free of its units
            "seasonal beside a large noise": np.column_stack([season[:, 0] + noise[:, 0], 1000 * noise[:, 1]]),
            # no cycle, whatever the calendar allows
            "noise": rng.normal(size=(300, 2)),
            "trend": 3.0 * times[:, None] / WEEK + noise,
            "walk": rng.normal(size=(300, 2)).cumsum(axis=0),
        }
        for case, y in cases.items():
            y[rng.random(y.shape) < 0.2] = np.nan
            found = shows_cycle("seasonal_weekly", times, y, stop, (weekly,))
            assert found == _naive_shows_cycle(times, y, stop, WEEK, CYCLE_QUANTILE), (case, seed)
            decided.setdefault(case, []).append(found)
    shown = {case: sum(found) for case, found in decided.items()}
    assert shown["seasonal"] == shown["trending season"] == 10
    assert shown["seasonal beside a large noise"] == 10
    assert shown["walk"] == 0
    assert shown["noise"] <= 2 and shown["trend"] <= 2  # a 5 % rule of thumb on overlapping differences
    # not a seasonal forecast: always a candidate; a history shorter than a period: not shown
    assert shows_cycle("drift", times, cases["walk"], stop, (weekly,))
    short = times < times[0] + 0.9 * WEEK
    assert not shows_cycle("seasonal_weekly", times[short], cases["seasonal"][short], int(short.sum()), (weekly,))
    with pytest.raises(ValueError, match="unknown simple forecast"):
        shows_cycle("seasonal_yearly", times, cases["seasonal"], stop, (weekly,))


def test_held_out_pairs_forecast_the_tail_from_rolling_origins():
    times = np.cumsum(np.random.default_rng(3).uniform(0.5, 2.0, 200))
    stop, lead = 150, 10.0
    origins, targets = held_out_pairs(times, stop, lead)
    assert origins.min() == stop - 1 and (targets >= stop).all() and (targets > origins).all()
    assert (times[targets] - times[origins] <= lead).all()
    assert len(np.unique(origins)) <= 32
    # every target of the first origin within the lead
    first = targets[origins == stop - 1]
    within = np.flatnonzero((np.arange(200) >= stop) & (times - times[stop - 1] <= lead))
    np.testing.assert_array_equal(first, within[: len(first)] if len(within) <= 64 else first)
    assert len(held_out_pairs(times, 200, lead)[0]) == 0


def _naive_history_errors(simple, times, y, stop, lead, tau, period):
    """`history_errors` by loops: every (origin, target) pair of the trained part, no subsampling."""
    scale = []
    for j in range(y.shape[1]):
        seen = [y[i, j] for i in range(stop) if not math.isnan(y[i, j])]
        steps = [abs(b - a) for a, b in zip(seen, seen[1:])]
        mean = sum(steps) / len(steps) if steps else 0.0
        scale.append(mean if mean > 0 else 1.0)
    errors = {name: [] for name in simple}
    for k in range(1, stop - 1):
        for q in range(k + 1, stop):
            if times[q] - times[k] > lead:
                break
            for name in simple:
                forecast = _naive(name, times, y, k, times[q], tau, period)
                for j in range(y.shape[1]):
                    if not (math.isnan(y[q, j]) or math.isnan(forecast[j])):
                        errors[name].append(abs(y[q, j] - forecast[j]) / scale[j])
    count = len(errors[simple[0]])
    return [sum(errors[name]) / count if count else math.nan for name in simple], count


def test_history_errors_match_a_loop_over_the_trained_part():
    weekly = Cycle("weekly", 9.0, 2)
    simple = ("last_value", "drift", "smoother", "seasonal_weekly")
    picked = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        times, y = _series(rng, n=34)
        # a different shape each seed: a walk, a trend, a cycle on noise; each column in its own units
        y += [0.0, 0.4, 0.0][seed % 3] * times[:, None] + [0.0, 0.0, 4.0][seed % 3] * np.sin(2 * np.pi * times / 9.0)[:, None]
        y *= [1.0, 50.0]
        stop, lead = 30, 12.0  # at most 28 origins and 29 targets each: `rolling_pairs` keeps every pair
        origins, targets = rolling_pairs(times, np.arange(1, stop - 1), 0, stop, lead)
        assert ((targets > origins) & (targets < stop) & (times[targets] - times[origins] <= lead)).all()
        want, want_count = _naive_history_errors(simple, times, y, stop, lead, 2.5, 9.0)
        errors, count = history_errors(simple, times, y, stop, lead, tau=2.5, cycles=(weekly,))
        assert count == want_count >= HISTORY_COUNT
        np.testing.assert_allclose(errors, want, rtol=1e-10)
        got = history_choice(simple, errors, count)
        assert got == simple[int(np.argmin(want))], seed
        # nothing at or after the tail's first observation is read
        later = y.copy()
        later[stop:] += 100.0
        np.testing.assert_array_equal(history_errors(simple, times, later, stop, lead, tau=2.5, cycles=(weekly,))[0], errors)
        picked.append(got)
    assert len(set(picked)) > 1  # the series' shapes are told apart
    assert history_errors((), times, y, 30, 12.0)[1] == 0
    assert history_choice((), *history_errors((), times, y, 30, 12.0)) is None


def test_history_choice_needs_enough_values_and_keeps_the_first_on_a_tie():
    times = np.arange(20.0)
    rng = np.random.default_rng(5)
    y = rng.normal(size=(20, 2)).cumsum(axis=0)
    # lead 1: each origin k = 1..stop-2 forecasts observation k + 1 alone, two columns each
    assert history_errors(("last_value",), times, y, 7, 1.0)[1] == 10
    assert history_choice(("last_value", "drift"), *history_errors(("last_value", "drift"), times, y, 7, 1.0)) is not None
    y[3, 1] = np.nan  # one value fewer
    assert history_errors(("last_value",), times, y, 7, 1.0)[1] == 9
    assert history_choice(("last_value", "drift"), *history_errors(("last_value", "drift"), times, y, 7, 1.0)) is None
    flat = np.ones((20, 1))  # every simple forecast is exact
    for simple in (("drift", "last_value"), ("last_value", "drift")):
        assert history_choice(simple, *history_errors(simple, times, flat, 15, 3.0)) == simple[0]


def test_history_choice_tells_a_trend_from_noise_and_a_walk():
    rng = np.random.default_rng(4)
    times = np.cumsum(rng.uniform(0.5, 1.5, 200))
    simple = ("last_value", "drift", "smoother")
    cases = {
        "trend": 0.5 * times + rng.normal(size=200),
        "noise": rng.normal(size=200),
        "walk": rng.normal(size=200).cumsum(),
    }
    found = {}
    for case, values in cases.items():
        y = values[:, None]
        tau = smoother_time(times, y, 170)
        found[case] = history_choice(simple, *history_errors(simple, times, y, 170, 10.0, tau=tau))
    assert found["trend"] == "drift"
    assert found["noise"] == "smoother"
    assert found["walk"] in ("last_value", "smoother")  # a smoother of a short memory is the last value


def _trial(names, mean_errors, count):
    errors = np.tile(np.asarray(mean_errors, np.float64), (count, 1))
    return Trial(names, errors.sum(axis=0), count, errors, np.ones(count), np.arange(count, dtype=np.float64))


def test_candidates_are_s5_and_its_averages():
    assert candidate_names(("last_value", "drift")) == ("s5", "s5+last_value", "s5+drift")
    with pytest.raises(ValueError, match="unknown candidate"):
        simple_part("drift")


def test_the_widest_of_two_lead_calibrations_is_the_larger_factor_at_every_lead():
    a = LeadCalibration(np.array([1.0, 3.0]), np.array([1.0, 2.0, 2.5]))
    b = LeadCalibration(np.array([2.0]), np.array([1.5, 1.8]))
    leads = np.linspace(0.0, 5.0, 101)
    np.testing.assert_array_equal(a.widest(b)(leads), np.maximum(a(leads), b(leads)))
    c = LeadCalibration(np.array([2.0]), np.array([1.5, 1.8]), np.array([[0.9, 1.5], [1.7, 1.8]]))
    widest = a.widest(c)
    for j in range(2):  # each coverage's factor, as a factor in its own right
        expected = np.maximum(a(leads) * a.interval_factors(leads)[:, j], c(leads) * c.interval_factors(leads)[:, j])
        np.testing.assert_array_equal(widest(leads) * widest.interval_factors(leads)[:, j], expected)


def test_choose_picks_the_lowest_shrunk_error_and_keeps_s5_on_ties():
    names = candidate_names(("last_value",))[:2] + ("s5+drift",)
    trials = [
        _trial(names, [2.0, 1.0, 1.5], 200),  # a long tail: its own verdict, last value
        _trial(names, [1.0, 1.2, 1.1], 200),  # S5
        _trial(names, [1.0, 0.9, 1.0], 2),  # a short tail leans on the panel's verdict
        None,
    ]
    fallback = choose(["a", "b", "c", "d"], trials, [1.0] * 4, names, LeadCalibration())
    assert fallback.table["method"].tolist() == ["s5+last_value", S5, "s5+last_value", S5]
    assert fallback.method("b") == S5 and fallback.method("unknown") == S5
    assert fallback.table.loc["a", "s5+last_value"] == pytest.approx(1.0)
    # the panel's verdict alone decides for the short tail
    pooled = (np.array([2.0, 1.0, 1.5]) * 200 + np.array([1.0, 1.2, 1.1]) * 200 + np.array([1.0, 0.9, 1.0]) * 2) / 402
    own = (np.array([1.0, 0.9, 1.0]) * 2 + SHRINKAGE * pooled) / (2 + SHRINKAGE)
    assert names[int(np.argmin(own))] == "s5+last_value"
    assert set(fallback.calibrations) == set(names)
    # no candidate's intervals narrower than S5's: the errors here would give factors well below 1
    assert all((c(np.arange(300.0)) >= 1.0).all() for c in fallback.calibrations.values())
    tie = choose(["a"], [_trial(names, [1.0, 1.0, 1.0], 50)], [1.0], names, LeadCalibration())
    assert tie.method("a") == S5


def test_a_candidate_a_series_may_not_use_is_neither_chosen_nor_pooled_for_it():
    names = (S5, "s5+last_value", "s5+seasonal_weekly")
    banned = dataclasses.replace(_trial(names, [2.0, 1.5, 0.5], 100), allowed=np.array([True, True, False]))
    short = _trial(names, [1.0, 1.0, 0.9], 2)  # leans on the panel: the seasonal pooled over series "b" alone
    trials = [banned, _trial(names, [1.0, 1.2, 1.4], 100), short]
    fallback = choose(["a", "b", "c"], trials, [1.0] * 3, names, LeadCalibration())
    # the seasonal's intervals are read from the errors of the series it is offered to
    offered = trials[1:]
    expected = lead_calibration(np.concatenate([t.errors[:, 2] for t in offered]),
                                np.concatenate([t.variances for t in offered]),
                                np.concatenate([t.leads for t in offered])).widest(LeadCalibration())
    leads = np.linspace(0.0, 120.0, 50)
    np.testing.assert_array_equal(fallback.calibrations["s5+seasonal_weekly"](leads), expected(leads))
    assert fallback.method("a") == "s5+last_value"  # the lowest error among those it may use
    assert math.isnan(fallback.table.loc["a", "s5+seasonal_weekly"])
    pooled = np.array([(200 + 100 + 2) / 202, (150 + 120 + 2) / 202, (140 + 1.8) / 102])  # the seasonal's without "a"
    own = (np.array([1.0, 1.0, 0.9]) * 2 + SHRINKAGE * pooled) / (2 + SHRINKAGE)
    assert fallback.method("c") == names[int(np.argmin(own))] == "s5+last_value"
    with_a = (1.8 + SHRINKAGE * (50 + 140 + 1.8) / 202) / (2 + SHRINKAGE)  # "a"'s 0.5 pooled would make it the seasonal
    assert with_a < own.min()
    # S5 is tried on every series, whatever `allowed` says of it
    none = dataclasses.replace(_trial(names, [1.0, 2.0, 2.0], 10), allowed=np.zeros(3, bool))
    assert choose(["a"], [none], [1.0], names, LeadCalibration()).method("a") == S5


def test_interval_scales_match_a_loop_over_the_series():
    rng = np.random.default_rng(4)
    counts = np.array([0, 3, 40, 400, 1])
    errors = rng.uniform(0.2, 2.0, len(counts)) * counts
    for n0 in (0.0, 5.0, INTERVAL_SHRINKAGE):
        pooled = sum(float(e) for e, n in zip(errors, counts) if n) / sum(int(n) for n in counts)
        expected = [1.0 if n == 0 else (float(e) + n0 * pooled) / (int(n) + n0) / pooled for e, n in zip(errors, counts)]
        np.testing.assert_allclose(interval_scales(errors, counts, n0), expected, rtol=1e-12)
    # with no shrinkage the scales are each series' mean over the panel's: weighted by the counts they average 1
    raw = interval_scales(errors, counts, 0.0)
    assert np.sum(raw * counts) / counts.sum() == pytest.approx(1.0)
    assert (interval_scales(errors, counts, math.inf) == 1.0).all()
    assert (interval_scales(np.array([0.0, 5.0]), np.array([0, 9])) == 1.0).all()  # one series with a tail


def test_a_series_with_larger_held_out_errors_gets_wider_intervals():
    names = (S5,)
    rng = np.random.default_rng(5)

    def trial(sd, n):
        errors = rng.normal(0.0, sd, (n, 1))
        return Trial(names, np.abs(errors).sum(axis=0), n, errors, np.ones(n), np.linspace(0.1, 3.0, n))

    trials = [trial(1.0, 300), trial(1.0, 300), trial(3.0, 300), trial(3.0, 4), None]
    floor = LeadCalibration(np.array([1.0]), np.array([1.0, 1.5]))
    fallback = choose(list("abcde"), trials, [1.0] * 5, names, floor)
    scale = fallback.table["interval_scale"]
    assert scale["c"] > 1.5 and scale["a"] < 1.0 and scale["b"] < 1.0
    assert 1.0 < scale["d"] < scale["c"]  # four values lean on the panel
    assert scale["e"] == 1.0 and fallback.interval_scale("e") == 1.0 and fallback.interval_scale("c") == scale["c"]
    # standardised by the floor, the factors the forecaster applies to S5's own intervals
    own = [np.mean(np.abs(t.errors[:, 0]) / floor(t.leads)) for t in trials[:4]]
    pooled = sum(o * t.count for o, t in zip(own, trials)) / sum(t.count for t in trials[:4])
    n0 = INTERVAL_SHRINKAGE
    assert scale["c"] == pytest.approx((own[2] * 300 + n0 * pooled) / (300 + n0) / pooled, rel=1e-12)
    assert scale["d"] == pytest.approx((own[3] * 4 + n0 * pooled) / (4 + n0) / pooled)


def _walk(n=160, seed=0):
    rng = np.random.default_rng(seed)
    times = pd.date_range("2021-01-01", periods=n, freq="D")
    return pd.Series(100 + rng.normal(size=n).cumsum(), index=times)


def test_predictions_follow_the_chosen_candidate():
    y = _walk()
    model = Forecaster(**FAST).fit(y, horizon="10D")
    future = y.index[-1] + pd.to_timedelta([1, 4, 9], unit="D")
    s5 = dataclasses.replace(model._fallback, methods={})
    forced = dataclasses.replace(model._fallback, methods={None: "s5+last_value"})
    model._fallback = s5
    mean_s5, var_s5, _ = model.predict_distribution(future)
    model._fallback = forced
    mean, var, _ = model.predict_distribution(future)
    np.testing.assert_allclose(mean[:, 0], 0.5 * (mean_s5[:, 0] + y.iloc[-1]), rtol=1e-9)
    leads = (future - y.index[-1]).total_seconds().to_numpy() / model.time_scale_
    ratio = (forced.calibrations["s5+last_value"](leads) / model.calibration_(leads)) ** 2
    assert (ratio >= 1).all()
    np.testing.assert_allclose(var[:, 0], var_s5[:, 0] * ratio, rtol=1e-6)


def test_fallback_none_is_s5_alone_and_auto_reports_each_series():
    y = _walk()
    auto = Forecaster(**FAST).fit(y, horizon="10D")
    plain = Forecaster(**FAST, fallback=None).fit(y, horizon="10D")
    assert plain.fallback_["method"].tolist() == [S5] and list(plain.fallback_.columns[3:]) == [S5]
    table = auto.fallback_
    assert list(table.columns[:3]) == ["method", "held_out", "interval_scale"] and table["held_out"].iloc[0] > 0
    assert set(candidate_names(("last_value", "drift", "smoother", "seasonal_weekly"))) == set(table.columns[3:])
    assert table["interval_scale"].tolist() == [1.0]  # a lone series is its own panel
    averages = table[[c for c in table.columns[3:] if c != S5]]
    assert averages.notna().sum(axis=1).tolist() == [1]  # the one average its trained part picked (`history_choice`)
    future = y.index[-1] + pd.to_timedelta([2, 7], unit="D")
    if table["method"].iloc[0] == S5:
        pd.testing.assert_frame_equal(auto.predict(future), plain.predict(future))
    with pytest.raises(ValueError, match="fallback"):
        Forecaster(fallback="always").fit(y)


def test_a_wandering_series_in_a_calm_panel_gets_intervals_scaled_by_its_own_factor():
    # in units of each series' local spread, a random walk strays further over ten days than white noise
    rng = np.random.default_rng(6)
    days = pd.date_range("2021-01-01", periods=120, freq="D")
    walks = {"calm1": False, "calm2": False, "calm3": False, "noisy": True}
    panel = pd.concat(
        {sid: pd.Series(rng.normal(size=len(days)).cumsum() if walk else rng.normal(size=len(days)), index=days)
         for sid, walk in walks.items()},
        names=["series", "time"],
    )
    model = Forecaster(**FAST, fallback=None).fit(panel, horizon="10D")
    scale = model.fallback_["interval_scale"]
    assert scale["noisy"] == scale.max() and scale["noisy"] > 1.0 > scale.drop("noisy").mean()
    assert (model.fallback_["method"] == S5).all()
    future = pd.MultiIndex.from_product([["calm1", "noisy"], days[-1] + pd.to_timedelta([1, 5], unit="D")])
    _, var, _ = model.predict_distribution(future)
    model._fallback = dataclasses.replace(model._fallback, scales={})
    _, plain, _ = model.predict_distribution(future)
    expected = np.repeat([scale["calm1"], scale["noisy"]], 2) ** 2
    np.testing.assert_allclose(var[:, 0] / plain[:, 0], expected, rtol=1e-6)


def test_a_never_negative_quantity_is_never_forecast_below_zero():
    hours = np.arange(0.0, 48.0, 1.5)
    conc = pd.Series(10 * np.exp(-hours / 6.0), index=pd.to_timedelta(hours, unit="h"))
    model = Forecaster(**FAST, fallback=None).fit(conc, horizon=pd.Timedelta("24h"))
    assert model.nonnegative_.tolist() == [True]
    future = conc.index[-1] + pd.to_timedelta([1, 6, 24], unit="h")
    model._fallback = dataclasses.replace(model._fallback, methods={None: "s5+drift"}, calibrations={
        "s5+drift": LeadCalibration(np.zeros(0), np.array([50.0]))})  # a falling line and very wide intervals
    assert (model.predict(future).to_numpy() >= 0).all()
    bounds = model.predict_interval(future, coverage=[0.8, 0.95])
    assert (bounds.to_numpy() >= 0).all() and (bounds[(0, 0.95, "lower")] == 0).all()
    quantiles = model.predict_quantiles(future, alpha=[0.05, 0.5])
    assert (quantiles.to_numpy() >= 0).all()
    # a quantity that was negative once keeps its Gaussian tails
    signed = conc - 0.5
    model = Forecaster(**FAST, fallback=None).fit(signed, horizon=pd.Timedelta("24h"))
    assert model.nonnegative_.tolist() == [False]
    assert (model.predict_interval(future, coverage=0.95).to_numpy() < 0).any()
    with pytest.raises(ValueError, match="coverage"):
        model.predict_interval(future, coverage=95)


def test_a_parquet_fit_keeps_s5_for_every_series(tmp_path):
    y = _walk(80)
    frame = pd.DataFrame({"id": "a", "time": y.index, "value": y.to_numpy()})
    frame.to_parquet(tmp_path / "part.parquet")
    model = Forecaster(**FAST, id_col="id", time_col="time").fit(str(tmp_path), horizon="5D")
    assert model.fallback_["method"].tolist() == [S5]
    assert model.predict(y.index[-1] + pd.to_timedelta([1, 3], unit="D")).notna().all().all()


def test_verbose_fit_reports_the_forecasts_used(capsys):
    model = Forecaster(**FAST, verbose=True).fit(_walk(), horizon="10D")
    out = capsys.readouterr().out
    used = model.fallback_["method"].iloc[0]
    assert "forecasts used" in out and f"{used}: 1 series" in out


def test_the_fallback_benchmarks_offline_rule_reads_the_table_as_choose_does():
    """`benchmarks/forecast_fallback.py` re-scores rules from `fallback_`
    tables: a candidate not offered to a series (NaN) is neither picked
    for it nor pooled, as in `choose`."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import forecast_fallback

    names = (S5, "s5+last_value", "s5+seasonal_weekly")
    banned = dataclasses.replace(_trial(names, [2.0, 1.5, 0.5], 100), allowed=np.array([True, True, False]))
    trials = [banned, _trial(names, [1.0, 1.2, 1.4], 100), _trial(names, [1.0, 1.0, 0.9], 2), None]
    fallback = choose(["a", "b", "c", "d"], trials, [1.0] * 4, names, LeadCalibration())
    picked = forecast_fallback.pick(fallback.table, list(names), SHRINKAGE)
    assert picked == {sid: fallback.method(sid) for sid in "abcd"}
    assert picked["a"] == "s5+last_value"
