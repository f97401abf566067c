"""A new network and its optimiser state, compiled as one program.

Built op by op, every random draw and constant of a new shape is a small
program of its own: 46 for the README's regressor (the network's
initialisation, the optimiser's zeros), each traced, lowered and compiled,
or read from the persistent cache, about 2 s of its first fit's 9 s. Traced
as one function, they are one program, compiled once per network.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import equinox as eqx
import numpy as np

from ._optimizer import init_optimizer_state


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """A network to build: `owner(**params).build_network(*args, key)`.

    `owner` is an estimator class, `params` its constructor's arguments
    (`get_params(deep=False)`), `args` hashable (widths, flags). The spec is
    hashable and compared by value, so it keys the compiled initialisation:
    refits of an equal network (cross-validation, grid searches) reuse the
    program.

    >>> from s5ts import S5Regressor
    >>> a = NetworkSpec.of(S5Regressor(d_model=8), 1, False, 1)
    >>> a == NetworkSpec.of(S5Regressor(d_model=8), 1, False, 1), a == NetworkSpec.of(S5Regressor(), 1, False, 1)
    (True, False)
    """

    owner: type
    frozen: tuple  # sorted (name, `_frozen` value) pairs: the spec's identity
    args: tuple
    params: dict = dataclasses.field(compare=False, hash=False)

    @classmethod
    def of(cls, estimator, *args) -> "NetworkSpec":
        params = estimator.get_params(deep=False)
        frozen = tuple(sorted((name, _frozen(value)) for name, value in params.items()))
        return cls(type(estimator), frozen, args, params)

    def __call__(self, key):
        return self.owner(**self.params).build_network(*self.args, key)


def _frozen(value):
    """A hashable stand-in for a parameter value, equal for equal values (an
    unhashable object it does not know is equal to nothing: no reuse)."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
    except TypeError:
        return object()
    return value


@eqx.filter_jit
def initial_model_and_state(build, key, weight_decay: float, grad_clip: float | None) -> tuple[Any, Any]:
    """`(build(key), its optimiser state)` as one compiled program; `build`
    hashable (a `NetworkSpec`), as it keys the program."""
    model = build(key)
    return model, init_optimizer_state(model, weight_decay, grad_clip)
