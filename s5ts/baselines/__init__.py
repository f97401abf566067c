"""Baselines: the Continuous Recurrent Unit (CRU) and Diagonal State Spaces (DSS)."""

from ._cru import CRU, cru_gaussian_nll
from ._dss import DSS, DSS_KERNELS, DSSBlock, DSSExp, DSSKernel, DSSNetwork, DSSSoftmax, make_dss_kernel
from ._dss_estimator import DSSRegressor
from ._estimator import CRUNetwork, CRURegressor

__all__ = [
    "CRU",
    "CRUNetwork",
    "CRURegressor",
    "DSS",
    "DSSBlock",
    "DSSExp",
    "DSSKernel",
    "DSSNetwork",
    "DSSRegressor",
    "DSSSoftmax",
    "DSS_KERNELS",
    "cru_gaussian_nll",
    "make_dss_kernel",
]
