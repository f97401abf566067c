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


# ----- predictions of series the budget thins: the mean over thinned copies -----

BUDGET = Thinning(0.3, budget=128)  # thins series of more than 128 / 0.7 = 182.9 observations past the rate


def _mixed(n=10, seed=0, per_step=False):
    """Series of 130–180 observations (not thinned past the rate by
    `BUDGET`) and of 190–250 (thinned): one length bucket (256), so
    batches mix the two."""
    rng = np.random.default_rng(seed)
    lengths = np.where(np.arange(n) % 2 == 0, rng.integers(130, 180, n), rng.integers(190, 250, n))
    return Sequences(
        inputs=tuple(rng.normal(size=(m, 2)).astype(np.float32) for m in lengths),
        gaps=tuple(rng.exponential(1.0, size=m).astype(np.float32) for m in lengths),
        targets=tuple(rng.normal(size=(m, 1)).astype(np.float32) for m in lengths) if per_step else None,
        per_step=per_step,
    )


def test_the_budget_thins_past_the_rate_only_series_longer_than_budget_over_one_minus_rate():
    lengths = [0, 1, 100, 182, 183, 200, 5000]
    np.testing.assert_array_equal(BUDGET.past_rate(lengths), [False, False, False, False, True, True, True])
    assert not Thinning(0.3).past_rate(lengths).any()
    assert not Thinning(0.0).past_rate(lengths).any()


def test_copies_keep_short_series_whole_and_long_ones_at_the_training_rates():
    from s5ts.training import PREDICTION_COPIES, copies_kept

    data = _mixed()
    batch = padded_batch(data, np.arange(10), 12, 256)
    kept = copies_kept(batch, BUDGET)
    assert kept.shape == (PREDICTION_COPIES, 12, 256)
    assert not (kept & ~batch["mask"][None]).any()  # never padding
    for row, length in enumerate(data.lengths):
        counts = kept[:, row].sum(axis=1)
        if row % 2 == 0:  # not thinned past the rate: every copy is the whole series
            assert (counts == length).all()
        else:
            assert (counts >= 1).all()
            # each copy keeps each observation with probability 128 / length
            spread = np.sqrt(128 * (1 - 128 / length) / PREDICTION_COPIES)
            assert abs(counts.mean() - 128) < 5 * spread
            assert len({tuple(np.flatnonzero(k)) for k in kept[:, row]}) == PREDICTION_COPIES
    # over many long series, each observation is kept with the training's probability
    many = padded_batch(_long(n=200, seed=3), np.arange(200), 200, 512)
    lengths = many["mask"].sum(axis=1)
    thinned = BUDGET.past_rate(lengths)
    share = copies_kept(many, BUDGET).sum(axis=(0, 2)) / (PREDICTION_COPIES * lengths)
    np.testing.assert_allclose(np.mean(share[thinned]), np.mean(128 / lengths[thinned]), rtol=0.02)


def test_a_series_copies_depend_on_its_values_alone():
    from s5ts.training import copies_kept

    data = _mixed()
    first = copies_kept(padded_batch(data, np.arange(10), 10, 256), BUDGET)
    # the same series in another row, with another neighbour and padding
    again = copies_kept(padded_batch(data, np.array([3, 1]), 4, 512), BUDGET)
    for row, series in enumerate([3, 1]):
        np.testing.assert_array_equal(again[:, row, :256], first[:, series])
        assert not again[:, row, 256:].any()
    assert not np.array_equal(first[:, 1, :190], first[:, 3, :190])


def _naive_copies(model, data, i):
    """Series `i`'s outputs, float64, one per copy: its whole run's alone
    if the budget does not thin it past the rate, else each copy's, run as
    a series of its own (`keep_observations` on a batch of that series alone)."""
    import jax

    from s5ts.training import copies_kept, predict_outputs

    def run(sequences):
        return jax.tree.map(lambda o: np.asarray(o, np.float64), predict_outputs(model, sequences, 1)[0])

    length = int(data.lengths[i])
    if not BUDGET.past_rate([length])[0]:
        return [run(data.subset([i]))]
    batch = padded_batch(data, np.array([i]), 1, length)
    outputs = []
    for kept in copies_kept(batch, BUDGET):
        thin = keep_observations(batch, kept, elapsed=("gaps",))
        n = int(thin["mask"][0].sum())
        outputs.append(run(Sequences(inputs=(thin["u"][0, :n],), gaps=(thin["gaps"][0, :n],))))
    return outputs


def _naive_outputs(model, data, i):
    """Series `i`'s outputs, float64: the mean over `_naive_copies`."""
    return np.mean(_naive_copies(model, data, i), axis=0)


def _classifier_network(seed=0):
    import jax

    return S5Classifier(d_model=8, state_size=4, n_layers=2).build_network(2, False, 3, jax.random.key(seed))


def test_predictions_are_the_mean_of_the_network_over_each_long_series_copies():
    from s5ts.training import predict_outputs

    model, data = _classifier_network(), _mixed()
    got = np.stack(predict_outputs(model, data, 4, thinning=BUDGET))
    whole = np.stack(predict_outputs(model, data, 4))
    for i in range(len(data)):
        np.testing.assert_allclose(got[i], _naive_outputs(model, data, i), rtol=1e-5, atol=1e-6)
        if i % 2 == 0:  # in a batch with long series, yet the whole run's outputs
            np.testing.assert_array_equal(got[i], whole[i])
        else:
            assert not np.allclose(got[i], whole[i])
    # a rate alone, or targets per step: every series is run whole
    np.testing.assert_array_equal(np.stack(predict_outputs(model, data, 4, thinning=Thinning(0.3))), whole)


def test_a_gaussian_head_predicts_the_mixture_of_a_long_series_copies():
    import jax

    from s5ts.training import predict_outputs

    model = S5Regressor(d_model=8, state_size=4, n_layers=2, loss="gaussian_nll").build_network(
        2, False, 1, jax.random.key(2)
    )
    data = _mixed()
    got = predict_outputs(model, data, 4, thinning=BUDGET)
    whole = predict_outputs(model, data, 4)
    for i in range(len(data)):
        copies = _naive_copies(model, data, i)
        means = np.stack([mean for mean, _ in copies])
        variances = np.stack([var for _, var in copies])
        # an equal mixture of the copies' Gaussians: E[var] + Var[mean]
        want_var = variances.mean(axis=0) + ((means - means.mean(axis=0)) ** 2).mean(axis=0)
        np.testing.assert_allclose(got[i][0], means.mean(axis=0), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[i][1], want_var, rtol=1e-5, atol=1e-7)
        if i % 2 == 0:  # not thinned: the whole run's mean and variance
            np.testing.assert_array_equal(got[i][0], whole[i][0])
            np.testing.assert_array_equal(got[i][1], whole[i][1])
        else:  # the copies disagree, which widens the prediction beyond their mean variance
            assert (got[i][1] - variances.mean(axis=0) > 10 * np.finfo(np.float32).eps).all()


def test_copies_run_cut_to_the_steps_they_can_keep(monkeypatch):
    from s5ts.training import PREDICTION_COPIES, WholeSequences, predict_outputs

    steps = []
    forward = WholeSequences.forward

    def recording(self, model, batch, rows, per_step):
        steps.append(batch["mask"].shape[1])
        yield from forward(self, model, batch, rows, per_step)

    monkeypatch.setattr(WholeSequences, "forward", recording)
    predict_outputs(_classifier_network(), _mixed(), 16, thinning=BUDGET)  # one batch, one bucket of 256
    assert steps == [256] + [BUDGET.kept_bound([256])] * PREDICTION_COPIES
    assert BUDGET.kept_bound([256]) < 256


def test_a_copy_keeps_at_most_the_bound_of_its_series_length(monkeypatch):
    from s5ts.training import _thinning, copies_kept

    batch = padded_batch(_long(n=40, seed=5), np.arange(40), 40, 512)
    lengths = batch["mask"].sum(axis=1)
    drawn = copies_kept(batch, BUDGET)
    # a bound under the mean count kept (which at 5 standard deviations a copy passes
    # once in millions): every copy past it keeps its first `bound` drawn observations
    monkeypatch.setattr(_thinning, "KEPT_MARGIN", -1.0)
    kept = copies_kept(batch, BUDGET)
    clipped = 0
    for row, n in enumerate(lengths):
        if not BUDGET.past_rate([n])[0]:
            continue
        bound = BUDGET.kept_bound([n])
        for want, got in zip(drawn[:, row], kept[:, row]):
            first = np.flatnonzero(want)[:bound]
            np.testing.assert_array_equal(np.flatnonzero(got), first)
            clipped += want.sum() > bound
    assert clipped > 0


def test_per_step_predictions_ignore_the_budget():
    import jax

    from s5ts.training import predict_outputs

    model = S5Regressor(d_model=8, state_size=4, n_layers=1).build_network(2, True, 1, jax.random.key(0))
    data = _mixed(per_step=True)
    for got, want in zip(predict_outputs(model, data, 4, thinning=BUDGET), predict_outputs(model, data, 4)):
        np.testing.assert_array_equal(got, want)


def test_validation_scores_long_series_from_the_same_copies_as_predict():
    import dataclasses

    from s5ts.training import cross_entropy_loss, evaluate

    model, data = _classifier_network(1), _mixed()
    labels = np.arange(len(data)) % 3
    data = dataclasses.replace(data, targets=labels.astype(np.int32))
    logits = np.stack([_naive_outputs(model, data, i) for i in range(len(data))])
    logits -= logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    want = -log_probs[np.arange(len(labels)), labels].mean()
    assert evaluate(model, data, 4, cross_entropy_loss, thinning=BUDGET) == pytest.approx(want, rel=1e-5)
    assert evaluate(model, data, 4, cross_entropy_loss) != pytest.approx(want, rel=1e-4)


def _long_frame(n=12, seed=0):
    """A long frame of series of 10–40 and 300–500 observations, a class each."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    parts = []
    for i in range(n):
        length = int(rng.integers(300, 500) if i % 3 == 0 else rng.integers(10, 40))
        t = np.cumsum(rng.exponential(1.0, length))
        parts.append(pd.DataFrame({"id": f"s{i:02d}", "time": t, "a": np.sin(t * (1 + i % 2)) + rng.normal(size=length)}))
    return pd.concat(parts, ignore_index=True), np.arange(n) % 2


def test_the_estimators_predict_long_series_from_copies_the_same_in_memory_in_parts_and_from_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    X, y = _long_frame()
    given = dict(d_model=8, state_size=4, n_layers=1, max_epochs=2, random_state=0, id_col="id", time_col="time")
    model = S5Classifier(**given).fit(X, y)
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(proba, model.predict_proba(X))  # deterministic
    # a series' prediction does not depend on the series predicted with it
    part = X[X["id"].isin(["s00", "s04", "s06"])]
    np.testing.assert_allclose(model.predict_proba(part), proba[[0, 4, 6]], rtol=1e-5, atol=1e-6)
    # streamed from Parquet: the same copies
    path = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_pandas(X, preserve_index=False), path, row_group_size=500)
    np.testing.assert_allclose(model.predict_proba(str(path)).to_numpy(), proba, rtol=1e-5, atol=1e-6)
    # predictions follow the fit's thinning, saved with the model, not a later set_params
    np.testing.assert_array_equal(model.set_params(observation_dropout=0.3).predict_proba(X), proba)
    model.save(tmp_path / "model.s5ts")
    np.testing.assert_array_equal(S5Classifier.load(tmp_path / "model.s5ts").predict_proba(X), proba)
    # the same network without a budget runs every series whole: only the long ones (every third) change
    model._thinning_ = Thinning(0.3)
    whole = model.predict_proba(X)
    long = np.arange(len(y)) % 3 == 0
    np.testing.assert_array_equal(whole[~long], proba[~long])
    assert not np.allclose(whole[long], proba[long])


def test_a_model_saved_before_the_thinning_was_saved_predicts_without_a_budget(tmp_path):
    import json

    X, y = _long_frame()
    given = dict(d_model=8, state_size=4, n_layers=1, max_epochs=1, random_state=0, id_col="id", time_col="time")
    model = S5Classifier(**given).fit(X, y)
    model.save(tmp_path / "new.s5ts")
    header, weights = (tmp_path / "new.s5ts").read_bytes().split(b"\n", 1)
    old = json.loads(header)
    del old["thinning"]
    (tmp_path / "old.s5ts").write_bytes(json.dumps(old).encode() + b"\n" + weights)
    assert S5Classifier.load(tmp_path / "new.s5ts")._thinning_ == Thinning(0.3, budget=128)
    assert S5Classifier.load(tmp_path / "old.s5ts")._thinning_ == Thinning(0.3)
