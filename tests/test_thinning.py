"""Observation dropout (`observation_dropout`): thinned batches against a
naive per-series Python loop in float64, the draw, and the estimators'
use of it (training only, reproducible, validated, time handling kept)."""

import numpy as np
import pytest

from s5ts import S5Classifier, S5Regressor
from s5ts.forecasting import Forecaster
from s5ts.training import Sequences, iterate_batches, padded_batch
from s5ts.training._thinning import draw_kept, keep_observations, thin_observations


def _ragged(per_step: bool, seed: int = 0, n: int = 5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 12, n)
    inputs = tuple(rng.normal(size=(m, 3)).astype(np.float32) for m in lengths)
    gaps = tuple(np.concatenate([[1.0], rng.uniform(0.1, 3.0, m - 1)]).astype(np.float32) for m in lengths)
    extra = tuple(g[:, None].copy() for g in gaps)
    if per_step:
        targets = tuple(rng.normal(size=(m, 2)).astype(np.float32) for m in lengths)
    else:
        targets = rng.normal(size=(n, 2)).astype(np.float32)
    weights = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return Sequences(inputs, gaps, extra=extra, targets=targets, per_step=per_step, weights=weights)


def _naive(data: Sequences, rows: int, length: int, kept_per_series, elapsed):
    """Each series thinned on its own (float64 sums of the dropped gaps),
    then padded: what `keep_observations` must equal."""
    inputs, gaps, extra, targets = [], [], [], []
    for i, keep in enumerate(kept_per_series):
        index = np.flatnonzero(keep)
        total = np.cumsum(data.gaps[i].astype(np.float64))
        merged = np.array([data.gaps[i][0]] + [total[b] - total[a] for a, b in zip(index[:-1], index[1:])])
        inputs.append(data.inputs[i][index])
        gaps.append((merged if "gaps" in elapsed else data.gaps[i][index]).astype(np.float32))
        extra.append((merged[:, None] if "extra" in elapsed else data.extra[i][index]).astype(np.float32))
        targets.append(data.targets[i][index] if data.per_step else data.targets[i])
    thinned = Sequences(
        tuple(inputs), tuple(gaps), extra=tuple(extra),
        targets=tuple(targets) if data.per_step else np.asarray(targets),
        per_step=data.per_step, weights=data.weights,
    )
    return padded_batch(thinned, np.arange(len(data)), rows, length)


@pytest.mark.parametrize("per_step", [False, True])
@pytest.mark.parametrize("elapsed", [("gaps",), ("extra",), ()])
@pytest.mark.parametrize("seed", range(4))
def test_kept_observations_equal_each_series_thinned_on_its_own(per_step, elapsed, seed):
    data = _ragged(per_step, seed)
    rows, length = 8, 16
    batch = padded_batch(data, np.arange(len(data)), rows, length)
    rng = np.random.default_rng(100 + seed)
    kept = draw_kept(batch["mask"], 0.4, rng)
    got = keep_observations(batch, kept, per_step=per_step, elapsed=elapsed)
    want = _naive(data, rows, length, [kept[i, : len(g)] for i, g in enumerate(data.gaps)], elapsed)
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].shape == batch[key].shape and got[key].dtype == batch[key].dtype, key
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)
    # the elapsed time from the first to the last kept observation is kept
    if "gaps" in elapsed:
        for i in range(len(data)):
            index = np.flatnonzero(kept[i])
            span = data.gaps[i][index[0] + 1 : index[-1] + 1].sum(dtype=np.float64)
            np.testing.assert_allclose(got["gaps"][i, 1 : len(index)].sum(dtype=np.float64), span, rtol=1e-6)


def test_the_draw_keeps_one_observation_of_every_series_and_never_padding():
    mask = np.zeros((64, 20), bool)
    lengths = np.random.default_rng(0).integers(0, 21, 64)
    for row, m in enumerate(lengths):
        mask[row, :m] = True
    rng = np.random.default_rng(1)
    draws = [draw_kept(mask, 0.3, rng) for _ in range(200)]
    for kept in draws:
        assert not (kept & ~mask).any()
        assert (kept.any(axis=1) == mask.any(axis=1)).all()
    share = np.mean([k.sum() / mask.sum() for k in draws])
    assert abs(share - 0.7) < 0.02
    assert (draw_kept(mask, 0.9999, rng).sum(axis=1) == mask.any(axis=1)).all()


def test_rate_zero_returns_the_batch_and_a_bad_rate_is_an_error():
    data = _ragged(False)
    batch = padded_batch(data, np.arange(len(data)), 8, 16)
    same = thin_observations(batch, 0.0, np.random.default_rng(0))
    assert all(np.array_equal(same[k], batch[k]) for k in batch)
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="rate"):
            thin_observations(batch, rate, np.random.default_rng(0))
    with pytest.raises(ValueError, match="subset"):
        keep_observations(batch, ~batch["mask"])


def test_training_batches_are_thinned_and_keep_their_shape():
    data = _ragged(False, n=20)
    plain = list(iterate_batches(data, 8, shuffle=True, rng=np.random.default_rng(0)))
    thinned = list(iterate_batches(data, 8, shuffle=True, rng=np.random.default_rng(0), observation_dropout=0.5))
    assert [np.shape(b["u"]) for _, b in plain] == [np.shape(b["u"]) for _, b in thinned]
    assert sum(np.asarray(b["mask"]).sum() for _, b in thinned) < sum(np.asarray(b["mask"]).sum() for _, b in plain)


def _series(n=48, seed=0):
    rng = np.random.default_rng(seed)
    times = [np.sort(rng.uniform(0, 10, rng.integers(8, 30))) for _ in range(n)]
    X = [np.sin(t)[:, None] for t in times]
    return X, times, np.array([t[-1] - t[0] for t in times])


TINY = dict(n_layers=1, d_model=8, state_size=4, max_epochs=3, validation_fraction=0.0, random_state=0)


@pytest.mark.parametrize("time_handling", ["gaps", "drop", "append"])
def test_a_fit_with_observation_dropout_is_reproducible_and_predict_sees_every_observation(time_handling):
    X, times, y = _series()
    def fit():
        return S5Regressor(**TINY, observation_dropout=0.3, time_handling=time_handling).fit(X, y, times=times)

    first, second = fit(), fit()
    np.testing.assert_array_equal(first.predict(X, times=times), second.predict(X, times=times))
    plain = S5Regressor(**TINY, observation_dropout=0.0, time_handling=time_handling).fit(X, y, times=times)
    assert not np.allclose(first.predict(X, times=times), plain.predict(X, times=times))
    # predict is deterministic: no observation is dropped outside training
    np.testing.assert_array_equal(first.predict(X, times=times), first.predict(X, times=times))


@pytest.mark.parametrize("estimator", [S5Regressor, S5Classifier])
@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, "0.2"])
def test_observation_dropout_outside_0_1_is_an_error_naming_it(estimator, bad):
    X, times, y = _series(8)
    target = y if estimator is S5Regressor else (y > np.median(y)).astype(int)
    with pytest.raises((ValueError, TypeError), match="observation_dropout"):
        estimator(**TINY, observation_dropout=bad).fit(X, target, times=times)


def test_the_forecaster_has_no_observation_dropout():
    assert "observation_dropout" not in Forecaster().get_params()


@pytest.mark.parametrize(("time_handling", "rate"), [("gaps", 0.3), ("append", 0.3), ("drop", 0.0)])
def test_auto_thins_only_a_model_that_sees_the_times(time_handling, rate):
    X, times, y = _series()
    def fit(dropout):
        return S5Regressor(**TINY, time_handling=time_handling, observation_dropout=dropout).fit(X, y, times=times)

    np.testing.assert_array_equal(fit("auto").predict(X, times=times), fit(rate).predict(X, times=times))
