"""The interface every network the training loop drives implements
(Equinox's abstract/final pattern: the loop asks nothing with `hasattr`).

`AbstractSSM`: a layer whose dynamics' parameters train in their own
group (`ssm_parameters`).

`AbstractSequenceModel`: one sequence in — inputs (L, D), per-step gaps
(L,), mask (L,), optional extra inputs — outputs out; `batch` runs B
sequences (`jax.vmap` of the call unless a model batches better itself).
`AbstractPackedSequenceModel`: a pooling network that also runs several
series laid end to end in one row (`packed`), each starting afresh, so
training batches need not pad every series to its length bucket.
`AbstractStatefulSequenceModel` adds what truncated back-propagation and
chunked prediction need (`s5ts.training`'s `chunk_length`): `batch_run`
continues every row from a carried state, and `per_step` / `causal` say
whether the model's outputs may be computed chunk by chunk.
"""

from __future__ import annotations

import abc
from typing import Any

import equinox as eqx
import jax
from jaxtyping import Array, Bool, Complex, Float, Int, Key, PRNGKeyArray


class AbstractSSM(eqx.Module):
    """A state-space layer whose `ssm_parameters`, the fields that
    parameterise its dynamics, s5ts's training gives their own learning rate
    and no weight decay (`s5ts.training.parameter_labels`): `S5SSM`, and
    the DSS baseline's layer."""

    ssm_parameters: eqx.AbstractClassVar[tuple[str, ...]]


class AbstractSequenceModel(eqx.Module):
    """A network of one sequence (see the module docstring)."""

    @abc.abstractmethod
    def __call__(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: Float[Array, "L E"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> Any: ...

    def batch(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        extra: Float[Array, "B L E"] | None = None,
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> Any:
        """The call on each of B sequences (`keys` (B,) or None): `jax.vmap`."""

        def one(u, gaps, mask, extra, key):
            return self(u, gaps, mask, extra, key=key, inference=inference)

        return jax.vmap(one)(u, gaps, mask, extra, keys)


class AbstractPackedSequenceModel(AbstractSequenceModel):
    """A network that can pool series packed end to end in rows."""

    @property
    @abc.abstractmethod
    def packs(self) -> bool:
        """Whether `packed` applies: one output per series (a pooling)."""

    @abc.abstractmethod
    def packed(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        segments: Int[Array, "B L"],
        n_segments: int,
        extra: Float[Array, "B L E"] | None = None,
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> Any:
        """The outputs (B, n_segments, ...) of the series numbered by
        `segments` within each row (each series' steps contiguous), each
        as if run alone."""


class AbstractStatefulSequenceModel(AbstractSequenceModel):
    """A network whose per-step outputs can be computed chunk by chunk, each
    chunk continuing from the states the previous one ended in."""

    @property
    @abc.abstractmethod
    def per_step(self) -> bool:
        """Whether the model gives an output per step (not a pooled one)."""

    @property
    @abc.abstractmethod
    def causal(self) -> bool:
        """Whether an output depends on earlier steps alone (no backward pass)."""

    @abc.abstractmethod
    def init_state(self) -> tuple[Complex[Array, " P"], ...]:
        """The state before a series' first step."""

    @abc.abstractmethod
    def batch_run(
        self,
        u: Float[Array, "B L D"],
        gaps: Float[Array, "B L"],
        mask: Bool[Array, "B L"],
        extra: Float[Array, "B L E"] | None,
        state: tuple[Complex[Array, "B P"], ...],
        *,
        keys: Key[Array, " B"] | None = None,
        inference: bool = True,
    ) -> tuple[Any, tuple[Complex[Array, "B P"], ...]]:
        """(per-step outputs, each row's state after its last real step),
        every row continuing from `state`."""
