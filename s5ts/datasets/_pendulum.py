r"""`load_pendulum`: the irregularly sampled noisy-pendulum benchmark.

The data are generated on first use, bit for bit as the benchmark of the S5
paper (its Table 3) was, and cached on disk. This module owns what the
checksums depend on besides the physics and the rendering: the order of the
random draws, the splits and the sub-sampling; and the cache and the
user-facing `Bunch`.

The random draws of a split come in blocks of shape (N, ...), so the first n
sequences of a split of size N are *not* the data of a split of size n.
`n_sequences=n` nevertheless returns exactly the first n sequences of the
published split: the cheap block draws are made at full size and only n
sequences are simulated, rendered and given their per-sequence image noise
(which is drawn sequence by sequence, after everything else).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import operator
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
from jaxtyping import Float, Int, UInt8

from . import _pendulum_physics as physics
from . import _pendulum_render as render

FORMAT_VERSION = 1
N_KEPT = 50
ENV_VAR = "S5TS_DATA_DIR"


@dataclasses.dataclass(frozen=True)
class _Split:
    """Where a split's random numbers come from.

    `preceded_by`: splits drawn earlier from the same `RandomState`, whose
    draws must be consumed first. `kept_seed_offset`: sequence i keeps the
    frames chosen by `default_rng(i + kept_seed_offset)`.
    """

    seed: int
    size: int
    preceded_by: tuple[str, ...]
    kept_seed_offset: int


# Train then test from one RandomState(42) (the CRU code); the S5 authors'
# validation set from RandomState(43).
SPLITS = {
    "train": _Split(seed=42, size=2000, preceded_by=(), kept_seed_offset=2000),
    "valid": _Split(seed=43, size=1000, preceded_by=(), kept_seed_offset=1000),
    "test": _Split(seed=42, size=1000, preceded_by=("train",), kept_seed_offset=0),
}

FEATURE_NAMES = [f"px_{i}" for i in range(render.IMAGE_SIZE**2)]
TARGET_NAMES = ["sin", "cos"]


# --------------------------------------------------------------------------
# Generation


@dataclasses.dataclass(frozen=True)
class _BlockDraws:
    """The first n rows of the (N, ...)-shaped draws of one split."""

    theta0: Float[np.ndarray, " n"]
    transition_noise: Float[np.ndarray, "99 n"]
    observation_noise: Float[np.ndarray, "n 100 2"]
    f0: Float[np.ndarray, " n"]
    steps: Float[np.ndarray, "99 n"]
    t1: Float[np.ndarray, " n"]
    t2: Float[np.ndarray, " n"]


def _draw_blocks(rng: np.random.RandomState, size: int, n: int) -> _BlockDraws:
    """Draw a split's block randomness at its full `size`, keep the first `n`."""
    f = physics.N_FRAMES
    theta0 = rng.uniform(0.0, 2 * np.pi, (size, 1))[:n, 0]
    transition = np.stack(
        [rng.normal(0.0, physics.TRANSITION_NOISE_STD, (size,))[:n] for _ in range(f - 1)]
    )
    observation = rng.normal(0.0, physics.OBSERVATION_NOISE_STD, (size, f, 2))[:n]
    f0 = rng.uniform(0.0, 1.0, (size,))[:n]
    r = render.NOISE_STEP
    steps = np.stack([rng.uniform(-r, r, (size,))[:n] for _ in range(f - 1)])
    t1 = rng.uniform(*render.T1_RANGE, (size, 1))[:n, 0]
    t2 = rng.uniform(*render.T2_RANGE, (size, 1))[:n, 0]
    return _BlockDraws(theta0, transition, observation, f0, steps, t1, t2)


def _pixel_noise_shape() -> tuple[int, ...]:
    s = render.IMAGE_SIZE
    return (physics.N_FRAMES, s, s, 1)


def _skip_split(rng: np.random.RandomState, size: int) -> None:
    """Consume the draws of a whole split without using them."""
    _draw_blocks(rng, size, 0)
    # Same calls as generation, in chunks: a (k, ...) draw consumes the stream
    # exactly as k draws of (...) do, without holding a split's noise at once.
    chunk = 64
    for start in range(0, size, chunk):
        rng.uniform(0.0, 255.0, (min(chunk, size - start), *_pixel_noise_shape()))


def kept_frames(seed: int) -> Int[np.ndarray, " 50"]:
    """The 50 of 100 frame indices kept for one sequence, sorted."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(physics.N_FRAMES, N_KEPT, replace=False))


def generate_split(split: str, n: int, *, verbose: bool = False) -> dict[str, np.ndarray]:
    """Generate the first `n` sequences of a split at full length (100 frames).

    **Arguments:**

    - `split`: "train" | "valid" | "test".
    - `n`: number of sequences, 1 ≤ n ≤ the split's size.
    - `verbose`: show a tqdm progress bar over sequences.

    **Returns:**

    A dict with `images` uint8 (n, 100, 24, 24) (noisy observations),
    `targets` float64 (n, 100, 2) ((sin φ, cos φ) of the noise-free angle),
    `phi` float64 (n, 100) and `kept` int64 (n, 50) (the observed frames).
    """
    from tqdm.auto import tqdm

    spec = SPLITS[split]
    rng = np.random.RandomState(spec.seed)
    for earlier in spec.preceded_by:
        _skip_split(rng, SPLITS[earlier].size)
    draws = _draw_blocks(rng, spec.size, n)

    theta, _ = physics.simulate(draws.theta0, draws.transition_noise)
    phi = physics.hanging_angle(theta)
    targets = physics.angle_targets(phi)
    # Observation noise perturbs the whole state; only its angle is drawn.
    phi_observed = phi + draws.observation_noise[..., 0]
    factors = render.noise_factors(draws.f0, draws.steps, draws.t1, draws.t2)

    images = np.empty((n, physics.N_FRAMES, render.IMAGE_SIZE, render.IMAGE_SIZE), np.uint8)
    for i in tqdm(range(n), desc=f"pendulum {split}", unit="seq", disable=not verbose):
        clean = render.render_sequence(phi_observed[i])
        # The per-sequence pixel noise is the last draw of the split.
        noise = rng.uniform(0.0, 255.0, _pixel_noise_shape())[..., 0]
        images[i] = render.add_image_noise(clean, factors[i], noise)

    kept = np.stack([kept_frames(i + spec.kept_seed_offset) for i in range(n)])
    return {"images": images, "targets": targets, "phi": phi, "kept": kept.astype(np.int64)}


def subsample(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Keep the observed frames: `images` (n, 50, 24, 24), `times` (n, 50),
    `targets` (n, 50, 2)."""
    kept = arrays["kept"]
    rows = np.arange(kept.shape[0])[:, None]
    return {
        "images": arrays["images"][rows, kept],
        "times": kept,
        "targets": arrays["targets"][rows, kept],
    }


# --------------------------------------------------------------------------
# Cache


def cache_root(cache_dir: str | os.PathLike | None) -> Path:
    """The data directory: `cache_dir`, else `$S5TS_DATA_DIR`, else the user
    cache directory of s5ts (platformdirs)."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("s5ts"))


def cache_paths(root: Path, split: str, n: int) -> tuple[Path, Path]:
    """(arrays .npz, metadata .json) of one (split, n)."""
    stem = f"pendulum-v{FORMAT_VERSION}-{split}-n{n}"
    folder = root / "pendulum"
    return folder / f"{stem}.npz", folder / f"{stem}.json"


def _expected_shapes(n: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    s = render.IMAGE_SIZE
    return {
        "images": ((n, N_KEPT, s, s), np.dtype(np.uint8)),
        "times": ((n, N_KEPT), np.dtype(np.int64)),
        "targets": ((n, N_KEPT, 2), np.dtype(np.float64)),
    }


def read_cache(root: Path, split: str, n: int) -> dict[str, np.ndarray] | None:
    """The cached arrays, or None when missing, truncated, or not matching
    their recorded checksum, split or shapes."""
    data_path, meta_path = cache_paths(root, split, n)
    try:
        meta = json.loads(meta_path.read_text())
        payload = data_path.read_bytes()
        if (
            meta.get("format") != FORMAT_VERSION
            or meta.get("split") != split
            or meta.get("n_sequences") != n
            or hashlib.sha256(payload).hexdigest() != meta.get("sha256")
        ):
            return None
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in _expected_shapes(n)}
    except (OSError, ValueError, KeyError, AttributeError, EOFError, zipfile.BadZipFile):
        # Missing, truncated or unparsable files (JSONDecodeError is a
        # ValueError; a JSON that is not an object has no .get): regenerate.
        return None
    for key, (shape, dtype) in _expected_shapes(n).items():
        if arrays[key].shape != shape or arrays[key].dtype != dtype:
            return None
    return arrays


def _atomic_write(path: Path, payload: bytes) -> None:
    """Write via a temporary file in the same folder and a rename, so readers
    never see a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(payload)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_cache(
    root: Path, split: str, n: int, arrays: dict[str, np.ndarray], provenance: dict
) -> None:
    """Store the sub-sampled arrays and a JSON with their sha256 (the arrays
    first: a stale JSON then fails the checksum and forces regeneration)."""
    import PIL

    data_path, meta_path = cache_paths(root, split, n)
    data_path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(buffer, **{key: arrays[key] for key in _expected_shapes(n)})
    payload = buffer.getvalue()
    meta = {
        "format": FORMAT_VERSION,
        "split": split,
        "n_sequences": n,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "numpy": np.__version__,
        "pillow": PIL.__version__,
        **provenance,
    }
    _atomic_write(data_path, payload)
    _atomic_write(meta_path, (json.dumps(meta, indent=2) + "\n").encode())


# --------------------------------------------------------------------------
# Public loader


def _check_split(split) -> _Split:
    if not isinstance(split, str) or split not in SPLITS:
        raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
    return SPLITS[split]


def _check_n_sequences(n_sequences, size: int, split: str) -> int:
    if n_sequences is None:
        return size
    if isinstance(n_sequences, bool):
        raise TypeError(f"n_sequences must be an int or None, got {n_sequences!r}")
    try:
        n = operator.index(n_sequences)
    except TypeError:
        raise TypeError(
            f"n_sequences must be an int or None, got {type(n_sequences).__name__}"
        ) from None
    if not 1 <= n <= size:
        raise ValueError(
            f"n_sequences must be between 1 and {size} (the size of the "
            f"{split!r} split), got {n}"
        )
    return n


def _descr() -> str:
    card = Path(__file__).resolve().parents[2] / "datasets" / "pendulum.md"
    try:
        return card.read_text(encoding="utf-8")
    except OSError:
        return (
            "Irregularly sampled noisy pendulum (Becker et al. 2019; Schirmer "
            "et al. 2022; Smith et al. 2023): 24x24 images of a pendulum, 50 "
            "of 100 frames observed, targets (sin phi, cos phi). See "
            "datasets/pendulum.md in the s5ts repository for the full card."
        )


def _to_frames(
    images: UInt8[np.ndarray, "N L 24 24"],
    times: Int[np.ndarray, "N L"],
    targets: Float[np.ndarray, "N L 2"],
):
    """The estimators' input: one DataFrame per sequence, indexed by frame."""
    import pandas as pd

    n, length = times.shape
    X, y = [], []
    for i in range(n):
        index = pd.Index(times[i], name="frame")
        pixels = images[i].reshape(length, -1).astype(np.float32) / np.float32(255.0)
        X.append(pd.DataFrame(pixels, index=index, columns=FEATURE_NAMES, copy=False))
        y.append(pd.DataFrame(targets[i], index=index, columns=TARGET_NAMES))
    return X, y


def load_pendulum(
    split: str,
    *,
    n_sequences: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    return_X_y: bool = False,
    verbose: bool = True,
):
    r"""Load one split of the irregularly sampled noisy-pendulum benchmark.

    Sequences of 24×24 images of a noisy pendulum, 50 of 100 frames (0.01 s
    each) observed at random, with the pendulum's angle $\varphi$ (0 hangs
    down) to regress as $(\sin\varphi, \cos\varphi)$ at every observed step.
    This is the data of the S5 paper's Table 3, generated bit for bit on first
    use (about 2 minutes for all 4000 sequences) and cached on disk.

    **Arguments:**

    - `split`: "train" (2000 sequences), "valid" (1000) or "test" (1000).
    - `n_sequences`: keep only the first n sequences of the split (generated
      and cached on their own, cheaply); None for all of them.
    - `cache_dir`: data directory; the files go in its `pendulum/` folder.
      Default: `$S5TS_DATA_DIR`, else the user cache directory of s5ts.
    - `return_X_y`: return `(X, y)` instead of the Bunch.
    - `verbose`: show a progress bar while generating.

    **Returns:**

    A `sklearn.utils.Bunch` with

    - `images`: uint8 (N, 50, 24, 24), the observed frames;
    - `times`: int64 (N, 50), their frame indices (0..99);
    - `targets`: float64 (N, 50, 2), (sin φ, cos φ) at those frames;
    - `X`: a list of N DataFrames indexed by the frame indices (index name
      "frame"), with 576 float32 columns `px_0..px_575` = image/255
      (row-major);
    - `y`: a list of N DataFrames, same index, columns ["sin", "cos"];
    - `feature_names`, `target_names`, `DESCR` (the dataset card).

    With `return_X_y=True`, `(X, y)` only.

    **Example:**

    ```python
    from s5ts.datasets import load_pendulum

    X_train, y_train = load_pendulum("train", return_X_y=True)
    X_valid, y_valid = load_pendulum("valid", return_X_y=True)
    ```
    """
    spec = _check_split(split)
    n = _check_n_sequences(n_sequences, spec.size, split)
    root = cache_root(cache_dir)

    arrays = read_cache(root, split, n)
    if arrays is None:
        full = generate_split(split, n, verbose=verbose)
        arrays = subsample(full)
        provenance = {"raw_image_sum": int(full["images"].sum(dtype=np.int64))}
        try:
            write_cache(root, split, n, arrays, provenance)
        except OSError as error:
            warnings.warn(
                f"could not cache the pendulum {split!r} split in {root}: {error}",
                RuntimeWarning,
                stacklevel=2,
            )

    X, y = _to_frames(arrays["images"], arrays["times"], arrays["targets"])
    if return_X_y:
        return X, y
    from sklearn.utils import Bunch

    return Bunch(
        images=arrays["images"],
        times=arrays["times"],
        targets=arrays["targets"],
        X=X,
        y=y,
        feature_names=list(FEATURE_NAMES),
        target_names=list(TARGET_NAMES),
        DESCR=_descr(),
    )
