r"""The S5 state-space layer on one irregularly sampled sequence.

For observation gaps $g_k$ and per-state timescales $\Delta_p$,

$$\bar\Lambda_k = e^{\Lambda \Delta g_k},\quad
x_k = \bar\Lambda_k \odot x_{k-1} + w_k \odot \tilde B u_k,\quad
y_k = 2\,\mathrm{Re}(\tilde C x_k) + D \odot u_k,$$

with $\Lambda$ diagonal complex (P conjugate-symmetric states), so a varying
step costs elementwise work per step inside one linear scan (on CPU the
discretisation is fused into the sequential scan: `irregular_scan`).
With `selective`, each observation's step is selected from its input
(`s5ts.nn._selection`) and still spans the real gap.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Complex, Float, PRNGKeyArray

from ._discretisation import Discretisation, GapHold, InputHold, make_discretisation, make_input_hold
from ._init import initial_eigenvalues
from ._irregular_scan import irregular_scan
from ._model import AbstractSSM
from ._scan import SCAN_METHODS, linear_scan, resolve_scan_method
from ._selection import Selection, make_selection


def _complex_product(left, right, dtype) -> tuple[Array, Array]:
    """(Re, Im) of `left @ right` in `dtype` at full precision: one operand
    a complex numpy constant (V, Vᴴ), the other a real JAX array."""

    def matmul(a, b):
        return jnp.matmul(jnp.asarray(a, dtype), jnp.asarray(b, dtype), precision=jax.lax.Precision.HIGHEST)

    if np.iscomplexobj(left):
        return matmul(left.real, right), matmul(left.imag, right)
    return matmul(left, right.real), matmul(left, right.imag)


def default_float(dtype=None):
    """`dtype`, or JAX's default float when None (float64 under
    `jax_enable_x64`, else float32), as `eqx.nn.Linear` chooses."""
    return jax.dtypes.canonicalize_dtype(jnp.float64 if dtype is None else dtype)


def _complex_matmul(real: Array, imag: Array, x: Array) -> Array:
    """(real + i·imag) @ x for real x, as two real matmuls."""
    return jax.lax.complex(real @ x, imag @ x)


def _project_out(c_re: Array, c_im: Array, x: Complex[Array, "L P"]) -> Float[Array, "L H"]:
    """2·Re(C̃ x_k) for every k, without forming complex products."""
    return 2.0 * (jnp.real(x) @ c_re.T - jnp.imag(x) @ c_im.T)


def backward_gaps(
    gaps: Float[Array, " L"], mask: Bool[Array, " L"], reset: Bool[Array, " L"] | None = None
) -> Float[Array, " L"]:
    """Gap to the *next* observation, for the reverse-time recurrence.

    The last real step has no successor; it takes the same convention as the
    forward pass's first step (``gaps[0]``). Padded steps get 0. With
    `reset` (segments of several series in one row, each starting at a
    reset), the last real step of each segment takes its own segment's
    first gap instead, as a run of that segment alone would.
    """
    following = jnp.concatenate([gaps[1:], jnp.zeros_like(gaps[:1])])
    index = jnp.arange(gaps.shape[0])
    last_real = jnp.max(jnp.where(mask, index, -1))
    if reset is None:
        return jnp.where(index == last_real, gaps[0], jnp.where(mask, following, 0.0))
    start = jax.lax.cummax(jnp.where(reset, index, 0))  # the first step of each step's segment
    ends = (index == last_real) | jnp.concatenate([reset[1:], jnp.zeros_like(reset[:1])])
    return jnp.where(mask, jnp.where(ends, gaps[start], following), 0.0)


def reverse_resets(reset: Bool[Array, " L"]) -> Bool[Array, " L"]:
    """The reverse pass's resets for forward `reset`: a segment that starts
    at step k ends at k − 1, where the reverse run must start afresh."""
    return jnp.concatenate([reset[1:], jnp.zeros_like(reset[:1])])


class S5SSM(AbstractSSM):
    r"""One S5 SSM (a multi-input multi-output diagonal linear state space),
    applied to one sequence with per-step time gaps.

    **Arguments:**

    - `d_model`: H, input and output features.
    - `state_size`: P, complex states after conjugate symmetry.
    - `blocks`: J copies of the initial Λ (HiPPO-N's, or S4D's of 2P/J
      states) on the block diagonal (2P/J must be even).
    - `discretization`: `"zoh"` or `"bilinear"`.
    - `bidirectional`: add a reverse-time pass with its own C̃ (no step mode).
    - `scan`: `"auto"`, `"associative"` or `"sequential"` (see `linear_scan`).
    - `dt_min`, `dt_max`: range of the initial timescales Δ (log-uniform).
    - `input_hold`: `"gap"` (the S5 paper): the input is held over the whole
      gap before its observation, so its weight w_k grows with g_k (ZOH:
      $w_k = (e^{\Lambda\Delta g_k} - 1)/\Lambda$). `"unit"`: every
      observation enters with the weight of a unit gap,
      $w = (e^{\Lambda\Delta} - 1)/\Lambda$, whatever its gap; the state still
      decays over the real gap ($\bar\Lambda_k = e^{\Lambda\Delta g_k}$). The
      two agree when every gap is 1 (`time_handling="drop"`).
    - `init`: the initial Λ (`s5ts.nn.INITS`): `"hippo"` (HiPPO-N, the S5
      paper; B̃ = VᴴB, C̃ = CV in its eigenbasis V), or S4D's closed forms
      with B̃ and C̃ drawn directly: `"s4d_lin"` λₙ = −½ − iπn,
      `"s4d_inv"` λₙ = −½ − i(N/π)(N/(2n+1) − 1), `"s4d_real"` λₙ = −(n+1)
      (n = 0 … N/2 − 1 in each block of N = 2P/J states).
    - `selective`: None (S5), or selective steps on the real gaps
      (`s5ts.nn._selection`): each observation's step from its input,
      $\Delta^{\mathrm{sel}}_k = \mathrm{softplus}(W_\Delta u_k +
      \mathrm{softplus}^{-1}(\Delta))$ with $W_\Delta$ (P, H) starting at
      0 (so the layer starts as S5). `"scaled"`: Λ̄_k and w_k from the step
      $\Delta^{\mathrm{sel}}_k g_k$; `"split"`: Λ̄_k from S5's
      $\Delta g_k$, w_k from $\Delta^{\mathrm{sel}}_k$ (no gap). Needs
      `input_hold="gap"` (the selection sets the input's weight itself).
    - `key`: a JAX PRNG key.
    - `dtype`: the real dtype of every parameter (and so of the whole
      computation: Λ, the discretisation and the states are complex of the
      same precision); None, as in `eqx.nn.Linear`, is JAX's default float
      (float64 under `jax_enable_x64`, else float32).

    Parameters are stored as real arrays: Λ = −exp(`log_neg_real`) + i·`lambda_imag`
    (so Re Λ < 0 always), B̃ (P, H), C̃ (H, P) (and a second C̃ when
    bidirectional), D (H,), log Δ (P,), and W_Δ (P, H) when `selective`
    (`select_weight`, trained as an ordinary weight: with weight decay, it
    decays towards S5).

    **Call:** `y, x_last = ssm(u, gaps, mask=None, state=None, reset=None)`
    with `u` (L, H), `gaps` (L,) ≥ 0 (`gaps[0]` is the interval before the
    first step), `mask` (L,) bool (True = real step; False steps leave the
    state untouched), `state` (P,) complex to continue from, `reset` (L,)
    bool: True starts a new series at that step (the state before it is
    dropped; a bidirectional layer's reverse pass restarts at the step
    before it), so several series can share one row end to end and each
    gets the outputs of its own run. Returns `y` (L, H) and the state after
    the last real step (P,) complex.

    >>> import jax, jax.numpy as jnp
    >>> ssm = S5SSM(d_model=4, state_size=8, blocks=2, key=jax.random.key(0))
    >>> y, x_last = ssm(jnp.ones((10, 4)), jnp.ones(10))
    >>> y.shape, x_last.shape
    ((10, 4), (8,))
    """

    #: The fields that parameterise Λ, B̃ and Δ: trained with their own
    #: learning rate and no weight decay (`s5ts.training.parameter_labels`).
    ssm_parameters: ClassVar[tuple[str, ...]] = ("log_neg_real", "lambda_imag", "B_re", "B_im", "log_step")

    log_neg_real: Float[Array, " P"]
    lambda_imag: Float[Array, " P"]
    B_re: Float[Array, "P H"]
    B_im: Float[Array, "P H"]
    C_re: Float[Array, "H P"]
    C_im: Float[Array, "H P"]
    C_back_re: Float[Array, "H P"] | None
    C_back_im: Float[Array, "H P"] | None
    D: Float[Array, " H"]
    log_step: Float[Array, " P"]
    select_weight: Float[Array, "P H"] | None
    d_model: int = eqx.field(static=True)
    state_size: int = eqx.field(static=True)
    rule: Discretisation = eqx.field(static=True)
    bidirectional: bool = eqx.field(static=True)
    scan: str = eqx.field(static=True)
    hold: InputHold = eqx.field(static=True)
    selection: Selection = eqx.field(static=True)

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
        input_hold: str = "gap",
        init: str = "hippo",
        selective: str | None = None,
        *,
        key: PRNGKeyArray,
        dtype=None,
    ):
        # mapped once
        rule, hold, selection = make_discretisation(discretization), make_input_hold(input_hold), make_selection(selective)
        if selection.selects and not isinstance(hold, GapHold):
            raise ValueError(
                f"selective={selective!r} sets each input's weight itself: it needs input_hold='gap', got {input_hold!r}"
            )
        if scan not in SCAN_METHODS:
            raise ValueError(f"scan must be one of {SCAN_METHODS}, got {scan!r}")
        if not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")
        lam, vectors = initial_eigenvalues(init, state_size, blocks)
        k_b, k_c, k_cb, k_d, k_dt = jax.random.split(key, 5)
        full = 2 * state_size
        dtype = default_float(dtype)
        # B̃ = V⁻¹B, C̃ = CV with real B, C (V has orthonormal columns: V⁻¹ = Vᴴ),
        # in JAX, so a network builds inside one compiled program
        # (`s5ts.training.initial_state`).
        b = jax.random.normal(k_b, (full, d_model)) / np.sqrt(d_model)
        self.B_re, self.B_im = _complex_product(vectors.conj().T, b, dtype)

        def c_tilde(k):
            c = jax.random.normal(k, (d_model, full)) / np.sqrt(full)
            return _complex_product(c, vectors, dtype)

        self.log_neg_real = jnp.asarray(np.log(-lam.real), dtype)
        self.lambda_imag = jnp.asarray(lam.imag, dtype)
        self.C_re, self.C_im = c_tilde(k_c)
        if bidirectional:
            self.C_back_re, self.C_back_im = c_tilde(k_cb)
        else:
            self.C_back_re = self.C_back_im = None
        self.D = jax.random.normal(k_d, (d_model,), dtype)
        self.log_step = jax.random.uniform(
            k_dt, (state_size,), dtype, minval=np.log(dt_min), maxval=np.log(dt_max)
        )
        # W_Δ = 0: the selective layer starts as S5 (and the random draws
        # above are S5's, whatever `selective`).
        self.select_weight = jnp.zeros((state_size, d_model), dtype) if selection.selects else None
        self.d_model = d_model
        self.state_size = state_size
        self.rule = rule
        self.bidirectional = bidirectional
        self.scan = scan
        self.hold = hold
        self.selection = selection

    @property
    def discretization(self) -> str:
        """The discretisation's name (`"zoh"`, `"bilinear"`)."""
        return self.rule.name

    @property
    def input_hold(self) -> str:
        """The input hold's name (`"gap"`, `"unit"`, `"mixed"`)."""
        return self.hold.name

    @property
    def selective(self) -> str | None:
        """The selection's name (None, `"scaled"`, `"split"`)."""
        return self.selection.name

    @property
    def lam(self) -> Complex[Array, " P"]:
        """Λ, the diagonal continuous-time state matrix (Re Λ < 0)."""
        return jax.lax.complex(-jnp.exp(self.log_neg_real), self.lambda_imag)

    def discretise(
        self, gaps: Float[Array, "*L"], u: Float[Array, "*L H"] | None = None
    ) -> tuple[Complex[Array, "*L P"], Complex[Array, "*L P"]]:
        """Λ̄ and the input weight for gaps of shape (L,) or () (and, for a
        `selective` layer, the inputs `u` at those steps, (L, H) or (H,))."""
        return self._coefficients(gaps, self._selected(u))

    def _selected(self, u: Float[Array, "*L H"] | None) -> Float[Array, "*L P"] | None:
        """The selected steps of inputs `u` (None without selection)."""
        if self.selection.selects and u is None:
            raise ValueError(f"a selective={self.selective!r} layer's steps depend on its inputs: pass u")
        return self.selection.selected(self.select_weight, jnp.exp(self.log_step), u)

    def _coefficients(self, gaps, selected):
        lam, timescale = self.lam, jnp.exp(self.log_step)
        lam_bar, weight = self.selection.coefficients(self.rule, lam, timescale, gaps, selected)
        return lam_bar, self.hold.weight(weight, self.hold.unit_weight(self.rule, lam, timescale))

    def _input(self, u: Float[Array, "*L H"]) -> Complex[Array, "*L P"]:
        return _complex_matmul(self.B_re, self.B_im, u.T).T

    def init_state(self) -> Complex[Array, " P"]:
        """The zero state that starts a new series."""
        return jnp.zeros(self.state_size, dtype=self.lam.dtype)

    def __call__(
        self,
        u: Float[Array, "L H"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        state: Complex[Array, " P"] | None = None,
        reset: Bool[Array, " L"] | None = None,
    ) -> tuple[Float[Array, "L H"], Complex[Array, " P"]]:
        self._check_shapes(u, gaps)
        y, states = self.with_states(u, gaps, mask, state, reset)
        return y, states[-1]

    def _check_shapes(self, u, gaps) -> None:
        if u.ndim != 2 or u.shape[1] != self.d_model:
            raise ValueError(f"u must have shape (L, {self.d_model}), got {u.shape}")
        if gaps.shape != u.shape[:1]:
            raise ValueError(f"gaps must have shape ({u.shape[0]},), got {gaps.shape}")

    def with_states(
        self,
        u: Float[Array, "L H"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        state: Complex[Array, " P"] | None = None,
        reset: Bool[Array, " L"] | None = None,
    ) -> tuple[Float[Array, "L H"], Complex[Array, "L P"]]:
        """Like the call, but with the (forward) state after every step
        (a padded step repeats the state before it)."""
        self._check_shapes(u, gaps)
        if reset is not None and reset.shape != gaps.shape:
            raise ValueError(f"reset must have shape ({u.shape[0]},), got {reset.shape}")
        if mask is None:
            mask = jnp.ones(u.shape[0], dtype=bool)
        if state is not None and self.bidirectional:
            raise ValueError("a bidirectional S5SSM sees the whole sequence: it cannot continue from a state")
        # Zero padded inputs *before* any arithmetic: a mask applied afterwards
        # still lets NaN into the gradients.
        u = jnp.where(mask[:, None], u, 0.0)
        gaps = jnp.where(mask, gaps, 0.0)
        bu = self._input(u)
        selected = self._selected(u)
        states = self._run(gaps, mask, bu, selected, state, reset, reverse=False)
        y = _project_out(self.C_re, self.C_im, states) + self.D[None, :] * u
        if self.bidirectional:
            back_reset = None if reset is None else reverse_resets(reset)
            back = self._run(backward_gaps(gaps, mask, reset), mask, bu, selected, None, back_reset, reverse=True)
            y = y + _project_out(self.C_back_re, self.C_back_im, back)
        return y, states

    def _run(self, gaps, mask, bu, selected, state, reset, *, reverse):
        if resolve_scan_method(self.scan) == "sequential":
            # Λ̄_k, w_k computed inside the loop (and again in its backward
            # loop): no (L, P) coefficient arrays to write, store and read.
            return irregular_scan(
                self.lam,
                jnp.exp(self.log_step),
                gaps,
                mask,
                bu,
                state,
                discretization=self.rule,
                reverse=reverse,
                input_hold=self.hold,
                selected=selected,
                selective=self.selection,
                reset=reset,
            )
        lam_bar, weight = self._coefficients(gaps, selected)
        lam_bar = jnp.where(mask[:, None], lam_bar, 1.0)
        if reset is not None:
            lam_bar = jnp.where(reset[:, None], 0.0, lam_bar)
        b = jnp.where(mask[:, None], weight * bu, 0.0)
        if state is not None:
            # Fold the carried state into the first element: x_0 = Λ̄_0 x_init + b_0.
            b = b.at[0].add(lam_bar[0] * state)
        return linear_scan(lam_bar, b, self.scan, reverse=reverse)

    def step(
        self, state: Complex[Array, " P"], u_k: Float[Array, " H"], gap_k: Float[Array, ""]
    ) -> tuple[Complex[Array, " P"], Float[Array, " H"]]:
        """Advance one observation: `(state, u_k, gap_k) -> (new_state, y_k)`.

        Equivalent to sequence mode step by step (same outputs to rounding).
        """
        if self.bidirectional:
            raise ValueError(
                "a bidirectional S5SSM has no step mode: its outputs depend on future observations"
            )
        lam_bar, weight = self.discretise(jnp.asarray(gap_k), u_k)
        new_state = lam_bar * state + weight * self._input(u_k)
        y = _project_out(self.C_re, self.C_im, new_state[None])[0] + self.D * u_k
        return new_state, y
