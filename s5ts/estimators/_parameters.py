"""The S5 estimators' parameters, declared once.

Each `Parameter` has its name, default, scikit-learn constraints
(`_parameter_constraints` entries) and roles. Everything that lists
parameters is derived from `S5_PARAMETERS`: `S5Estimator`'s constructor
and `_parameter_constraints`, the parameters a warm start may not change
(`"network"`), those left out of a checkpoint's fingerprint (`"run"`),
those that say how `X` is read (`"input"`), and the borrowed lists of the
forecaster, the CRU baseline and the sktime adapters (`SharedParameters`).
A new parameter is one row here.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Hashable
from numbers import Integral, Real
from typing import Any

from sklearn.utils._param_validation import Interval, StrOptions

from ..data import LAYOUTS
from ..nn import ACTIVATIONS, DISCRETISATIONS, ENCODERS, INITS, INPUT_HOLDS, POOLS, SCAN_METHODS, SELECTIONS
from ..training import MIN_CHUNK_LENGTH
from ._time_handling import TIME_HANDLINGS

#: The roles a parameter may have.
ROLES = frozenset({"network", "run", "input", "s5"})


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One constructor parameter: its `default`, its scikit-learn
    `constraints`, and its `roles`:

    - `"network"`: it defines the network or the inputs it was trained on,
      so a warm start with another value cannot continue the fitted network;
    - `"run"`: it does not change what a fit computes (a checkpoint written
      with another value continues; `random_state` enters as the seed);
    - `"input"`: it says how `X` is read (the scikit-learn surface's own;
      sktime brings its own data formats);
    - `"s5"`: it belongs to the S5 network and its training (not shared
      with every sequence estimator, e.g. the CRU baseline)."""

    name: str
    default: Any
    constraints: tuple
    roles: frozenset = frozenset()

    def __post_init__(self):
        unknown = set(self.roles) - ROLES
        if unknown:
            raise ValueError(f"parameter {self.name!r}: unknown roles {sorted(unknown)}")


def _p(name, default, *constraints, roles=()):
    return Parameter(name, default, tuple(constraints), frozenset(roles))


def _positive(kind):
    return Interval(kind, 0, None, closed="neither")


def _at_least(kind, low):
    return Interval(kind, low, None, closed="left")


#: Every parameter of `S5Regressor` and `S5Classifier` but their task's own
#: (`loss`, `class_weight`), in constructor order.
S5_PARAMETERS = (
    _p("n_layers", 2, _at_least(Integral, 1), roles=("network", "s5")),
    _p("d_model", 32, _at_least(Integral, 1), roles=("network", "s5")),
    _p("state_size", 16, _at_least(Integral, 1), roles=("network", "s5")),
    _p("blocks", 1, _at_least(Integral, 1), roles=("network", "s5")),
    _p("discretization", "zoh", StrOptions(set(DISCRETISATIONS)), roles=("network", "s5")),
    _p("input_hold", "gap", StrOptions(set(INPUT_HOLDS)), roles=("network", "s5")),
    _p("init", "hippo", StrOptions(set(INITS)), roles=("network", "s5")),
    _p("selective", None, StrOptions(set(SELECTIONS) - {None}), None, roles=("network", "s5")),
    _p("bidirectional", False, "boolean", roles=("network", "s5")),
    _p("activation", "half_glu", StrOptions(set(ACTIVATIONS)), roles=("network", "s5")),
    _p("prenorm", False, "boolean", roles=("network", "s5")),
    _p("dt_min", 0.001, _positive(Real), roles=("s5",)),
    _p("dt_max", 1.0, _positive(Real), roles=("s5",)),
    _p("dropout", 0.0, Interval(Real, 0, 1, closed="left"), roles=("network", "s5")),
    _p("encoder", "identity", StrOptions(set(ENCODERS)), roles=("network",)),
    _p("pooling", "max_mean", StrOptions(set(POOLS)), roles=("network", "s5")),
    _p("summary_features", False, "boolean", roles=("network", "s5")),
    _p("time_handling", "gaps", StrOptions(set(TIME_HANDLINGS)), roles=("network", "s5")),
    _p("first_gap", 1.0, _positive(Real), roles=("network",)),
    _p("hold_ends", "auto", "boolean", StrOptions({"auto"}), roles=("network",)),
    _p("standardize", "auto", "boolean", StrOptions({"auto", "global", "series"}), roles=("network",)),
    _p("max_epochs", 75, _at_least(Integral, 1)),
    _p("batch_size", 32, _at_least(Integral, 1)),
    _p("learning_rate", 1e-2, _positive(Real)),
    _p("ssm_learning_rate", None, _positive(Real), None, roles=("s5",)),
    _p("weight_decay", 0.0, _at_least(Real, 0)),
    _p("warmup_epochs", 5, _at_least(Integral, 0)),
    _p("grad_clip", 1.0, _positive(Real), None),
    _p("validation_fraction", "auto", Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})),
    _p("n_iter_no_change", 20, _at_least(Integral, 1), None),
    _p("tol", 1e-4, _at_least(Real, 0)),
    _p("min_epoch_steps", 20, _at_least(Integral, 1), None, roles=("s5",)),
    _p("observation_dropout", "auto", Interval(Real, 0, 1, closed="left"), StrOptions({"auto"}), roles=("s5",)),
    _p("time_warp", "auto", Interval(Real, 0, None, closed="left"), StrOptions({"auto"}), roles=("s5",)),
    _p("scan", "auto", StrOptions(set(SCAN_METHODS)), roles=("network", "s5")),
    _p("packing", "auto", StrOptions({"auto"}), "boolean", roles=("s5",)),
    _p("random_state", None, "random_state", roles=("run",)),
    _p("verbose", False, "verbose", roles=("run",)),
    _p("warm_start", False, "boolean", roles=("run",)),
    _p("checkpoint_dir", None, str, os.PathLike, None, roles=("run",)),
    _p("checkpoint_every", 1, _at_least(Integral, 1), roles=("run",)),
    _p("chunk_length", None, _at_least(Integral, MIN_CHUNK_LENGTH), None, roles=("s5",)),
    _p("id_col", None, Hashable, None, roles=("input",)),
    _p("time_col", None, Hashable, None, roles=("input",)),
    _p("layout", "nld", StrOptions(set(LAYOUTS)), roles=("input",)),
)

_BY_NAME = {p.name: p for p in S5_PARAMETERS}


def names(role: str | None = None, *, without: str | None = None) -> tuple[str, ...]:
    """The parameters' names in constructor order: those with `role` (all:
    None), less those with the role `without`."""
    return tuple(
        p.name for p in S5_PARAMETERS if (role is None or role in p.roles) and (without is None or without not in p.roles)
    )


def constraints(selected) -> dict:
    """scikit-learn's `_parameter_constraints` of the `selected` names."""
    return {name: list(_BY_NAME[name].constraints) for name in selected}


#: The parameters that say how `X` is read.
INPUT_PARAMETERS = names("input")
#: Those that define the network or the inputs it was trained on.
NETWORK_PARAMETERS = names("network")
#: Those that do not change what a fit computes.
RUN_PARAMETERS = names("run")
#: Constraints of the parameters every sequence estimator has (and of how it reads `X`).
TRAINING_CONSTRAINTS = constraints(names(without="s5"))
#: Constraints of the S5 network's parameters.
S5_CONSTRAINTS = constraints(names("s5"))


class SharedParameters:
    """Constructor parameters that an estimator takes from `S5_PARAMETERS`:
    `names` in that order (default: all of them in constructor order but the
    `INPUT_PARAMETERS`), less `exclude`, with the table's defaults unless
    `defaults` gives others. Decorating `__init__(self, *, own..., **shared)`
    gives it the explicit signature scikit-learn and sktime read (own
    parameters first), and `assign` sets the shared ones, defaults
    included, so the list and its defaults are written once."""

    def __init__(self, names: tuple[str, ...] | None = None, *, exclude: tuple[str, ...] = (), **defaults):
        if names is None:
            names = tuple(p.name for p in S5_PARAMETERS if "input" not in p.roles)
        unknown = sorted(set(names).union(exclude, defaults) - set(_BY_NAME))
        if unknown:
            raise ValueError(f"not S5Estimator parameters: {unknown}")
        names = tuple(n for n in names if n not in exclude)
        if not set(defaults) <= set(names):
            raise ValueError(f"defaults for parameters not shared: {sorted(set(defaults) - set(names))}")
        self.defaults = {name: defaults.get(name, _BY_NAME[name].default) for name in names}

    def constraints(self) -> dict:
        """scikit-learn's `_parameter_constraints` of the shared parameters."""
        return constraints(self.defaults)

    def __call__(self, init):
        own = inspect.signature(init)
        parameters = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
        parameters += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d) for n, d in self.defaults.items()]
        init.__signature__ = own.replace(parameters=parameters)
        return init

    def assign(self, estimator, given: dict) -> None:
        """Set every shared parameter on `estimator`: `given` or the default."""
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise TypeError(f"{type(estimator).__name__}() got unexpected keyword arguments {unknown}")
        for name, default in self.defaults.items():
            setattr(estimator, name, given.get(name, default))


#: Every parameter of the table, the input parameters included: decorates
#: `S5Estimator.__init__(self, **given)` and its subclasses' constructors.
ALL_PARAMETERS = SharedParameters(names())
