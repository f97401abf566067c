"""scikit-learn estimators: S5Regressor, S5Classifier.

For other s5ts models built on the same pieces (the forecaster, the CRU
baseline): `S5_PARAMETERS` (every parameter, declared once: name, default,
constraints, roles), `SharedParameters`, `TRAINING_CONSTRAINTS` and
`S5_CONSTRAINTS` (derived from it), `SequenceEstimator` (the abstract estimator of
ragged series) and `SequenceRegressor` (the abstract regressor), the tasks
(`AbstractTask`, `Regression`, `Classification`), `time_handling_for` (the
time handling a name stands for), `Preprocessing` (what fit learns of the
inputs) and the scaling maths."""

from ._base import SequenceEstimator
from ._classifier import S5Classifier
from ._parameters import S5_CONSTRAINTS, S5_PARAMETERS, TRAINING_CONSTRAINTS, Parameter, SharedParameters
from ._preprocessing import Preprocessing, learn_preprocessing
from ._regressor import S5Regressor, SequenceRegressor
from ._scaling import pooled_from_moments, series_moments
from ._task import AbstractTask, Classification, Regression
from ._time_handling import AUTO_OBSERVATION_BUDGET, time_handling_for

__all__ = [
    "AUTO_OBSERVATION_BUDGET",
    "AbstractTask",
    "Classification",
    "Parameter",
    "Preprocessing",
    "Regression",
    "S5Classifier",
    "S5Regressor",
    "S5_CONSTRAINTS",
    "S5_PARAMETERS",
    "SequenceEstimator",
    "SequenceRegressor",
    "SharedParameters",
    "TRAINING_CONSTRAINTS",
    "learn_preprocessing",
    "pooled_from_moments",
    "series_moments",
    "time_handling_for",
]
