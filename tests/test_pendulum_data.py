"""The noisy-pendulum data set: physics and rendering against naive
references, the spec's invariants, pinned checksums, the cache and the
user-facing format.

The pinned checksums hold for numpy 2.4.6 and Pillow 13.0 (Lanczos output may
change in the last bit with another Pillow); the assertion messages print the
versions in use.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import PIL
import pytest

from conftest import unchecked
from s5ts.datasets import _pendulum, _pendulum_physics, _pendulum_render, load_pendulum

VERSIONS = f"numpy {np.__version__}, Pillow {PIL.__version__} (pinned with 2.4.6 / 13.0.0)"

# First-sequence facts of the published training set (spec §6); they hold for
# any n because a prefix of a split is the same data.
PHI0_TRAIN = -0.788287681898749
KEPT_TRAIN_0_START = [0, 1, 2, 4, 5, 7, 9, 10, 11, 12, 16]
KEPT_TRAIN_0_END = [95, 97, 99]

# Small prefixes, computed once with this code after it matched the published
# full-size checksums: raw uint8 sum, kept uint8 sum, target sum, time sum.
SMALL = {
    ("train", 8): (31853978, 15924617, 102.35279078569329, 20043),
    ("valid", 3): (9675581, 4945369, 46.36947982243263, 7055),
    ("test", 3): (12795891, 6468480, 126.34862295249893, 7639),
}

# Spec §6: published sums after sub-sampling (images / 255), and raw sums.
PUBLISHED = {
    "train": (14373030.227451, 37657.602830, 4957111, 7324342474),
    "valid": (7238414.788235, 19100.230655, 2478094, 3694064515),
    "test": (7284288.349020, 18808.583486, 2481381, 3723464974),
}


def _raw_sum(cache_dir, split, n):
    _, meta_path = _pendulum.cache_paths(_pendulum.cache_root(cache_dir), split, n)
    return json.loads(meta_path.read_text())["raw_image_sum"]


# ---------------------------------------------------------------- physics


def _simulate_naive(theta0, noise):
    """One pendulum, scalar Python floats, written straight from the spec."""
    c = 9.81 * 1.0 * 1.0 / (1.0 * 1.0**2 / 3.0)
    theta, omega = [theta0], [0.0]
    th, om = theta0, 0.0
    for eps in noise:
        for _ in range(100):
            om = om + 1e-4 * (c * math.sin(th) - 0.1 * om)
            th = th + 1e-4 * om
        om = om + eps
        th = th % (2 * math.pi)
        theta.append(th)
        omega.append(om)
    return np.array(theta), np.array(omega)


def test_simulate_matches_naive_loop():
    rng = np.random.default_rng(0)
    theta0 = rng.uniform(0, 2 * np.pi, 3)
    noise = rng.normal(0, 0.1, (20, 3))
    theta, omega = _pendulum_physics.simulate(theta0, noise)
    assert theta.shape == omega.shape == (3, 21)
    for i in range(3):
        ref_theta, ref_omega = _simulate_naive(theta0[i], noise[:, i])
        # Not bitwise: numpy's vectorised sin may differ from libm by an ulp.
        np.testing.assert_allclose(theta[i], ref_theta, rtol=0, atol=1e-9)
        np.testing.assert_allclose(omega[i], ref_omega, rtol=0, atol=1e-9)


def test_simulate_physics_sanity():
    # Balanced upright with no noise: stays put; hanging down: stays put.
    theta, omega = _pendulum_physics.simulate(np.array([0.0, np.pi]), np.zeros((10, 2)))
    np.testing.assert_allclose(omega, 0.0, atol=1e-12)
    np.testing.assert_allclose(theta[1], np.pi, atol=1e-12)
    # Released near the top it falls: |omega| grows, angle stays in [0, 2π).
    theta, omega = _pendulum_physics.simulate(np.array([0.3]), np.zeros((30, 1)))
    assert abs(omega[0, 10]) > abs(omega[0, 1]) > 0
    assert np.all((theta >= 0) & (theta < 2 * np.pi))


def test_targets_are_sin_cos_of_hanging_angle():
    theta = np.array([[0.0, np.pi, 0.5]])
    phi = _pendulum_physics.hanging_angle(theta)
    targets = _pendulum_physics.angle_targets(phi)
    assert targets.shape == (1, 3, 2)
    np.testing.assert_allclose(targets[0, 1], [0.0, 1.0], atol=1e-15)  # hangs down
    np.testing.assert_allclose(targets[0, 0], [0.0, -1.0], atol=1e-15)  # upright
    np.testing.assert_allclose(np.sum(targets**2, -1), 1.0)


# ---------------------------------------------------------------- rendering


@pytest.mark.parametrize("phi", np.linspace(-np.pi, np.pi, 9)[:-1] + 0.1)
def test_rendered_rod_points_along_the_angle(phi):
    image = _pendulum_render.render_frame(phi).astype(float)
    assert image.shape == (24, 24)
    rows, cols = np.mgrid[0:24, 0:24] + 0.5  # pixel centres
    mass = image.sum()
    # (x = column, y = row) offset of the centroid from the centre (12, 12).
    dx = (image * cols).sum() / mass - 12.0
    dy = (image * rows).sum() / mass - 12.0
    angle = math.atan2(dx, dy)
    assert abs(math.remainder(angle - phi, 2 * math.pi)) < 0.05
    assert 0.4 * 55 * 24 / 128 < math.hypot(dx, dy) < 0.6 * 55 * 24 / 128


def test_clean_frames_statistics():
    # Spec §2: clean frames are ~91 % zeros, ~0.9 % saturated, mean ~7.
    phis = np.random.default_rng(1).uniform(-np.pi, np.pi, 100)
    images = _pendulum_render.render_sequence(phis)
    assert images.dtype == np.uint8 and images.shape == (100, 24, 24)
    assert 0.89 < np.mean(images == 0) < 0.93
    assert 0.004 < np.mean(images == 255) < 0.014
    assert 6.0 < images.mean() < 8.0


def _noise_factors_naive(f0, steps, t1, t2, n_clean):
    out = []
    for i in range(len(f0)):
        f = [f0[i]]
        for s in steps[:, i]:
            f.append(min(max(f[-1] + s, 0.0), 1.0))
        g = [min(max((v - t1[i]) / (t2[i] - t1[i]), 0.0), 1.0) for v in f]
        out.append([1.0] * n_clean + g[n_clean:])
    return np.array(out)


def test_noise_factors_match_naive_loop():
    rng = np.random.default_rng(2)
    f0, steps = rng.uniform(0, 1, 4), rng.uniform(-0.2, 0.2, (99, 4))
    t1, t2 = rng.uniform(0, 0.25, 4), rng.uniform(0.75, 1, 4)
    f = _pendulum_render.noise_factors(f0, steps, t1, t2)
    assert f.shape == (4, 100)
    np.testing.assert_array_equal(f, _noise_factors_naive(f0, steps, t1, t2, 5))
    assert np.all(f[:, :5] == 1.0) and f.min() >= 0.0 and f.max() <= 1.0


def test_add_image_noise_extremes_and_truncation():
    clean = np.full((3, 2, 2), 200, np.uint8)
    noise = np.full((3, 2, 2), 100.9)
    out = _pendulum_render.add_image_noise(clean, np.array([1.0, 0.0, 0.5]), noise)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out[:, 0, 0], [200, 100, 150])  # 150.45 truncated


# ---------------------------------------------------------------- generation


def test_kept_frames_first_training_sequence():
    kept = _pendulum.kept_frames(0 + _pendulum.SPLITS["train"].kept_seed_offset)
    assert kept.shape == (50,) and np.all(np.diff(kept) > 0)
    assert list(kept[:11]) == KEPT_TRAIN_0_START
    assert list(kept[-3:]) == KEPT_TRAIN_0_END


@pytest.mark.parametrize("split,n", list(SMALL))
def test_small_prefix_checksums(tmp_path, split, n):
    raw, kept_sum, target_sum, time_sum = SMALL[split, n]
    data = load_pendulum(split, n_sequences=n, cache_dir=tmp_path, verbose=False)
    assert data.images.shape == (n, 50, 24, 24) and data.images.dtype == np.uint8
    assert data.times.shape == (n, 50) and data.times.dtype == np.int64
    assert data.targets.shape == (n, 50, 2) and data.targets.dtype == np.float64
    assert int(data.images.sum(dtype=np.int64)) == kept_sum, VERSIONS
    assert data.targets.sum() == pytest.approx(target_sum, rel=1e-12, abs=0)
    assert int(data.times.sum()) == time_sum
    assert _raw_sum(tmp_path, split, n) == raw, VERSIONS


def test_first_training_sequence_facts(tmp_path):
    data = load_pendulum("train", n_sequences=1, cache_dir=tmp_path, verbose=False)
    assert list(data.times[0, :11]) == KEPT_TRAIN_0_START
    # Frame 0 is observed, and its target is (sin, cos) of the initial angle.
    np.testing.assert_allclose(
        data.targets[0, 0], [math.sin(PHI0_TRAIN), math.cos(PHI0_TRAIN)], rtol=1e-14
    )
    np.testing.assert_allclose(data.targets[0, 0], [-0.70915, 0.70506], atol=5e-6)
    np.testing.assert_allclose(np.sum(data.targets**2, -1), 1.0)
    # The first five frames are clean: a rod, not noise (mostly black).
    assert np.mean(data.images[0, :3] == 0) > 0.8


def _shrunk_splits(monkeypatch, sizes):
    for name, size in sizes.items():
        spec = dataclasses.replace(_pendulum.SPLITS[name], size=size)
        monkeypatch.setitem(_pendulum.SPLITS, name, spec)


@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_prefix_is_the_start_of_the_full_split(tmp_path, monkeypatch, split):
    # Tiny split sizes exercise the full-size-draws logic cheaply; the test
    # split also checks that the whole of "train" is consumed before it.
    _shrunk_splits(monkeypatch, {"train": 6, "valid": 5, "test": 4})
    full = _pendulum.generate_split(split, _pendulum.SPLITS[split].size)
    part = _pendulum.generate_split(split, 2)
    for key in ("images", "targets", "phi", "kept"):
        np.testing.assert_array_equal(part[key], full[key][:2])
    # ...whereas a split that is really of size 2 differs (block-shaped draws).
    _shrunk_splits(monkeypatch, {split: 2})
    assert not np.array_equal(_pendulum.generate_split(split, 2)["phi"], part["phi"])


def test_noise_and_sampling_statistics(tmp_path):
    full = _pendulum.generate_split("valid", 12)
    assert full["images"].shape == (12, 100, 24, 24)
    gaps = np.diff(full["kept"], axis=1)
    assert np.all(gaps >= 1) and 1.7 < gaps.mean() < 2.3
    # Later frames are noisier than the clean first five.
    assert full["images"][:, 5:].mean() > 2 * full["images"][:, :5].mean()


# ---------------------------------------------------------------- format


def test_bunch_and_X_y_format(tmp_path):
    data = load_pendulum("valid", n_sequences=2, cache_dir=tmp_path, verbose=False)
    assert data.feature_names == [f"px_{i}" for i in range(576)]
    assert data.target_names == ["sin", "cos"]
    assert "pendulum" in data.DESCR.lower()
    assert len(data.X) == len(data.y) == 2
    for i, (x, y) in enumerate(zip(data.X, data.y)):
        assert isinstance(x, pd.DataFrame) and isinstance(y, pd.DataFrame)
        assert x.index.name == "frame" and y.index.name == "frame"
        np.testing.assert_array_equal(x.index.to_numpy(), data.times[i])
        assert x.index.equals(y.index)
        assert list(x.columns) == data.feature_names
        assert (x.dtypes == np.float32).all()
        pixels = data.images[i].reshape(50, 576).astype(np.float32) / np.float32(255)
        np.testing.assert_array_equal(x.to_numpy(), pixels)
        assert list(y.columns) == ["sin", "cos"]
        np.testing.assert_array_equal(y.to_numpy(), data.targets[i])
    # Row-major: pixel (r, c) is column px_{24 r + c}.
    pixel = np.float32(data.images[0, 3, 1, 6]) / np.float32(255)
    assert data.X[0]["px_30"].iloc[3] == pixel

    X, y = load_pendulum(
        "valid", n_sequences=2, cache_dir=tmp_path, return_X_y=True, verbose=False
    )
    assert len(X) == len(y) == 2
    pd.testing.assert_frame_equal(X[1], data.X[1])
    pd.testing.assert_frame_equal(y[1], data.y[1])


def test_bad_split_name():
    with pytest.raises(ValueError, match=r"'train', 'valid', 'test'.*'validation'"):
        load_pendulum("validation")
    with pytest.raises(ValueError, match="split must be one of"):
        unchecked(load_pendulum)(0)


@pytest.mark.parametrize("n", [0, -3, 2001])
def test_n_sequences_out_of_range(tmp_path, n):
    with pytest.raises(ValueError, match="n_sequences must be between 1 and 2000"):
        load_pendulum("train", n_sequences=n, cache_dir=tmp_path)
    assert not (tmp_path / "pendulum").exists()


@pytest.mark.parametrize("n", [2.0, "3", True])
def test_n_sequences_wrong_type(tmp_path, n):
    with pytest.raises(TypeError, match="n_sequences must be an int or None"):
        unchecked(load_pendulum)("train", n_sequences=n, cache_dir=tmp_path)


# ---------------------------------------------------------------- cache


@pytest.fixture
def count_generations(monkeypatch):
    calls = []
    real = _pendulum.generate_split

    def counting(split, n, **kwargs):
        calls.append((split, n))
        return real(split, n, **kwargs)

    monkeypatch.setattr(_pendulum, "generate_split", counting)
    return calls


def test_cache_round_trip(tmp_path, count_generations):
    first = load_pendulum("valid", n_sequences=2, cache_dir=tmp_path, verbose=False)
    data_path, meta_path = _pendulum.cache_paths(tmp_path, "valid", 2)
    assert data_path.exists() and meta_path.exists()
    assert not list(data_path.parent.glob("*.tmp"))
    meta = json.loads(meta_path.read_text())
    assert meta["split"] == "valid" and meta["n_sequences"] == 2
    assert meta["numpy"] == np.__version__ and meta["pillow"] == PIL.__version__
    second = load_pendulum("valid", n_sequences=2, cache_dir=tmp_path, verbose=False)
    assert count_generations == [("valid", 2)]
    for key in ("images", "times", "targets"):
        np.testing.assert_array_equal(first[key], second[key])
        assert first[key].dtype == second[key].dtype
    # Each (split, n) has its own files.
    load_pendulum("valid", n_sequences=1, cache_dir=tmp_path, verbose=False)
    assert count_generations == [("valid", 2), ("valid", 1)]


def _truncate(data_path, meta_path):
    data_path.write_bytes(data_path.read_bytes()[:1000])


def _wrong_checksum(data_path, meta_path):
    meta = json.loads(meta_path.read_text())
    meta["sha256"] = "0" * 64
    meta_path.write_text(json.dumps(meta))


def _flip_a_byte(data_path, meta_path):
    payload = bytearray(data_path.read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    data_path.write_bytes(bytes(payload))


def _garbage_json(data_path, meta_path):
    meta_path.write_text("{not json")


def _json_not_an_object(data_path, meta_path):
    meta_path.write_text("[1, 2]")


def _missing_json(data_path, meta_path):
    meta_path.unlink()


def _missing_arrays(data_path, meta_path):
    data_path.unlink()


@pytest.mark.parametrize(
    "corrupt",
    [
        _truncate,
        _wrong_checksum,
        _flip_a_byte,
        _garbage_json,
        _json_not_an_object,
        _missing_json,
        _missing_arrays,
    ],
)
def test_corrupt_cache_regenerates(tmp_path, count_generations, corrupt):
    first = load_pendulum("valid", n_sequences=1, cache_dir=tmp_path, verbose=False)
    corrupt(*_pendulum.cache_paths(tmp_path, "valid", 1))
    second = load_pendulum("valid", n_sequences=1, cache_dir=tmp_path, verbose=False)
    assert count_generations == [("valid", 1), ("valid", 1)]
    np.testing.assert_array_equal(first.images, second.images)
    # ...and the regenerated cache is valid again.
    assert _pendulum.read_cache(tmp_path, "valid", 1) is not None


def test_env_var_sets_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("S5TS_DATA_DIR", str(tmp_path / "env"))
    load_pendulum("valid", n_sequences=1, verbose=False)
    assert _pendulum.cache_paths(tmp_path / "env", "valid", 1)[0].exists()
    # An explicit cache_dir wins over the environment.
    load_pendulum("valid", n_sequences=1, cache_dir=tmp_path / "arg", verbose=False)
    assert _pendulum.cache_paths(tmp_path / "arg", "valid", 1)[0].exists()


def test_default_dir_is_user_cache(monkeypatch):
    import platformdirs

    monkeypatch.delenv("S5TS_DATA_DIR", raising=False)
    assert str(_pendulum.cache_root(None)) == platformdirs.user_cache_dir("s5ts")


def test_verbose_shows_progress(tmp_path, capsys):
    load_pendulum("valid", n_sequences=1, cache_dir=tmp_path, verbose=True)
    assert "pendulum valid" in capsys.readouterr().err
    load_pendulum("valid", n_sequences=1, cache_dir=tmp_path, verbose=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- published


@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_published_checksums(tmp_path, split):
    """The full splits against spec §6 (about 15-35 s per split)."""
    image_sum, target_sum, time_sum, raw_sum = PUBLISHED[split]
    n = _pendulum.SPLITS[split].size
    data = load_pendulum(split, cache_dir=tmp_path, verbose=False)
    assert data.images.shape == (n, 50, 24, 24)
    images = data.images.sum(dtype=np.int64) / 255
    assert images == pytest.approx(image_sum, abs=1e-6), VERSIONS
    assert data.targets.sum() == pytest.approx(target_sum, abs=1e-6)
    assert int(data.times.sum()) == time_sum
    assert _raw_sum(tmp_path, split, n) == raw_sum, VERSIONS
    # The cheap prefix is exactly the start of the published split.
    small = load_pendulum(split, n_sequences=3, cache_dir=tmp_path, verbose=False)
    for key in ("images", "times", "targets"):
        np.testing.assert_array_equal(small[key], data[key][:3])
