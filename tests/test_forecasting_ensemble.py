"""`ForecasterEnsemble`: members fitted with their own seeds, forecasts averaged."""

import numpy as np
import pandas as pd
import pytest
from sklearn.utils import check_random_state

from s5ts.forecasting import Forecaster, ForecasterEnsemble

SMALL = {"n_layers": 1, "d_model": 8, "state_size": 4, "max_epochs": 3}


@pytest.fixture(scope="module")
def concentration():
    # A positive quantity falling at irregular hours (never negative in training: no bound below zero).
    rng = np.random.default_rng(7)
    hours = np.cumsum(rng.exponential(1.0, 120))
    values = 5.0 * np.exp(-hours / 80.0) * (1 + 0.05 * rng.normal(size=120))
    return pd.Series(values, index=pd.to_timedelta(hours, unit="h"), name="conc")


@pytest.fixture(scope="module")
def ensemble(concentration):
    return ForecasterEnsemble(Forecaster(**SMALL), n_members=2, random_state=3).fit(concentration, horizon="20h")


def test_the_ensemble_averages_members_fitted_alone(ensemble, concentration):
    # The reference: each member fitted on its own with the seed the ensemble draws, averaged by hand.
    seeds = check_random_state(3).randint(np.iinfo(np.int32).max, size=2)
    alone = [Forecaster(**SMALL, random_state=int(s)).fit(concentration, horizon="20h") for s in seeds]
    assert [m.random_state for m in ensemble.members_] == [int(s) for s in seeds]
    assert ensemble.horizon_ == pd.Timedelta("20h") and ensemble.trained_lead_ == alone[0].trained_lead_
    leads = ["1h", "6h", "20h", "40h"]
    means = [m.predict(leads=leads) for m in alone]
    assert not np.allclose(means[0], means[1])  # the seeds differ, so the average is not one member
    np.testing.assert_allclose(ensemble.predict(leads=leads), (means[0] + means[1]) / 2, rtol=1e-6)
    intervals = [m.predict_interval(leads=leads, coverage=[0.8, 0.95]) for m in alone]
    combined = ensemble.predict_interval(leads=leads, coverage=[0.8, 0.95])
    pd.testing.assert_index_equal(combined.columns, intervals[0].columns)
    np.testing.assert_allclose(combined, (intervals[0] + intervals[1]) / 2, rtol=1e-6)
    assert (combined.to_numpy() >= 0).all()
    quantiles = [m.predict_quantiles(leads=leads, alpha=[0.05, 0.5]) for m in alone]
    np.testing.assert_allclose(ensemble.predict_quantiles(leads=leads, alpha=[0.05, 0.5]),
                               (quantiles[0] + quantiles[1]) / 2, rtol=1e-6)
    # The distribution: the equal mixture's mean and variance, in float64 one element at a time.
    mean, var, index = ensemble.predict_distribution(leads=leads)
    parts = [m.predict_distribution(leads=leads) for m in alone]
    for i in range(len(leads)):
        mu = [float(p[0][i, 0]) for p in parts]
        second = sum(float(p[1][i, 0]) + m ** 2 for p, m in zip(parts, mu)) / 2
        assert mean[i, 0] == pytest.approx(sum(mu) / 2, rel=1e-6)
        assert var[i, 0] == pytest.approx(second - (sum(mu) / 2) ** 2, rel=1e-5)
    pd.testing.assert_index_equal(index, parts[0][2])


def test_bad_parameters_name_themselves(concentration):
    with pytest.raises(ValueError, match="n_members"):
        ForecasterEnsemble(n_members=0).fit(concentration)
    with pytest.raises(ValueError, match="forecaster"):
        ForecasterEnsemble("Forecaster()").fit(concentration)


def test_a_failed_fit_or_update_leaves_the_ensemble_as_it_was(ensemble, concentration):
    members = list(ensemble.members_)
    states = [m.series_ for m in members]
    before = ensemble.predict(leads=["2h"])
    with pytest.raises(ValueError, match="horizon"):
        ensemble.fit(concentration, horizon=-1.0)
    # A changed value at a known time raises in every member's update: none is updated.
    late = concentration.iloc[-3:].copy()
    late.iloc[0] += 1.0
    later = pd.Series([1.0], index=[concentration.index[-1] + pd.Timedelta("1h")], name="conc")
    with pytest.raises(ValueError, match="different value"):
        ensemble.update(pd.concat([later, late]).sort_index())
    assert ensemble.members_ == members and [m.series_ for m in members] == states
    pd.testing.assert_frame_equal(ensemble.predict(leads=["2h"]), before)
    # A good update moves every member, on copies: the fitted ensemble's members are replaced together.
    updated = ForecasterEnsemble(ensemble.forecaster, n_members=2, random_state=3)
    updated.members_ = list(members)
    updated.update(later)
    assert all(u is not m for u, m in zip(updated.members_, members))
    assert all(len(u.series_[None].times) == len(concentration) + 1 for u in updated.members_)
    assert all(len(m.series_[None].times) == len(concentration) for m in members)
