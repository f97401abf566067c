r"""The causal step model behind `S5Forecaster`, without sktime.

A series observed at times $t_0 < \dots < t_{n-1}$ (standardised values
$z_k$) becomes one step per observation. Step $k$ covers the interval
$(t_{k-1}, t_k]$: its gap is $g_k = (t_k - t_{k-1})/s$ ($s$ the time scale
learnt in fit; $g_0$ = `first_gap`) and its input is what was known during
that interval,

$$u_k = [\,z_{k-1},\ 1,\ x_k,\ \log(1 + g_k)\,]$$

(the previous observation, held constant since $t_{k-1}$ as in the ZOH
discretisation; a flag that it exists, 0 at $k=0$ where $z_{-1} = 0$;
exogenous features at $t_k$; the lead time). The step's Gaussian output is
the forecast of $z_k$, trained by maximum likelihood. So the network state
after step $k$ summarises $z_{<k}$, and a forecast for any time $T > t_k$
is one more step from that state with $u = [z_k, 1, x_T, \log(1 + g)]$ and
$g = (T - t_k)/s$: the SSM integrates exactly over the requested lead,
whatever the spacing. Observations after the cutoff advance the stored
state with the same steps (`advance`), never recomputing the history.

Everything here sees one series; series of a panel share the network.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Complex, Float

from ..data import bucket_length, pad_batch

State = tuple  # one complex (P,) array per S5 block


def step_inputs(
    times: Float[np.ndarray, " L"],
    z: Float[np.ndarray, "L d"],
    x: Float[np.ndarray, "L e"] | None,
    *,
    scale: float,
    first_gap: float,
    last_z: Float[np.ndarray, " d"] | None = None,
    last_time: float | None = None,
) -> tuple[Float[np.ndarray, "L n_in"], Float[np.ndarray, " L"]]:
    """Inputs and gaps of the steps for observations `z` at `times`, after a
    series' `last_z` / `last_time` (None: the series starts here).

    **Returns:** `(u (L, 2 + d + e) float32, gaps (L,) float32)`.
    """
    L, d = z.shape
    previous = np.zeros((L, d))
    present = np.ones((L, 1))
    previous[1:] = z[:-1]
    if last_z is None:
        present[0] = 0.0
    else:
        previous[0] = last_z
    return _assemble(previous, present, x, _gaps(times, last_time, scale, first_gap))


def query_inputs(
    times: Float[np.ndarray, " Q"],
    x: Float[np.ndarray, "Q e"] | None,
    last_z: Float[np.ndarray, "Q d"],
    last_time: Float[np.ndarray, " Q"],
    *,
    scale: float,
    first_gap: float,
) -> tuple[Float[np.ndarray, "Q n_in"], Float[np.ndarray, " Q"]]:
    """Inputs and gaps of one forecast step per requested time, each after
    its own last observation `last_z` at `last_time` (NaN: the series has
    no observation before that time; then `last_z` is ignored).

    **Returns:** `(u (Q, 2 + d + e) float32, gaps (Q,) float32)`.
    """
    last_time = np.asarray(last_time, np.float64)
    none = np.isnan(last_time)
    gaps = np.where(none, first_gap, (np.asarray(times, np.float64) - np.where(none, 0.0, last_time)) / scale)
    previous = np.where(none[:, None], 0.0, last_z)
    return _assemble(previous, (~none).astype(np.float64)[:, None], x, gaps)


def _gaps(times, last_time, scale, first_gap):
    times = np.asarray(times, np.float64)
    gaps = np.empty_like(times)
    gaps[0] = first_gap if last_time is None else (times[0] - last_time) / scale
    gaps[1:] = np.diff(times) / scale
    return gaps


def _assemble(previous, present, x, gaps):
    parts = [previous, present] + ([] if x is None else [x]) + [np.log1p(gaps)[:, None]]
    return np.concatenate(parts, axis=1).astype(np.float32), gaps.astype(np.float32)


def n_step_inputs(n_outputs: int, n_exog: int) -> int:
    return n_outputs + 1 + n_exog + 1


# --------------------------------------------------------------------------
# network evaluation (jitted; inputs padded to bucket lengths so a panel's
# series and repeated calls share a few compiled shapes)


@eqx.filter_jit
def _run_final(network, u, gaps, mask, state):
    _, last = network.run(u, gaps, mask, None, state)
    return last


@eqx.filter_jit
def _scan_states(network, u, gaps, state):
    def body(carry, inputs):
        new_state, _ = network.step(carry, *inputs)
        return new_state, new_state

    _, states = jax.lax.scan(body, state, (u, gaps))
    return states


@eqx.filter_jit
def _query(network, states, u, gaps):
    def one(state, u_q, g_q):
        _, (mean, var) = network.step(state, u_q, g_q)
        return mean, var

    return jax.vmap(one)(states, u, gaps)


def _padded(u, gaps):
    length = bucket_length(len(gaps))
    u_p, mask = pad_batch([u], length)
    g_p, _ = pad_batch([gaps], length)
    return u_p[0], g_p[0], mask[0]


def advance(network, state: State, u: Float[np.ndarray, "L n_in"], gaps: Float[np.ndarray, " L"]) -> State:
    """The state after steps `(u, gaps)` from `state` (sequence mode)."""
    u_p, g_p, mask = _padded(u, gaps)
    return _run_final(network, u_p, g_p, mask, state)


def states_after_each_step(
    network, state: State, u: Float[np.ndarray, "L n_in"], gaps: Float[np.ndarray, " L"]
) -> tuple[Complex[Array, "L P"], ...]:
    """The states after every step (step mode, for in-sample forecasts)."""
    u_p, g_p, _ = _padded(u, gaps)
    states = _scan_states(network, u_p, g_p, state)
    return tuple(s[: len(gaps)] for s in states)


def forecast(
    network, states: tuple, u: Float[np.ndarray, "Q n_in"], gaps: Float[np.ndarray, " Q"]
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian forecasts (standardised): one step per query from its own
    state. `states`: per block, (Q, P). **Returns:** `(mean (Q, d), var (Q, d))`."""
    Q = len(gaps)
    rows = bucket_length(Q, min_length=4)
    pad = rows - Q
    u_p = np.concatenate([u, np.zeros((pad, u.shape[1]), u.dtype)])
    g_p = np.concatenate([gaps, np.zeros(pad, gaps.dtype)])
    s_p = tuple(jnp.concatenate([s, jnp.zeros((pad, s.shape[1]), s.dtype)]) for s in states)
    mean, var = _query(network, s_p, u_p, g_p)
    return np.asarray(mean[:Q], np.float64), np.asarray(var[:Q], np.float64)
