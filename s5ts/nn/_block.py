"""An S5 block: normalisation, S5 SSM, nonlinearity, dropout, residual."""

from __future__ import annotations

import inspect

import equinox as eqx
import jax
from jaxtyping import Array, Bool, Complex, Float, PRNGKeyArray

from ._ssm import S5SSM, default_float


class GELU(eqx.Module):
    """GELU on each feature."""

    def __call__(self, x: Float[Array, " H"]) -> Float[Array, " H"]:
        return jax.nn.gelu(x)


class GLU(eqx.Module):
    """Full gated linear unit after GELU: W₁g ⊙ σ(W₂g), g = GELU(x)."""

    value: eqx.nn.Linear
    gate: eqx.nn.Linear

    def __init__(self, features: int, *, key: PRNGKeyArray, dtype=None):
        k1, k2 = jax.random.split(key)
        self.value = eqx.nn.Linear(features, features, key=k1, dtype=dtype)
        self.gate = eqx.nn.Linear(features, features, key=k2, dtype=dtype)

    def __call__(self, x: Float[Array, " H"]) -> Float[Array, " H"]:
        g = jax.nn.gelu(x)
        return self.value(g) * jax.nn.sigmoid(self.gate(g))


class HalfGLU(eqx.Module):
    """The S5 paper's "half GLU": g ⊙ σ(W g), g = GELU(x) (the official
    code's "half_glu1")."""

    gate: eqx.nn.Linear

    def __init__(self, features: int, *, key: PRNGKeyArray, dtype=None):
        self.gate = eqx.nn.Linear(features, features, key=key, dtype=dtype)

    def __call__(self, x: Float[Array, " H"]) -> Float[Array, " H"]:
        g = jax.nn.gelu(x)
        return g * jax.nn.sigmoid(self.gate(g))


class HalfGLU2(eqx.Module):
    """The official S5 code's "half_glu2": x ⊙ σ(W GELU(x)). Only the gate
    sees GELU; the value is the SSM's output itself. The S5 authors' pendulum
    configuration uses it."""

    gate: eqx.nn.Linear

    def __init__(self, features: int, *, key: PRNGKeyArray, dtype=None):
        self.gate = eqx.nn.Linear(features, features, key=key, dtype=dtype)

    def __call__(self, x: Float[Array, " H"]) -> Float[Array, " H"]:
        return x * jax.nn.sigmoid(self.gate(jax.nn.gelu(x)))


_GATED = {"glu": GLU, "half_glu": HalfGLU, "half_glu2": HalfGLU2}
ACTIVATIONS = ("gelu", *_GATED)


def make_activation(name: str, features: int, *, key: PRNGKeyArray, dtype=None) -> eqx.Module:
    """Map the user-facing name to its module (parameters of `dtype`)."""
    if name == "gelu":
        return GELU()
    if name not in _GATED:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {name!r}")
    return _GATED[name](features, key=key, dtype=dtype)


class S5Block(eqx.Module):
    """`x + Dropout(act(S5(norm(x))))` (pre-norm) or
    `norm(x + Dropout(act(S5(x))))` (post-norm), on one sequence.

    **Arguments:** `d_model` H, `state_size` P, `blocks` J, `discretization`,
    `bidirectional`, `scan`, `dt_min`, `dt_max`, `input_hold`, `init`, `selective` (see `S5SSM`); `activation`
    ("gelu" | "glu" | "half_glu" | "half_glu2"); `dropout` rate; `prenorm`; `key`;
    `dtype` of every parameter (None: JAX's default float, see `S5SSM`).

    **Call:** `block(x, gaps, mask=None, state=None, *, key=None,
    inference=True) -> (y (L, H), state_last (P,))`.
    """

    ssm: S5SSM
    norm: eqx.nn.LayerNorm
    activation: eqx.Module
    dropout: eqx.nn.Dropout
    prenorm: bool = eqx.field(static=True)

    def __init__(
        self,
        d_model: int,
        state_size: int,
        blocks: int = 1,
        discretization: str = "zoh",
        bidirectional: bool = False,
        scan: str = "auto",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        activation: str = "half_glu",
        dropout: float = 0.0,
        prenorm: bool = False,
        input_hold: str = "gap",
        init: str = "hippo",
        selective: str | None = None,
        *,
        key: PRNGKeyArray,
        dtype=None,
    ):
        k_ssm, k_act = jax.random.split(key)
        self.ssm = S5SSM(
            d_model, state_size, blocks, discretization, bidirectional, scan, dt_min, dt_max, input_hold, init,
            selective, key=k_ssm, dtype=dtype,
        )
        self.norm = eqx.nn.LayerNorm(d_model, dtype=default_float(dtype))
        self.activation = make_activation(activation, d_model, key=k_act, dtype=dtype)
        self.dropout = eqx.nn.Dropout(dropout)
        self.prenorm = prenorm

    def __call__(
        self,
        x: Float[Array, "L H"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        state: Complex[Array, " P"] | None = None,
        reset: Bool[Array, " L"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> tuple[Float[Array, "L H"], Complex[Array, " P"]]:
        x, states = self.with_states(x, gaps, mask, state, reset, key=key, inference=inference)
        return x, states[-1]

    def with_states(
        self,
        x: Float[Array, "L H"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        state: Complex[Array, " P"] | None = None,
        reset: Bool[Array, " L"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> tuple[Float[Array, "L H"], Complex[Array, "L P"]]:
        """Like the call, but with the SSM state after every step (`reset`:
        see `S5SSM`; everything else in a block works per step)."""
        skip = x
        if self.prenorm:
            x = jax.vmap(self.norm)(x)
        x, states = self.ssm.with_states(x, gaps, mask, state, reset)
        x = jax.vmap(self.activation)(x)
        x = self.dropout(x, key=key, inference=inference or key is None)
        x = skip + x
        if not self.prenorm:
            x = jax.vmap(self.norm)(x)
        return x, states

    def init_state(self) -> Complex[Array, " P"]:
        return self.ssm.init_state()

    def step(
        self, state: Complex[Array, " P"], x_k: Float[Array, " H"], gap_k: Float[Array, ""]
    ) -> tuple[Complex[Array, " P"], Float[Array, " H"]]:
        """One observation in online mode (no dropout)."""
        skip = x_k
        if self.prenorm:
            x_k = self.norm(x_k)
        state, x_k = self.ssm.step(state, x_k, gap_k)
        x_k = skip + self.activation(x_k)
        if not self.prenorm:
            x_k = self.norm(x_k)
        return state, x_k


def make_blocks(n_layers: int, *args, key: PRNGKeyArray, **kwargs) -> list[S5Block]:
    """`n_layers` identically configured blocks, `S5Block(*args, **kwargs)`
    (its parameters, written once there), with independent keys."""
    return [S5Block(*args, key=k, **kwargs) for k in jax.random.split(key, n_layers)]


#: `S5Block`'s configuration parameters, from its signature.
BLOCK_PARAMETERS = tuple(
    name for name in inspect.signature(S5Block.__init__).parameters if name not in ("self", "key", "dtype")
)


def block_settings(source, **overrides) -> dict:
    """`S5Block`'s configuration read from the attributes of the same names
    of `source` (an estimator's parameters), `overrides` replacing some."""
    return {name: overrides[name] if name in overrides else getattr(source, name) for name in BLOCK_PARAMETERS}
