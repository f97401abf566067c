"""Observation dropout (`observation_dropout`): thinned batches against a
naive per-series Python loop in float64, the draw, and the estimators'
use of it (training only, reproducible, validated, time handling kept)."""

import numpy as np
import pytest

from s5ts import S5Classifier, S5Regressor
from s5ts.forecasting import Forecaster
from s5ts.training import Sequences, iterate_batches, padded_batch
from s5ts.training._thinning import Thinning, cut_batch, draw_kept, keep_observations, thin_observations


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


@pytest.mark.parametrize("budget", [None, 16, 128])
@pytest.mark.parametrize("rate", [0.0, 0.1, 0.3, 0.5, 0.9])
def test_the_kept_bound_holds_what_rows_keep_and_is_a_multiple_of_8(rate, budget):
    thinning = Thinning(rate, budget)
    for length in [1, 7, 8, 50, 64, 100, 214, 730, 1344, 5000]:
        cut = thinning.kept_bound([length])
        p = max(rate, 1 - budget / length) if budget else rate
        assert cut <= length
        assert cut == length or cut % 8 == 0
        # 5 standard deviations above the mean count kept
        assert cut >= min(length, (1 - p) * length + 5 * np.sqrt(length * p * (1 - p)))
    assert Thinning(0.3).kept_bound([730]) < 0.8 * 730
    assert Thinning(0.3, 128).kept_bound([730]) < 0.3 * 730
    # a packed row of several series: the sums of their means and variances
    assert Thinning(0.3, 128).kept_bound([300, 300, 100]) == 8 * np.ceil((128 + 128 + 70 + 5 * np.sqrt(
        2 * 300 * (1 - 128 / 300) * 128 / 300 + 100 * 0.21)) / 8)


def test_a_budget_thins_long_series_to_about_that_many_observations_and_leaves_short_ones():
    thinning = Thinning(0.3, budget=100)
    np.testing.assert_allclose(thinning.rates([50, 142, 1000]), [0.3, 0.3, 0.9], atol=0.005)
    lengths = np.array([50, 1000, 400])
    mask = np.arange(1000)[None, :] < lengths[:, None]
    rng = np.random.default_rng(0)
    counts = np.mean([draw_kept(mask, thinning.rates(lengths)[:, None], rng).sum(axis=1) for _ in range(400)], axis=0)
    np.testing.assert_allclose(counts, [35, 100, 100], rtol=0.03)
    with pytest.raises(ValueError, match="observation_dropout"):
        Thinning(1.0)
    with pytest.raises(ValueError, match="budget"):
        Thinning(0.3, 0)


def _long(n=24, seed=0, per_step=False):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(150, 400, n)
    return Sequences(
        inputs=tuple(rng.normal(size=(m, 2)).astype(np.float32) for m in lengths),
        gaps=tuple(rng.exponential(1.0, size=m).astype(np.float32) for m in lengths),
        targets=(
            tuple(rng.normal(size=(m, 1)).astype(np.float32) for m in lengths)
            if per_step
            else rng.integers(0, 3, n).astype(np.int32)
        ),
        per_step=per_step,
    )


@pytest.mark.parametrize("budget", [None, 64])
@pytest.mark.parametrize("per_step", [False, True])
def test_cut_batches_drop_only_the_padding_left_at_their_end(per_step, budget):
    """The same draws cut and uncut: the cut batch is the uncut one's first
    `Thinning.kept_bound` steps, and every step cut off is padding."""
    data = _long(per_step=per_step)
    thinning = dict(observation_dropout=0.3, observation_budget=budget)
    whole = list(iterate_batches(data, 8, shuffle=True, rng=np.random.default_rng(1), **thinning))
    cut = list(iterate_batches(data, 8, shuffle=True, rng=np.random.default_rng(1), **thinning, cut=True))
    assert len(whole) == len(cut)
    shorter = 0
    for (i, w), (j, c) in zip(whole, cut):
        np.testing.assert_array_equal(i, j)
        assert sorted(w) == sorted(c)
        length = c["mask"].shape[1]
        # a budget thins series with one target each (`SequenceData._thinned`)
        bound = Thinning(0.3, None if per_step else budget).kept_bound([w["mask"].shape[1]])
        assert length in (bound, w["mask"].shape[1])
        shorter += length < w["mask"].shape[1]
        assert not w["mask"][:, length:].any()
        for key in w:
            if np.ndim(w[key]) >= 2 and w[key].shape[1] == w["mask"].shape[1] and (key not in ("y", "weights") or per_step):
                np.testing.assert_array_equal(c[key], w[key][:, :length], err_msg=key)
                assert not np.asarray(w[key])[:, length:].any(), key
            else:
                np.testing.assert_array_equal(c[key], w[key], err_msg=key)
    assert shorter == len(cut)  # every batch of these lengths is cut


def test_a_batch_with_a_row_that_kept_more_than_the_cut_stays_whole():
    data = _long(n=4)
    batch = padded_batch(data, np.arange(4), 4, 400)
    kept = np.asarray(batch["mask"]).copy()  # nothing dropped: more than the cut
    cut = Thinning(0.3).kept_bound([400])
    assert cut_batch(keep_observations(batch, kept), kept, cut)["mask"].shape == (4, 400)
    kept[:, 250:] = False
    assert cut_batch(keep_observations(batch, kept), kept, cut)["mask"].shape == (4, cut)


def test_the_network_computes_the_same_loss_and_gradient_on_a_cut_batch():
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from s5ts.training import cross_entropy_loss
    from s5ts.training._loop import _summed_loss

    model = S5Classifier(d_model=8, state_size=4, n_layers=2).build_network(2, False, 3, jax.random.key(0))
    data = _long(n=8)
    (_, whole), = iterate_batches(data, 8, shuffle=False, rng=np.random.default_rng(2), observation_dropout=0.3)
    (_, cut), = iterate_batches(data, 8, shuffle=False, rng=np.random.default_rng(2), observation_dropout=0.3, cut=True)
    assert cut["mask"].shape[1] < whole["mask"].shape[1]

    def loss(model, batch):
        batch = {k: jnp.asarray(v) for k, v in batch.items()}
        return _summed_loss(model, batch, None, None, cross_entropy_loss)[0]

    (value, grads), (expected, expected_grads) = (eqx.filter_value_and_grad(loss)(model, b) for b in (cut, whole))
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(expected_grads)):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6)


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


@pytest.mark.parametrize("estimator", [S5Regressor, S5Classifier])
def test_auto_thins_long_series_to_the_budget_and_a_given_rate_does_not(estimator):
    from s5ts.estimators import AUTO_OBSERVATION_BUDGET

    for time_handling, rate, budget in [("gaps", 0.3, AUTO_OBSERVATION_BUDGET), ("append", 0.3, AUTO_OBSERVATION_BUDGET),
                                        ("drop", 0.0, None)]:
        config = estimator(time_handling=time_handling)._config()
        assert (config.observation_dropout, config.observation_budget) == (rate, budget)
    config = estimator(observation_dropout=0.3)._config()
    assert (config.observation_dropout, config.observation_budget) == (0.3, None)
