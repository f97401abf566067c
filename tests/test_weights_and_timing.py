"""sample_weight, class_weight, the history's names and timings, early
stopping after the warm-up, and the persistent compilation cache."""

import json
import os
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from s5ts import S5Classifier, S5Regressor

# One batch holds every series (batch_size > n + duplicates) and there is no
# validation split, so a weight of 2 and a duplicate give the same loss.
# One pass over the data an epoch, every observation seen (not the defaults'
# min_epoch_steps and observation_dropout): the mechanics under test count steps.
ONE_BATCH = dict(
    n_layers=1, d_model=8, state_size=4, batch_size=32, max_epochs=4, validation_fraction=0.0, random_state=0,
    min_epoch_steps=None, observation_dropout=0.0,
)


def series(n=12, seed=0):
    """Series whose gaps are permutations of one multiset, so duplicating
    some leaves the median gap (the time scale) as it is."""
    rng = np.random.default_rng(seed)
    base_gaps = np.array([0.5, 1.0, 1.0, 2.0, 3.0, 1.5])
    X = []
    for _ in range(n):
        t = np.cumsum(rng.permutation(base_gaps))
        X.append(pd.DataFrame({"a": rng.normal(size=len(t)), "b": rng.normal(size=len(t))}, index=pd.Index(t, name="t")))
    return X, rng.normal(size=n)


def test_sample_weight_of_two_equals_duplicating_the_series():
    X, y = series()
    weights = np.ones(len(X))
    weights[[1, 4]] = 2.0
    weighted = S5Regressor(**ONE_BATCH).fit(X, y, sample_weight=weights)
    duplicated = S5Regressor(**ONE_BATCH).fit(X + [X[1], X[4]], np.r_[y, y[1], y[4]])
    np.testing.assert_allclose(weighted.predict(X), duplicated.predict(X), rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(weighted.preprocessing_.feature_mean, duplicated.preprocessing_.feature_mean)
    unweighted = S5Regressor(**ONE_BATCH).fit(X, y)
    assert not np.allclose(unweighted.predict(X), weighted.predict(X), rtol=1e-3)  # weights matter


def test_zero_weight_removes_a_series():
    X, y = series()
    weights = np.ones(len(X))
    weights[3] = 0.0
    y_changed = y.copy()
    y_changed[3] = 1e3  # would dominate the standardised loss if it counted
    a = S5Regressor(**ONE_BATCH).fit(X, y_changed, sample_weight=weights)
    b = S5Regressor(**ONE_BATCH).fit(X[:3] + X[4:], np.r_[y[:3], y[4:]])
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize(
    "weights, match",
    [
        (np.ones(5), r"shape \(5,\).*12 series"),
        (np.r_[np.ones(11), -1.0], r"series 11.*finite and >= 0"),
        (np.zeros(12), "zero weight"),
        (np.array(["a"] * 12), "must be numeric"),
    ],
)
def test_bad_sample_weight_is_named(weights, match):
    X, y = series()
    model = S5Regressor(**ONE_BATCH)
    with pytest.raises((ValueError, TypeError), match=match):
        model.fit(X, y, sample_weight=weights)
    assert not hasattr(model, "model_")


def test_balanced_class_weight_equals_the_matching_sample_weight():
    X, _ = series(n=12, seed=1)
    labels = np.array(["rare"] * 3 + ["common"] * 9)
    balanced = S5Classifier(**ONE_BATCH, class_weight="balanced").fit(X, labels)
    counts = {"rare": 3, "common": 9}
    by_hand = np.array([12 / (2 * counts[label]) for label in labels])
    weighted = S5Classifier(**ONE_BATCH).fit(X, labels, sample_weight=by_hand)
    np.testing.assert_allclose(balanced.predict_proba(X), weighted.predict_proba(X), rtol=1e-4, atol=1e-6)
    as_dict = S5Classifier(**ONE_BATCH, class_weight={"rare": 3.0, "common": 1.0}).fit(X, labels)
    np.testing.assert_allclose(
        as_dict.predict_proba(X),
        S5Classifier(**ONE_BATCH).fit(X, labels, sample_weight=np.where(labels == "rare", 3.0, 1.0)).predict_proba(X),
        rtol=1e-4,
        atol=1e-6,
    )
    with pytest.raises(ValueError, match=r"class_weight names labels \['other'\]"):
        S5Classifier(**ONE_BATCH, class_weight={"other": 2.0}).fit(X, labels)
    with pytest.raises(
        ValueError,
        match="'class_weight' parameter of S5Classifier must be a str among {'balanced'}, an instance of 'dict' or None",
    ):
        S5Classifier(**ONE_BATCH, class_weight="auto").fit(X, labels)


def test_history_names_the_validation_figure():
    X, y = series(n=20, seed=2)
    params = {**ONE_BATCH, "validation_fraction": 0.25}
    reg = S5Regressor(**params).fit(X, y)
    clf = S5Classifier(**params).fit(X, np.where(y > 0, 1, 0))
    assert "valid_mse" in reg.history_[0] and "valid_loss" in clf.history_[0]
    assert not any("valid_score" in r for r in reg.history_ + clf.history_)


# JAX's duration events of tracing, lowering, compiling and reading the persistent cache
COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
    "/jax/compilation_cache/cache_retrieval_time_sec",
}


def timed_fit(model, X, y):
    """(the fitted model, wall seconds around `fit`, seconds of JAX's compile
    events heard during it), both measured outside the fit."""
    heard = []

    def listen(event, duration, **_):
        if event in COMPILE_EVENTS:
            heard.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        started = time.perf_counter()
        model.fit(X, y)
        wall = time.perf_counter() - started
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    return model, wall, sum(heard)


def test_history_timings_agree_with_clocks_outside_the_fit():
    """The history's seconds against clocks the fit does not keep: the wall
    time around `fit` and JAX's compile events heard by this test. Each check
    fails on a real miscount (epoch seconds that overlap or accumulate,
    compile time taken as the wall time of the calls, or charged to the
    wrong part or epoch, a refit that compiles again), and none compares
    a duration with a fixed number of seconds."""
    jax.clear_caches()  # this process's compiled programs dropped: the first fit compiles (or reads the disk cache)
    rng = np.random.default_rng(3)
    X = [rng.normal(size=(int(n), 13)) for n in rng.integers(6, 10, 5)]  # a feature count no other test uses
    y = rng.normal(size=5)
    params = {**ONE_BATCH, "batch_size": 5}
    first, wall, heard = timed_fit(S5Regressor(**params), X, y)
    history = first.history_
    # the epochs are disjoint parts of the fit: their seconds add up to no more than the fit's
    assert sum(r["seconds"] for r in history) <= wall
    # the compile seconds are JAX's own events: no more than the events heard during the fit
    compiled = sum(r["compile_seconds"] for r in history)
    assert 0 < compiled <= heard + 1e-9
    # epoch 0 compiles the training step (seconds), its one step of 5 short series runs in far less;
    # if compilation were counted as training, train_seconds would hold it
    assert history[0]["compile_seconds"] > history[0]["train_seconds"]
    # later epochs reuse the compiled step: no compile event, nothing recorded
    assert [r["compile_seconds"] for r in history[1:]] == [0.0] * (len(history) - 1)
    # an identical fit in the same process compiles nothing: the network's
    # initialisation and the training step are found in memory
    again, wall_again, heard_again = timed_fit(S5Regressor(**params), X, y)
    assert heard_again == 0 and all(r["compile_seconds"] == 0.0 for r in again.history_)
    assert wall_again < wall
    np.testing.assert_array_equal(again.predict(X), first.predict(X))


def test_early_stopping_never_stops_during_the_warm_up(monkeypatch):
    import s5ts.training._loop as loop

    X, y = series(n=16, seed=4)
    monkeypatch.setattr(loop, "evaluate", lambda *args: 1.0)  # a flat validation curve
    model = S5Regressor(
        **{**ONE_BATCH, "validation_fraction": 0.25, "max_epochs": 30}, warmup_epochs=6, n_iter_no_change=2
    ).fit(X, y)
    # epoch 0 sets the best; warm-up epochs 1-5 do not count; 6 and 7 do
    assert len(model.history_) == 8 and model.best_epoch_ == 0


_CACHE_PROBE = textwrap.dedent(
    """
    import json, sys, numpy as np, jax
    hits, misses = [], []
    jax.monitoring.register_event_listener(
        lambda name, **kw: hits.append(name) if name == "/jax/compilation_cache/cache_hits"
        else misses.append(name) if name == "/jax/compilation_cache/cache_misses" else None
    )
    from s5ts import S5Regressor
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(int(n), 3)) for n in rng.integers(4, 12, 10)]
    model = S5Regressor(n_layers=1, d_model=8, state_size=4, max_epochs=2, validation_fraction=0.0,
                        random_state=0).fit(X, rng.normal(size=10))
    print(json.dumps({"hits": len(hits), "misses": len(misses),
                      "dir": jax.config.jax_compilation_cache_dir,
                      "compile": sum(r["compile_seconds"] for r in model.history_)}))
    """
)


def _probe(env):
    out = subprocess.run(
        [sys.executable, "-c", _CACHE_PROBE], env=env, capture_output=True, text=True, check=True, timeout=600
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["environment", "default"])
def test_a_second_process_compiles_nothing_new(tmp_path, how):
    env = {k: v for k, v in os.environ.items() if not k.startswith("S5TS_")}
    if how == "environment":
        env["S5TS_COMPILATION_CACHE"] = str(tmp_path / "cache")
        where = tmp_path / "cache"
    else:
        env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")  # platformdirs' user cache dir on Linux
        where = tmp_path / "xdg" / "s5ts"
    first, second = _probe(env), _probe(env)
    assert first["dir"].startswith(str(where)) and any(where.rglob("*"))
    assert first["misses"] > 0
    assert second["misses"] == 0 and second["hits"] >= first["misses"]


def test_the_cache_can_be_turned_off(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("S5TS_")}
    env["S5TS_COMPILATION_CACHE"] = "0"
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    result = _probe(env)
    assert result["dir"] is None and result["hits"] == 0 and not (tmp_path / "xdg").exists()


def test_the_cache_keeps_one_folder_per_core_count(tmp_path):
    # A program compiled with one core runs at one core's speed when read
    # back by a process with more: separate folders keep them apart.
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity with at least 2 cores")
    env = {k: v for k, v in os.environ.items() if not k.startswith("S5TS_")}
    env["S5TS_COMPILATION_CACHE"] = str(tmp_path)
    code = "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); " + _CACHE_PROBE
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=600)
    one_core = json.loads(out.stdout.strip().splitlines()[-1])
    assert one_core["dir"] == str(tmp_path / "cpus-1")
    all_cores = _probe(env)
    assert all_cores["dir"] == str(tmp_path / f"cpus-{len(os.sched_getaffinity(0))}")
    assert all_cores["hits"] == 0  # nothing of the one-core programs is reused


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")
def test_compiled_programs_are_released_near_the_mapping_limit():
    from s5ts.training import release_compiled_programs
    from s5ts.training._cache import _memory_mappings

    programs = [jax.jit(lambda x, k=k: jnp.sin(x) * k + jnp.cos(x) ** k) for k in range(20)]
    for program in programs:
        program(jnp.ones(7)).block_until_ready()
    before, _ = _memory_mappings()
    assert not release_compiled_programs(share=1.0)  # far below the limit: kept
    assert all(program._cache_size() == 1 for program in programs)
    assert release_compiled_programs(share=0.0)
    assert all(program._cache_size() == 0 for program in programs)
    assert _memory_mappings()[0] < before  # the executables' mappings went with them
