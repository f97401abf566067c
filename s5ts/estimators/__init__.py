"""scikit-learn estimators: S5Regressor, S5Classifier.

`SharedParameters`, `TRAINING_CONSTRAINTS` and `S5_CONSTRAINTS` are for
other s5ts models that take the same parameters (the forecaster)."""

from ._base import S5_CONSTRAINTS, TRAINING_CONSTRAINTS, SharedParameters
from ._classifier import S5Classifier
from ._regressor import S5Regressor

__all__ = ["S5Classifier", "S5Regressor", "S5_CONSTRAINTS", "SharedParameters", "TRAINING_CONSTRAINTS"]
