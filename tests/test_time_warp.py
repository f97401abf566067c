"""Time warps (`time_warp`): the factors against a naive per-row
interpolation in float64, what a warp touches, and the estimators' use of
it (training only, reproducible, validated, `"auto"`'s rule)."""

import numpy as np
import pytest

from s5ts import S5Classifier, S5Regressor
from s5ts.estimators._time_handling import AUTO_TIME_WARP, AUTO_TIME_WARP_MIN_LENGTH, time_handling_for
from s5ts.forecasting import Forecaster
from s5ts.training import Sequences, TimeWarp, iterate_batches


@pytest.mark.parametrize(("knots", "observed", "length"), [(2, [1, 1], 4), (4, [9, 5], 9), (4, [130, 60], 136), (7, [50, 2], 56)])
def test_the_factors_are_exp_of_sigma_times_a_line_through_the_knots_over_each_rows_observations(knots, observed, length):
    warp = TimeWarp(0.3, knots)
    drawn = np.random.default_rng(1).standard_normal((2, knots))
    factors = warp.factors(np.array(observed), length, drawn)
    for row, n in enumerate(observed):
        steps = [min(k * (knots - 1) / max(n - 1, 1), knots - 1) for k in range(length)]
        naive = [np.exp(0.3 * np.interp(x, np.arange(knots), drawn[row])) for x in steps]
        np.testing.assert_allclose(factors[row], naive, rtol=1e-12)
        if n > 1:  # the first and the last knot at the row's first and last observation
            np.testing.assert_allclose(np.log(factors[row, [0, n - 1]]) / 0.3, drawn[row, [0, -1]], rtol=1e-12)
    assert factors.shape == (2, length) and (factors > 0).all()


def test_the_factors_are_smooth_with_a_median_of_one():
    knots = np.random.default_rng(0).standard_normal((4000, 4))
    factors = TimeWarp(0.2).factors(np.full(4000, 60), 60, knots)
    assert abs(np.median(np.log(factors))) < 0.01
    assert np.std(np.log(factors)[:, 0]) == pytest.approx(0.2, rel=0.05)
    # neighbouring steps stretch alike: a log-factor moves by at most σ |Δknot| / (steps between knots)
    assert np.abs(np.diff(np.log(factors), axis=1)).max() < 0.2 * 8 * 3 / 59


def _batch(rows=6, length=11, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.arange(length)[None, :] < rng.integers(1, length + 1, rows)[:, None]
    return {
        "u": rng.normal(size=(rows, length, 2)).astype(np.float32),
        "gaps": np.where(mask, rng.exponential(1.0, (rows, length)), 0).astype(np.float32),
        "extra": np.where(mask, rng.exponential(1.0, (rows, length)), 0).astype(np.float32)[..., None],
        "mask": mask,
    }


@pytest.mark.parametrize("elapsed", [("gaps",), ("extra",), ()])
def test_a_warp_scales_the_elapsed_arrays_alone_and_keeps_padding_zero(elapsed):
    batch = _batch()
    knots = np.random.default_rng(2).standard_normal((6, 4))
    warped = TimeWarp(0.3).apply(batch, knots, elapsed=elapsed)
    factors = TimeWarp(0.3).factors(batch["mask"].sum(axis=1), 11, knots) if elapsed else np.ones((6, 11))
    for key in ("gaps", "extra"):
        scale = factors if key in elapsed else np.ones((6, 11))
        expected = batch[key] * (scale if batch[key].ndim == 2 else scale[..., None])
        np.testing.assert_allclose(warped[key], expected.astype(np.float32), rtol=1e-6)
        assert warped[key].dtype == batch[key].dtype
        assert (warped[key][~batch["mask"]] == 0).all()
    for key in ("u", "mask"):
        np.testing.assert_array_equal(warped[key], batch[key])


def test_padding_and_a_cut_change_no_factor():
    batch = _batch()
    longer = {k: np.concatenate([v, np.zeros((6, 5) + v.shape[2:], v.dtype)], axis=1) for k, v in batch.items()}
    knots = np.random.default_rng(5).standard_normal((6, 4))
    one = TimeWarp(0.3).apply(batch, knots, elapsed=("gaps",))
    two = TimeWarp(0.3).apply(longer, knots, elapsed=("gaps",))
    np.testing.assert_array_equal(one["gaps"], two["gaps"][:, :11])


def test_no_warp_draws_nothing_and_returns_the_batch():
    batch, rng = _batch(), np.random.default_rng(3)
    state = rng.bit_generator.state
    assert TimeWarp(0.0).apply(batch, np.zeros((6, 4)), elapsed=("gaps",)) is batch
    assert TimeWarp(0.0).seed(rng) is None and TimeWarp.pass_generator(None, 0, 0) is None
    assert rng.bit_generator.state == state
    assert TimeWarp(0.2).seed(rng) is not None and rng.bit_generator.state != state  # one draw a fit
    (_, same), = TimeWarp(0.2).batches([(np.arange(6), batch)], None, n_series=6, rows=6, mine=slice(0, 6), elapsed=("gaps",))
    assert same is batch


def _warped_by_position(batches, seed, rows, mine, n_series=8):
    out = TimeWarp(0.3).batches(
        batches, TimeWarp.pass_generator(seed, 0, 0), n_series=n_series, rows=rows, mine=mine, elapsed=("gaps",)
    )
    return {int(p): g for positions, b in out for p, g in zip(np.asarray(positions)[mine], b["gaps"]) if p >= 0}


def test_a_series_is_warped_alike_in_any_row_of_any_batch_and_on_any_process():
    """Knots are drawn per series by its position, once a pass: the batch
    layout (in memory, streamed, a process's rows) changes no factor."""
    batch = _batch(rows=8)
    whole = _warped_by_position([(np.arange(8), batch)], 7, rows=8, mine=slice(0, 8))
    order = np.array([5, 2, 7, 0, 3, 1, 6, 4])
    shuffled = {k: v[order] for k, v in batch.items()}
    halves = [(order[:4], {k: v[:4] for k, v in shuffled.items()}), (order[4:], {k: v[4:] for k, v in shuffled.items()})]
    in_halves = _warped_by_position(halves, 7, rows=4, mine=slice(0, 4))
    process = _warped_by_position([(order, {k: v[4:] for k, v in shuffled.items()})], 7, rows=8, mine=slice(4, 8))
    for p in range(8):
        np.testing.assert_array_equal(whole[p], in_halves[p])
    for p in order[4:]:
        np.testing.assert_array_equal(whole[int(p)], process[int(p)])
    assert not np.allclose(whole[0], batch["gaps"][0])
    again = _warped_by_position([(np.arange(8), batch)], 8, rows=8, mine=slice(0, 8))  # another fit's seed
    assert not np.allclose(whole[0][batch["mask"][0]], again[0][batch["mask"][0]])


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_a_bad_strength_is_an_error(bad):
    with pytest.raises(ValueError, match="time_warp"):
        TimeWarp(bad)
    with pytest.raises(ValueError, match="knots"):
        TimeWarp(0.2, knots=1)


# ----- the estimators -----

TINY = dict(n_layers=1, d_model=8, state_size=4, max_epochs=3, validation_fraction=0.0, random_state=0)


def _series(n=16, length=24, seed=0):
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, 10, (n, length)), axis=1)
    X = np.sin(times * rng.uniform(0.5, 2.0, (n, 1)))[..., None]
    return X, times, times[:, -1] - times[:, 0]


def test_a_fit_with_a_time_warp_is_reproducible_and_predict_is_not_warped():
    X, times, y = _series()

    def fit(warp):
        return S5Regressor(**TINY, time_warp=warp).fit(X, y, times=times)

    first, second = fit(0.3), fit(0.3)
    np.testing.assert_array_equal(first.predict(X, times=times), second.predict(X, times=times))
    assert not np.allclose(first.predict(X, times=times), fit(0.0).predict(X, times=times))
    np.testing.assert_array_equal(first.predict(X, times=times), first.predict(X, times=times))


def test_training_warps_only_the_training_batches(monkeypatch):
    """Every optimiser step's batch passes through the warp; validation
    batches never do."""
    calls = []
    original = TimeWarp.apply

    def recording(self, batch, rng, **kwargs):
        calls.append(np.shape(batch["mask"]))
        return original(self, batch, rng, **kwargs)

    monkeypatch.setattr(TimeWarp, "apply", recording)
    X, times, y = _series(n=40)
    model = S5Regressor(**{**TINY, "validation_fraction": 0.25}, time_warp=0.2, min_epoch_steps=None, batch_size=8)
    model.fit(X, y, times=times)
    assert len(calls) == 3 * 4  # 3 epochs of the 30 training series in batches of 8


@pytest.mark.parametrize(
    ("time_handling", "median", "expected"),
    [
        ("gaps", AUTO_TIME_WARP_MIN_LENGTH, AUTO_TIME_WARP),
        ("gaps", AUTO_TIME_WARP_MIN_LENGTH - 1, 0.0),
        ("drop", 100, 0.0),
        ("append", 100, 0.0),
    ],
)
def test_auto_warps_series_that_see_the_gaps_with_a_median_of_enough_steps(time_handling, median, expected):
    lengths = np.array([3, median, median, median + 50, 400])
    handling = time_handling_for(time_handling)
    assert handling.time_warp("auto", lengths) == expected
    assert handling.time_warp("auto", None) == 0.0
    assert handling.time_warp(0.35, lengths) == 0.35


def test_auto_resolves_on_the_fits_own_series():
    X, times, y = _series(length=AUTO_TIME_WARP_MIN_LENGTH)
    short = (X[:, :5], times[:, :5])

    def fit(warp, X, times):
        return S5Regressor(**TINY, time_warp=warp).fit(X, y, times=times).predict(X, times=times)

    np.testing.assert_array_equal(fit("auto", X, times), fit(AUTO_TIME_WARP, X, times))
    np.testing.assert_array_equal(fit("auto", *short), fit(0.0, *short))
    assert S5Regressor()._config().time_warp == 0.0  # outside a fit: nothing to warp


def test_the_fitted_warp_is_an_attribute_kept_by_save_and_load(tmp_path):
    import json

    X, times, y = _series(length=AUTO_TIME_WARP_MIN_LENGTH)
    model = S5Regressor(**TINY).fit(X, y, times=times)
    assert model.time_warp_ == AUTO_TIME_WARP
    assert S5Regressor(**TINY).fit(X[:, :5], y, times=times[:, :5]).time_warp_ == 0.0
    model.save(tmp_path / "new.s5ts")
    header, weights = (tmp_path / "new.s5ts").read_bytes().split(b"\n", 1)
    old = json.loads(header)
    del old["time_warp"]  # a file written before time warps: trained without
    (tmp_path / "old.s5ts").write_bytes(json.dumps(old).encode() + b"\n" + weights)
    assert S5Regressor.load(tmp_path / "new.s5ts").time_warp_ == AUTO_TIME_WARP
    assert S5Regressor.load(tmp_path / "old.s5ts").time_warp_ == 0.0


@pytest.mark.parametrize("estimator", [S5Regressor, S5Classifier])
@pytest.mark.parametrize("bad", [-0.1, "strong"])
def test_a_bad_time_warp_is_an_error_naming_it(estimator, bad):
    X, times, y = _series(8)
    target = y if estimator is S5Regressor else (y > np.median(y)).astype(int)
    with pytest.raises((ValueError, TypeError), match="time_warp"):
        estimator(**TINY, time_warp=bad).fit(X, target, times=times)


def test_the_forecaster_has_no_time_warp():
    assert "time_warp" not in Forecaster().get_params()


def test_iterate_batches_is_untouched_by_warps():
    """Warps live in the training loop: batching itself (evaluation,
    prediction) reads the gaps as they are."""
    rng = np.random.default_rng(0)
    data = Sequences(
        inputs=tuple(rng.normal(size=(9, 1)).astype(np.float32) for _ in range(4)),
        gaps=tuple(rng.exponential(1.0, 9).astype(np.float32) for _ in range(4)),
    )
    (_, batch), = iterate_batches(data, 4, shuffle=False, place=False)
    np.testing.assert_array_equal(batch["gaps"][:, :9], np.stack(data.gaps))
