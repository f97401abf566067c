r"""The multi-horizon forecasting network and its loss.

`MultiHorizonNetwork` wraps a causal `SequenceNetwork` with a Gaussian
head. On one series (a window of it) it runs the observation steps in
sequence mode, keeps every block's state after every step, and from the
state after each origin step $k$ takes one forecast step per query: the
state carried over the lead exactly, $\bar\Lambda = e^{\Lambda\Delta\,g}$,
then the head. So training asks what predict asks: values at leads up to
the horizon, from the history before them.

Everything here sees one series; the training loop `vmap`s batches.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Complex, Float, PRNGKeyArray

from ..data import bucket_length, pad_batch
from ..nn import AbstractSequenceModel, MLPHead, SequenceNetwork
from ..training import VARIANCE_FLOOR

State = tuple  # one complex (P,) array per S5 block


class LeadHead(eqx.Module):
    r"""Gaussian head on the blocks' output `h` and the lead $g$ (model
    units), with $l = \log(1 + g)$:

    - mean = MLP([h, l]) + v(h)·g, with a drift v (linear, zero at
      initialisation), so a local trend extrapolates linearly in the lead;
    - log var = MLP([h, l]) + a·l + b, so a variance that grows as a power
      of the lead (a random walk's: a = 1) is one weight away.

    Returns `(mean (d,), var (d,))`."""

    mean: MLPHead
    drift: eqx.nn.Linear
    log_var: MLPHead
    lead_slope: Float[Array, " d"]
    offset: Float[Array, " d"]

    def __init__(self, d_model: int, n_outputs: int, *, key: PRNGKeyArray):
        k1, k2 = jax.random.split(key)
        self.mean = MLPHead(d_model + 1, n_outputs, d_model, key=k1)
        self.drift = eqx.nn.Linear(d_model, n_outputs, key=k1)
        self.drift = eqx.tree_at(lambda m: (m.weight, m.bias), self.drift, replace_fn=jnp.zeros_like)
        self.log_var = MLPHead(d_model + 1, n_outputs, d_model, key=k2)
        self.lead_slope = jnp.ones(n_outputs)
        self.offset = jnp.zeros(n_outputs)

    def __call__(self, h: Float[Array, " H"], lead: Float[Array, ""], max_lead: Float[Array, ""] | float = jnp.inf):
        """Beyond `max_lead` (the longest lead trained for) the mean holds
        what it reached there (a damped trend); the variance keeps growing."""
        seen = jnp.minimum(lead, max_lead)
        features = jnp.concatenate([h, jnp.log1p(seen)[None]])
        mean = self.mean(features) + self.drift(h) * seen
        log_var = self.log_var(features) + self.lead_slope * jnp.log1p(lead) + self.offset
        return mean, jnp.exp(jnp.clip(log_var, -12.0, 12.0))


class MultiHorizonNetwork(AbstractSequenceModel):
    """**Call:** `net(u (L, n_in), gaps (L,), mask (L,), queries (L, K·(n_in+1)),
    *, key=None, inference=True) -> (mean, var)`, each (L, K·d): the Gaussian
    forecast of each origin's K queries (a query is a step input followed by
    its lead, as `query_examples` lays them out; an origin without queries
    has zeros, so a lead of 0).

    `query_origins` (None: off): in inference, `batch` computes the queries
    of at most this many origins of a row, those with a query (a positive
    lead), when every row has no more (checked in the program: otherwise
    every origin, as in training). A held-out window's queries are only
    from the origins within the horizon of its tail, a quarter of its steps
    on a panel of short series, so validation then skips most of the
    query steps. The other origins' outputs are mean 0 and variance 1;
    they have no target."""

    network: SequenceNetwork  # its head is the identity: `head` reads the lead too
    head: LeadHead
    n_inputs: int = eqx.field(static=True)
    query_origins: int | None = eqx.field(static=True)

    def __init__(
        self,
        network: SequenceNetwork,
        d_model: int,
        n_outputs: int,
        n_inputs: int,
        *,
        query_origins: int | None = None,
        key: PRNGKeyArray,
    ):
        self.network = network
        self.head = LeadHead(d_model, n_outputs, key=key)
        self.n_inputs = n_inputs
        self.query_origins = query_origins

    def query(self, state: State, u_q: Float[Array, " D"], lead: Float[Array, ""], max_lead: Float[Array, ""] | float = jnp.inf):
        """The Gaussian forecast `(mean (d,), var (d,))` of one query from the
        state after its origin: the forecast step, then the head on the
        blocks' output and log(1 + lead); `max_lead`, the longest lead
        trained for (model units), as in `LeadHead`.

        `max_lead` is an argument, not a field: training draws every lead
        within the horizon (`draw_queries`), so the compiled training step
        never needs it and is shared by fits of any horizon."""
        _, h = self.network.step(state, u_q, lead)
        return self.head(h, lead, max_lead)

    def __call__(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"],
        queries: Float[Array, "L KQ"],
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> tuple[Float[Array, "L Kd"], Float[Array, "L Kd"]]:
        states = self.network.states(u, gaps, mask, key=key, inference=inference)
        L = u.shape[0]
        mean, var = jax.vmap(self._from_origin)(states, queries.reshape(L, -1, self.n_inputs + 1))
        return mean.reshape(L, -1), var.reshape(L, -1)

    def _from_origin(self, state, steps_k):
        """The forecasts (K, d) of one origin's K query steps from its state."""
        return jax.vmap(lambda s: self.query(state, s[:-1], s[-1]))(steps_k)

    def _some_origins(self, u, gaps, mask, queries, asked):
        """The call in inference, the queries computed at the first
        `query_origins` origins `asked` alone (an (L,) mask)."""
        L = u.shape[0]
        states = self.network.states(u, gaps, mask)
        at = jnp.nonzero(asked, size=self.query_origins, fill_value=L)[0]  # L: no origin, dropped below
        read = jnp.minimum(at, L - 1)
        steps = queries.reshape(L, -1, self.n_inputs + 1)[read]
        mean, var = jax.vmap(self._from_origin)(tuple(s[read] for s in states), steps)
        K, d = mean.shape[1:]
        mean = jnp.zeros((L, K, d), mean.dtype).at[at].set(mean, mode="drop")
        var = jnp.ones((L, K, d), var.dtype).at[at].set(var, mode="drop")
        return mean.reshape(L, -1), var.reshape(L, -1)

    def batch(self, u, gaps, mask, extra=None, *, keys=None, inference=True):
        """The call on B rows; in inference with `query_origins`, the queries
        of the origins that have some alone (see the class docstring)."""
        everything = super().batch
        if not inference or self.query_origins is None or self.query_origins >= u.shape[1]:
            return everything(u, gaps, mask, extra, keys=keys, inference=inference)
        B, L = u.shape[:2]
        asked = jnp.any(extra.reshape(B, L, -1, self.n_inputs + 1)[..., -1] > 0, axis=-1) & mask
        return jax.lax.cond(
            jnp.all(jnp.sum(asked, axis=1) <= self.query_origins),
            lambda: jax.vmap(self._some_origins)(u, gaps, mask, extra, asked),
            lambda: everything(u, gaps, mask, extra, keys=keys, inference=True),
        )


def _masked(per_element, targets, weights):
    valid = jnp.isfinite(targets) & (weights[..., None] > 0)
    w = jnp.where(valid, weights[..., None], 0.0).astype(per_element.dtype)
    return jnp.sum(jnp.where(valid, per_element, 0.0) * w), jnp.sum(w)


def query_nll(outputs, targets, weights):
    """Gaussian negative log-likelihood over the queries that have a target
    (NaN targets and padding excluded): `(weighted sum, sum of weights)`."""
    mean, var = outputs
    var = jnp.maximum(var, VARIANCE_FLOOR)
    clean = jnp.where(jnp.isfinite(targets), targets, 0.0)
    return _masked(0.5 * (jnp.log(2 * jnp.pi * var) + (clean - mean) ** 2 / var), targets, weights)


# --------------------------------------------------------------------------
# inference (jitted; inputs padded to bucket lengths so repeated calls share
# a few compiled shapes)


#: The fewest steps (`states_after_each_step`) and queries (`forecast`) an
#: inference call is padded to, as powers of two above: a panel's short
#: series and their held-out trials then share one compiled program each
#: (each new length compiled for 0.2-0.4 s of a cold fit: six query
#: programs and three state programs for issue 34's panel of 150 series
#: at 4 and 16 steps; docs/performance.md). Padding costs little: a query
#: is one step from one state.
MIN_PADDED = 64


@eqx.filter_jit
def _every_state(network, u, gaps, mask, state):
    return network.states(u, gaps, mask, state=state)


@eqx.filter_jit
def _query(model, states, u, gaps, max_lead):
    return jax.vmap(lambda s, u_q, g: model.query(s, u_q, g, max_lead))(states, u, gaps)


def _padded(u, gaps):
    length = bucket_length(len(gaps), min_length=MIN_PADDED)
    u_p, mask = pad_batch([u], length)
    g_p, _ = pad_batch([gaps], length)
    return u_p[0], g_p[0], mask[0]


def advance(network: SequenceNetwork, state: State, u, gaps) -> State:
    """The states after steps `(u, gaps)` from `state`."""
    return tuple(s[-1] for s in states_after_each_step(network, state, u, gaps))


def states_after_each_step(network: SequenceNetwork, state: State, u, gaps) -> tuple[Complex[np.ndarray, "L P"], ...]:
    """The states after every step from `state`, per block (L, P), on the
    host: a series' own length and origins then slice numpy arrays, where
    device arrays would compile a program per length (hundreds in a
    panel's fit)."""
    states = jax.device_get(_every_state(network, *_padded(u, gaps), state))
    return tuple(s[: len(gaps)] for s in states)


def forecast(
    model: MultiHorizonNetwork, states: tuple, u, gaps, max_lead: float = np.inf
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian forecast steps, one per query from its own state (per block
    (Q, P)): `(mean (Q, d), var (Q, d))`, in the network's (scaled) units;
    `max_lead` as in `MultiHorizonNetwork.query`."""
    Q = len(gaps)
    rows = bucket_length(Q, min_length=MIN_PADDED)
    pad = rows - Q
    u_p = np.concatenate([u, np.zeros((pad, u.shape[1]), u.dtype)])
    g_p = np.concatenate([gaps, np.zeros(pad, gaps.dtype)])
    s_p = tuple(np.concatenate([s, np.zeros((pad, s.shape[1]), s.dtype)]) for s in map(np.asarray, states))
    mean, var = _query(model, s_p, u_p, g_p, np.float32(max_lead))
    return np.asarray(mean, np.float64)[:Q], np.asarray(var, np.float64)[:Q]
