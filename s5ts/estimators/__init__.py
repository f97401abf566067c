"""scikit-learn estimators: S5Regressor, S5Classifier."""

from ._classifier import S5Classifier
from ._regressor import S5Regressor

__all__ = ["S5Classifier", "S5Regressor"]
