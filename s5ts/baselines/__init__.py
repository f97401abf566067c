"""Baselines: the Continuous Recurrent Unit (CRU)."""

from ._cru import CRU, cru_gaussian_nll
from ._estimator import CRUNetwork, CRURegressor

__all__ = ["CRU", "CRUNetwork", "CRURegressor", "cru_gaussian_nll"]
