"""Equinox building blocks of s5ts: the S5 SSM for irregular time, scans,
blocks, encoders and the sequence network. Every module sees one sequence;
batch with `jax.vmap`."""

from ._block import (
    ACTIVATIONS,
    BLOCK_PARAMETERS,
    GELU,
    GLU,
    HalfGLU,
    HalfGLU2,
    S5Block,
    block_settings,
    make_activation,
    make_blocks,
)
from ._discretisation import (
    DISCRETISATIONS,
    INPUT_HOLDS,
    ZOH,
    Bilinear,
    Discretisation,
    GapHold,
    InputHold,
    MixedHold,
    UnitHold,
    complex_expm1,
    make_discretisation,
    make_input_hold,
)
from ._encoders import ENCODERS, IdentityEncoder, PendulumCNN, make_encoder
from ._init import block_diagonal_hippo, diagonalised_hippo_n, hippo_n
from ._model import AbstractSequenceModel, AbstractStatefulSequenceModel
from ._network import POOLINGS, POOLS, GaussianHead, MLPHead, SequenceNetwork, elup1, masked_last, masked_max, masked_mean
from ._scan import SCAN_METHODS, linear_scan, resolve_scan_method
from ._ssm import S5SSM, backward_gaps

__all__ = [
    "ACTIVATIONS",
    "AbstractSequenceModel",
    "AbstractStatefulSequenceModel",
    "GELU",
    "GLU",
    "HalfGLU",
    "HalfGLU2",
    "S5Block",
    "make_activation",
    "make_blocks",
    "BLOCK_PARAMETERS",
    "block_settings",
    "DISCRETISATIONS",
    "INPUT_HOLDS",
    "ZOH",
    "Bilinear",
    "Discretisation",
    "GapHold",
    "InputHold",
    "MixedHold",
    "UnitHold",
    "make_input_hold",
    "complex_expm1",
    "make_discretisation",
    "ENCODERS",
    "IdentityEncoder",
    "PendulumCNN",
    "make_encoder",
    "block_diagonal_hippo",
    "diagonalised_hippo_n",
    "hippo_n",
    "POOLINGS",
    "GaussianHead",
    "MLPHead",
    "POOLS",
    "SequenceNetwork",
    "elup1",
    "masked_last",
    "masked_max",
    "masked_mean",
    "SCAN_METHODS",
    "linear_scan",
    "resolve_scan_method",
    "S5SSM",
    "backward_gaps",
]
