"""Data sets of `accuracy_real.py`: real sets made irregular, and synthetic
tasks where only the timing carries the answer.

Every data set is a `Dataset`: lists of per-series `pandas.DataFrame`s
indexed by float time (index name "time", one column per channel) and a
target array, for a fixed train and test split. That list-of-DataFrames form
is what `S5Classifier().fit(X, y)` takes as it is; `on_grid` turns it into
the regular `(series, channels, length)` array that sktime's estimators need.

- Real sets: the classification and regression sets that ship inside
  sktime (`sktime/datasets/data/`, loaded offline), with their own train /
  test split. Each series keeps a seeded random `THIN_FRACTION` of its time
  points (`thin`), at their original positions 0..L-1 as float times.
  Splits larger than `max_series` are subsampled (seeded, stratified for
  classification); nothing is truncated.
- Synthetic sets (already irregular, not thinned): "frequency" (regress the
  frequency of a noiseless sinusoid from 20-60 random observations),
  "event_interval" (regress the time between two spikes), "rhythm" (classes
  that differ only in when the values were observed).

Every random choice comes from a generator seeded by the data set's name, so
a data set is the same whatever else is loaded, in whatever order.
"""

from __future__ import annotations

import dataclasses
import inspect
import zlib
from typing import Callable

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

THIN_FRACTION = 0.5
WINDOW_HOURS = 10.0  # observation window of the synthetic tasks
SYNTHETIC_GRID = np.linspace(0.0, WINDOW_HOURS, 101)  # their regular grid for sktime


@dataclasses.dataclass(frozen=True)
class Dataset:
    """One task with a fixed split.

    `grid`: the common regular time grid for `on_grid`, or None when the
    series have unequal lengths; each series is then resampled over its own
    observed span onto `grid_length` points. `notes` says what was done to
    the original data (subsampling, unequal lengths).
    """

    name: str
    task: str  # "classification" or "regression"
    source: str  # "sktime" or "synthetic"
    X_train: list[pd.DataFrame]
    y_train: np.ndarray
    X_test: list[pd.DataFrame]
    y_test: np.ndarray
    grid: np.ndarray | None
    grid_length: int
    notes: str = ""

    @property
    def n_channels(self) -> int:
        return self.X_train[0].shape[1]

    @property
    def is_real(self) -> bool:
        return self.source != "synthetic"


def rng_for(name: str, seed: int = 0) -> np.random.Generator:
    """A generator that depends only on the data set's name and `seed`."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def frame(times, values, columns) -> pd.DataFrame:
    """One series: `values` (L, C) indexed by float `times`."""
    index = pd.Index(np.asarray(times, dtype=float), name="time")
    return pd.DataFrame(np.asarray(values, dtype=float).reshape(len(index), -1), index=index, columns=columns)


def thin(frames: list[pd.DataFrame], fraction: float, rng: np.random.Generator) -> list[pd.DataFrame]:
    """Each series keeps a random `fraction` of its rows (at least 2, time
    order and time stamps unchanged)."""
    kept = []
    for f in frames:
        n = min(len(f), max(2, round(fraction * len(f))))
        rows = np.sort(rng.choice(len(f), size=n, replace=False))
        kept.append(f.iloc[rows])
    return kept


def on_grid(frames: list[pd.DataFrame], grid: np.ndarray | None, length: int) -> np.ndarray:
    """Linear interpolation of every series onto a regular grid, (n, C, G).

    With a common `grid` (equal-length sets: the original 0..L-1 positions)
    values beyond a series' first and last observation are held constant.
    With `grid=None` each series is resampled over its own observed span
    onto `length` points.
    """
    out = []
    for f in frames:
        t = f.index.to_numpy(dtype=float)
        points = grid if grid is not None else np.linspace(t[0], t[-1], length)
        out.append([np.interp(points, t, f[c].to_numpy(dtype=float)) for c in f.columns])
    return np.asarray(out)


# --- real data sets shipped with sktime -------------------------------------

# name -> (loader in sktime.datasets, task)
REAL = {
    "ArrowHead": ("load_arrow_head", "classification"),
    "GunPoint": ("load_gunpoint", "classification"),
    "ItalyPowerDemand": ("load_italy_power_demand", "classification"),
    "UnitTest": ("load_unit_test", "classification"),
    "ACSF1": ("load_acsf1", "classification"),
    "OSULeaf": ("load_osuleaf", "classification"),
    "BasicMotions": ("load_basic_motions", "classification"),
    "JapaneseVowels": ("load_japanese_vowels", "classification"),
    "PLAID": ("load_plaid", "classification"),
    "Tecator": ("load_tecator", "regression"),
    "Covid3Month": ("load_covid_3month", "regression"),
}


def _load_split(loader: Callable, split: str) -> tuple[list[pd.DataFrame], np.ndarray]:
    """One split of an sktime loader as a list of frames (times 0..L-1)."""
    kwargs = {"split": split}
    if "return_type" in inspect.signature(loader).parameters:
        kwargs["return_type"] = "nested_univ"
    X, y = loader(**kwargs)
    columns = [str(c) for c in X.columns]
    frames = []
    for _, row in X.iterrows():
        values = np.column_stack([np.asarray(cell, dtype=float) for cell in row])
        frames.append(frame(np.arange(len(values)), values, columns))
    return frames, np.asarray(y)


def subsample(frames, y, n: int | None, task: str, rng: np.random.Generator):
    """At most `n` series, seeded; stratified by class where every class has
    two or more series."""
    if n is None or len(frames) <= n:
        return frames, y
    stratify = None
    if task == "classification" and np.unique(y, return_counts=True)[1].min() >= 2:
        stratify = y
    seed = int(rng.integers(2**31))
    idx, _ = train_test_split(np.arange(len(frames)), train_size=n, stratify=stratify, random_state=seed)
    idx = np.sort(idx)
    return [frames[i] for i in idx], y[idx]


def load_real(name: str, max_series: int | None = None, seed: int = 0) -> Dataset:
    """A real sktime data set, thinned to `THIN_FRACTION` of its time points,
    each split subsampled to at most `max_series` series."""
    import sktime.datasets

    loader_name, task = REAL[name]
    loader = getattr(sktime.datasets, loader_name)
    rng = rng_for(name, seed)
    splits, lengths, notes = {}, {}, []
    for split in ("train", "test"):
        frames, y = _load_split(loader, split)
        n_all = len(frames)
        frames, y = subsample(frames, y, max_series, task, rng)
        if len(frames) < n_all:
            notes.append(f"{split} {len(frames)} of {n_all}")
        lengths[split] = [len(f) for f in frames]
        splits[split] = (thin(frames, THIN_FRACTION, rng), y.astype(float) if task == "regression" else y)
    if len(set(lengths["train"] + lengths["test"])) == 1:
        grid, length = np.arange(float(lengths["train"][0])), lengths["train"][0]
    else:
        # each series resampled over its own span, to the median original length
        grid, length = None, int(np.median(lengths["train"]))
        notes.append(f"unequal lengths {min(lengths['train'])}-{max(lengths['train'])}")
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    return Dataset(
        name, task, "sktime", X_train, y_train, X_test, y_test, grid=grid, grid_length=length, notes=", ".join(notes)
    )


# --- synthetic tasks: only the timing carries the answer --------------------

N_TRAIN, N_TEST = 240, 80


def _random_times(rng, low: int = 20, high: int = 60) -> np.ndarray:
    """`low`..`high` sorted uniform times in the observation window."""
    return np.sort(rng.uniform(0.0, WINDOW_HOURS, rng.integers(low, high + 1)))


def _frequency_series(rng):
    """sin(2π f t + φ) at random times; target f ~ U(0.2, 2) per hour."""
    f, phase = rng.uniform(0.2, 2.0), rng.uniform(0.0, 2 * np.pi)
    t = _random_times(rng)
    return frame(t, np.sin(2 * np.pi * f * t + phase), ["value"]), f


def _event_interval_series(rng):
    """0 at random times, 1 at two random event times; target: their interval."""
    events = np.sort(rng.uniform(0.0, WINDOW_HOURS, 2))
    t = np.concatenate([_random_times(rng), events])
    values = np.concatenate([np.zeros(len(t) - 2), np.ones(2)])
    order = np.argsort(t)
    return frame(t[order], values[order], ["value"]), events[1] - events[0]


def _rhythm_series(rng):
    """Values N(0, 1) in both classes; class 0 is observed on a jittered
    regular rhythm, class 1 in bursts (about 5 observations per burst)."""
    label = int(rng.integers(2))
    n = int(rng.integers(20, 61))
    if label == 0:
        step = WINDOW_HOURS / n
        t = (np.arange(n) + 0.5 + rng.uniform(-0.3, 0.3, n)) * step
    else:
        centres = rng.uniform(0.0, WINDOW_HOURS, max(1, n // 5))
        t = np.clip(rng.choice(centres, n) + rng.normal(0.0, 0.05, n), 0.0, WINDOW_HOURS)
    t = np.unique(t)
    return frame(t, rng.normal(size=len(t)), ["value"]), label


SYNTHETIC = {
    "frequency": (_frequency_series, "regression"),
    "event_interval": (_event_interval_series, "regression"),
    "rhythm": (_rhythm_series, "classification"),
}


def load_synthetic(name: str, seed: int = 0) -> Dataset:
    """`N_TRAIN` + `N_TEST` series of a synthetic task."""
    make, task = SYNTHETIC[name]
    rng = rng_for(name, seed)
    frames, y = zip(*(make(rng) for _ in range(N_TRAIN + N_TEST)))
    y = np.asarray(y, dtype=float if task == "regression" else int)
    return Dataset(
        name, task, "synthetic", list(frames[:N_TRAIN]), y[:N_TRAIN], list(frames[N_TRAIN:]), y[N_TRAIN:],
        grid=SYNTHETIC_GRID, grid_length=len(SYNTHETIC_GRID),
    )


ALL = list(REAL) + list(SYNTHETIC)


def load(name: str, max_series: int | None = None, seed: int = 0) -> Dataset:
    """Any data set of `ALL` by name."""
    if name in SYNTHETIC:
        return load_synthetic(name, seed)
    if name in REAL:
        return load_real(name, max_series, seed)
    raise KeyError(f"unknown data set {name!r}; known: {', '.join(ALL)}")
