r"""DSS (Gupta, Gu and Berant 2022, "Diagonal State Spaces are as Effective
as Structured State Spaces") as Equinox modules on one sequence: the layer
`DSS`, a residual `DSSBlock` and a `DSSNetwork` shaped like s5ts's
`SequenceNetwork`.

Unlike S5 (one multi-input multi-output system over all H features), DSS
runs H independent single-input single-output systems, one per channel,
each with its own N complex eigenvalues, timescale and output weights. Its
two kernels are small final classes (`DSSExp`, `DSSSoftmax`), mapped once
from their names (`"exp"`, `"softmax"`); the maths is in `_dss_math`.

On a regular grid (no gaps given) the layer convolves with its kernel (FFT).
With per-step gaps it runs the DSS-EXP recurrence. DSS-softmax has no
recurrence: its kernel is normalised over the whole length L of a regular
grid, and no per-step update reproduces that normalisation on an irregular
one, so a softmax layer asked to run on gaps raises a ValueError.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Complex, Float, Int, PRNGKeyArray

from ..nn import INITS, POOLS, SCAN_METHODS, AbstractSequenceModel, AbstractSSM, initial_eigenvalues, make_activation
from ._dss_math import causal_convolution, exp_kernel, recurrence, softmax_kernel


class DSSKernel(eqx.Module):
    """How a `DSS` layer parameterises λ and computes its kernel."""

    #: Its name at the user's surface (`kernel=`).
    name: ClassVar[str]
    #: Whether the layer can also run as a recurrence on per-step gaps.
    has_recurrence: ClassVar[bool]

    @abc.abstractmethod
    def eigenvalues(self, lambda_re: Float[Array, "H N"], lambda_im: Float[Array, "H N"]) -> Complex[Array, "H N"]:
        """λ from the stored parameters."""

    @abc.abstractmethod
    def real_parameter(self, real_part: np.ndarray) -> np.ndarray:
        """The stored `lambda_re` for an initial Re λ (< 0)."""

    @abc.abstractmethod
    def kernel(
        self,
        lam: Complex[Array, "H N"],
        w: Complex[Array, "H N"],
        step: Float[Array, " H"],
        length: int,
        valid_length: Int[Array, ""] | None = None,
    ) -> Float[Array, "H L"]:
        """The convolution kernel on a regular grid of `length` steps, for a
        series of its first `valid_length` (default: all)."""


class DSSExp(DSSKernel):
    r"""DSS-EXP: $\lambda = -e^{\rho} + i\,\omega$ (Re λ < 0 always), kernel
    `_dss_math.exp_kernel` ($C\bar A^k\bar B$ under zero-order hold), and the
    recurrence on irregular grids."""

    name: ClassVar[str] = "exp"
    has_recurrence: ClassVar[bool] = True

    def eigenvalues(self, lambda_re, lambda_im):
        return jax.lax.complex(-jnp.exp(lambda_re), lambda_im)

    def real_parameter(self, real_part):
        return np.log(-real_part)

    def kernel(self, lam, w, step, length, valid_length=None):
        # A prefix of the kernel of any longer grid: the series' length does not enter.
        return exp_kernel(lam, w, step, length)


class DSSSoftmax(DSSKernel):
    r"""DSS-softmax: λ unconstrained ($\lambda = \rho + i\,\omega$, Re λ > 0
    allowed), kernel `_dss_math.softmax_kernel` with `eps` (default 10⁻⁷)
    bounding the normaliser's reciprocal. Regular grids only: the softmax
    normalises over all L steps of the grid, which no recurrence over
    per-step gaps reproduces."""

    name: ClassVar[str] = "softmax"
    has_recurrence: ClassVar[bool] = False
    eps: float = eqx.field(default=1e-7, static=True)

    def eigenvalues(self, lambda_re, lambda_im):
        return jax.lax.complex(lambda_re, lambda_im)

    def real_parameter(self, real_part):
        return real_part

    def kernel(self, lam, w, step, length, valid_length=None):
        return softmax_kernel(lam, w, step, length, self.eps, valid_length)


#: The kernels by name (`DSS`'s `kernel`).
DSS_KERNELS = {kind.name: kind for kind in (DSSExp, DSSSoftmax)}


def make_dss_kernel(name: str | DSSKernel) -> DSSKernel:
    """Map the user-facing name ("exp" | "softmax") to its kernel (a kernel is itself)."""
    if isinstance(name, DSSKernel):
        return name
    if name not in DSS_KERNELS:
        raise ValueError(f"kernel must be one of {tuple(DSS_KERNELS)}, got {name!r}")
    return DSS_KERNELS[name]()


class DSS(AbstractSSM):
    r"""A DSS layer: H channels, each a diagonal state space of N complex
    eigenvalues (`state_size`; conjugate pairs implicit), on one sequence.

    Channel h: $\dot x = \operatorname{diag}(\lambda_h) x + \mathbf 1 u_h$,
    $y_h = \operatorname{Re}(w_h \cdot x) + D_h u_h$, timescale $\Delta_h$.

    - **Regular grid** (`gaps` None): $y = K * u + D u$, the causal
      convolution (FFT) with the kernel of `kernel`:
      DSS-EXP $K_k = \operatorname{Re}\sum_n w_n \frac{e^{\Delta\lambda_n} - 1}{\lambda_n}
      e^{k\Delta\lambda_n}$ or DSS-softmax
      $K_k = \operatorname{Re}\sum_n w_n\lambda_n^{-1}\operatorname{softmax}_k(k\Delta\lambda_n)$.
      Every step is one unit of time.
    - **Irregular grid** (`gaps` given, DSS-EXP only): the recurrence
      $x_k = e^{\lambda\Delta g_k} x_{k-1} + \frac{e^{\lambda\Delta g_k} - 1}{\lambda} u_k$,
      $y_k = \operatorname{Re}(w\cdot x_k) + D u_k$, which on unit gaps
      equals the convolution. A DSS-softmax layer raises a ValueError here:
      its normalisation over the L steps of a regular grid has no per-step
      counterpart (use it with regular series, or `time_handling="drop"`).

    `mask` (L,) marks real steps. Masked steps have their input (and gap)
    replaced by 0 before anything sees them, so padding (NaN included)
    reaches neither outputs nor gradients of real steps. On the regular
    grid a masked step is still a step of the grid (time passes, no input),
    and the series ends at its last real step: DSS-softmax normalises over
    the steps up to there, not over the padded window. In the recurrence a
    masked step leaves the state unchanged (S5's padding). Right padding,
    of any length, changes no output of a real step either way.

    **Arguments:**

    - `d_model`: H, the channels (input = output features).
    - `state_size`: N complex eigenvalues per channel.
    - `kernel`: `"exp"` (DSS-EXP), `"softmax"` (DSS-softmax) or a `DSSKernel`.
    - `init`: the initial λ of every channel (`s5ts.nn.INITS`): `"hippo"`
      (−½ + i·the eigenvalues of HiPPO's skew part: DSS's own), `"s4d_lin"`,
      `"s4d_inv"`, `"s4d_real"`.
    - `dt_min`, `dt_max`: range of the initial timescales Δ_h (log-uniform).
    - `scan`: the recurrence's `s5ts.nn.linear_scan` method.
    - `key`, `dtype` (None: JAX's default float; λ and states are complex of
      the same precision).

    Parameters: `lambda_re` (DSS-EXP: log(−Re λ); DSS-softmax: Re λ),
    `lambda_im`, `W_re`, `W_im` (H, N), both drawn from a standard normal as
    DSS does, `D` (H,), `log_step` (H,). `ssm_parameters` (λ, Δ) get their own
    learning rate and no weight decay in s5ts's training.

    ```python
    >>> import jax, jax.numpy as jnp
    >>> layer = DSS(4, 8, key=jax.random.key(0))
    >>> u = jnp.ones((10, 4))
    >>> layer(u).shape, layer(u, jnp.full(10, 0.5)).shape   # regular, irregular
    ((10, 4), (10, 4))
    >>> layer.kernel(10).shape
    (4, 10)

    ```
    """

    ssm_parameters: ClassVar[tuple[str, ...]] = ("lambda_re", "lambda_im", "log_step")

    lambda_re: Float[Array, "H N"]
    lambda_im: Float[Array, "H N"]
    W_re: Float[Array, "H N"]
    W_im: Float[Array, "H N"]
    D: Float[Array, " H"]
    log_step: Float[Array, " H"]
    variant: DSSKernel = eqx.field(static=True)
    d_model: int = eqx.field(static=True)
    state_size: int = eqx.field(static=True)
    scan: str = eqx.field(static=True)

    def __init__(
        self,
        d_model: int,
        state_size: int,
        kernel: str | DSSKernel = "exp",
        init: str = "hippo",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        scan: str = "auto",
        *,
        key: PRNGKeyArray,
        dtype=None,
    ):
        variant = make_dss_kernel(kernel)
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        if scan not in SCAN_METHODS:
            raise ValueError(f"scan must be one of {SCAN_METHODS}, got {scan!r}")
        if not 0 < dt_min <= dt_max:
            raise ValueError(f"need 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")
        if d_model < 1 or state_size < 1:
            raise ValueError(f"d_model and state_size must be positive, got {d_model}, {state_size}")
        dtype = jax.dtypes.canonicalize_dtype(jnp.float64 if dtype is None else dtype)
        lam = initial_eigenvalues(init, state_size, 1)[0]  # N of them: one block of 2N real states
        k_w, k_d, k_dt = jax.random.split(key, 3)
        self.lambda_re = jnp.asarray(np.tile(variant.real_parameter(lam.real), (d_model, 1)), dtype)
        self.lambda_im = jnp.asarray(np.tile(lam.imag, (d_model, 1)), dtype)
        self.W_re, self.W_im = jax.random.normal(k_w, (2, d_model, state_size), dtype)
        self.D = jax.random.normal(k_d, (d_model,), dtype)
        self.log_step = jax.random.uniform(k_dt, (d_model,), dtype, minval=np.log(dt_min), maxval=np.log(dt_max))
        self.variant = variant
        self.d_model = d_model
        self.state_size = state_size
        self.scan = scan

    @property
    def lam(self) -> Complex[Array, "H N"]:
        """λ, each channel's eigenvalues."""
        return self.variant.eigenvalues(self.lambda_re, self.lambda_im)

    @property
    def w(self) -> Complex[Array, "H N"]:
        """The output weights w (C; B is 1)."""
        return jax.lax.complex(self.W_re, self.W_im)

    @property
    def step_size(self) -> Float[Array, " H"]:
        """Δ, each channel's timescale."""
        return jnp.exp(self.log_step)

    def kernel(self, length: int, valid_length: Int[Array, ""] | None = None) -> Float[Array, "H L"]:
        """The convolution kernel of a regular grid of `length` steps, (H, L),
        for a series of its first `valid_length` steps (default: all; only
        DSS-softmax's depends on it)."""
        return self.variant.kernel(self.lam, self.w, self.step_size, length, valid_length)

    def init_state(self) -> Complex[Array, "H N"]:
        """The zero state that starts a series (recurrence only)."""
        return jnp.zeros((self.d_model, self.state_size), self.lam.dtype)

    def _check(self, u, gaps, mask) -> Bool[Array, " L"]:
        if u.ndim != 2 or u.shape[1] != self.d_model:
            raise ValueError(f"u must have shape (L, {self.d_model}), got {u.shape}")
        for name, a in (("gaps", gaps), ("mask", mask)):
            if a is not None and a.shape != u.shape[:1]:
                raise ValueError(f"{name} must have shape ({u.shape[0]},), got {a.shape}")
        return jnp.ones(u.shape[0], bool) if mask is None else mask

    def __call__(
        self,
        u: Float[Array, "L H"],
        gaps: Float[Array, " L"] | None = None,
        mask: Bool[Array, " L"] | None = None,
    ) -> Float[Array, "L H"]:
        """`y` (L, H): the convolution on a regular grid (`gaps` None), else
        the recurrence over the gaps (`run`, from the zero state)."""
        checked = self._check(u, gaps, mask)
        if gaps is not None:
            return self.run(u, gaps, mask)[0]
        mask = checked
        u = jnp.where(mask[:, None], u, 0.0)
        # The series ends at its last real step: DSS-softmax normalises over
        # its steps, not over the padded window (at least one step).
        steps = jnp.max(jnp.where(mask, jnp.arange(1, u.shape[0] + 1), 1), initial=1)
        return causal_convolution(u, self.kernel(u.shape[0], steps)) + self.D[None, :] * u

    def run(
        self,
        u: Float[Array, "L H"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        state: Complex[Array, "H N"] | None = None,
        reset: Bool[Array, " L"] | None = None,
    ) -> tuple[Float[Array, "L H"], Complex[Array, "L H N"]]:
        """The recurrence over per-step `gaps` (L,) ≥ 0 (`gaps[0]`: the time
        before the first step), from `state` (H, N) (default zero), with
        `reset` (L,) zeroing the state before the steps it marks. Returns
        `(y (L, H), the state after every step (L, H, N))`; a masked step
        repeats the state before it, so a long series can be run in chunks,
        each from the last state of the one before (`_dss_math.recurrence`)."""
        if not self.variant.has_recurrence:
            raise ValueError(
                f"kernel={self.variant.name!r} has no recurrence: its softmax normalises over the L steps "
                "of a regular grid, which no per-step update over gaps reproduces. Call the layer without "
                "gaps (a regular grid), or use kernel='exp' for irregular series"
            )
        mask = self._check(u, gaps, mask)
        if reset is not None and reset.shape != u.shape[:1]:
            raise ValueError(f"reset must have shape ({u.shape[0]},), got {reset.shape}")
        y, states = recurrence(self.lam, self.w, self.step_size, u, gaps, mask, state, reset, self.scan)
        u = jnp.where(mask[:, None], u, 0.0)
        return y + self.D[None, :] * u, states


class DSSBlock(eqx.Module):
    """`x + Dropout(act(DSS(norm(x))))` (pre-norm) or
    `norm(x + Dropout(act(DSS(x))))` (post-norm), on one sequence: `S5Block`
    with a `DSS` layer.

    **Arguments:** `d_model`, `state_size`, `kernel`, `init`, `dt_min`,
    `dt_max`, `scan` (see `DSS`); `activation` ("gelu" | "glu" | "half_glu" |
    "half_glu2", `s5ts.nn.make_activation`); `dropout`; `prenorm`; `key`;
    `dtype`.

    **Call:** `block(x (L, H), gaps (L,) | None, mask (L,) | None, *,
    key=None, inference=True) -> (L, H)`; `gaps` None is a regular grid.
    """

    dss: DSS
    norm: eqx.nn.LayerNorm
    activation: eqx.Module
    dropout: eqx.nn.Dropout
    prenorm: bool = eqx.field(static=True)

    def __init__(
        self,
        d_model: int,
        state_size: int,
        kernel: str | DSSKernel = "exp",
        init: str = "hippo",
        dt_min: float = 0.001,
        dt_max: float = 0.1,
        scan: str = "auto",
        activation: str = "half_glu",
        dropout: float = 0.0,
        prenorm: bool = False,
        *,
        key: PRNGKeyArray,
        dtype=None,
    ):
        k_dss, k_act = jax.random.split(key)
        self.dss = DSS(d_model, state_size, kernel, init, dt_min, dt_max, scan, key=k_dss, dtype=dtype)
        self.norm = eqx.nn.LayerNorm(d_model, dtype=jax.dtypes.canonicalize_dtype(jnp.float64 if dtype is None else dtype))
        self.activation = make_activation(activation, d_model, key=k_act, dtype=dtype)
        self.dropout = eqx.nn.Dropout(dropout)
        self.prenorm = prenorm

    def __call__(
        self,
        x: Float[Array, "L H"],
        gaps: Float[Array, " L"] | None = None,
        mask: Bool[Array, " L"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ) -> Float[Array, "L H"]:
        skip = x
        if self.prenorm:
            x = jax.vmap(self.norm)(x)
        x = jax.vmap(self.activation)(self.dss(x, gaps, mask))
        x = skip + self.dropout(x, key=key, inference=inference or key is None)
        if not self.prenorm:
            x = jax.vmap(self.norm)(x)
        return x


class DSSNetwork(AbstractSequenceModel):
    """Encoder → Linear to `d_model` → `DSSBlock`s → head, on one sequence:
    `s5ts.nn.SequenceNetwork` with DSS blocks, driven by the same training
    loop (`AbstractSequenceModel`).

    **Arguments:**

    - `encoder`: a per-step module with `out_features` (`s5ts.nn.make_encoder`).
    - `blocks`: `DSSBlock`s of one `d_model`.
    - `head`: a per-vector module from `d_model` (`eqx.nn.Linear`,
      `s5ts.nn.GaussianHead`, …).
    - `regular`: True, every step one unit of a regular grid (the gaps are
      ignored: the blocks convolve); False, the blocks run the DSS-EXP
      recurrence over the gaps (a softmax block then raises a ValueError).
    - `n_extra`: features appended after the encoder (the real gap, for
      S5's "append" time handling).
    - `pooling`: `"none"` (an output per step) or one of `POOLS`: `"mean"`,
      `"max"`, `"last"`, `"max_mean"` (the head reads `pooled_width` features).
    - `key`, `dtype` (of the input projection).

    **Call:** `net(u (L, D), gaps (L,), mask (L,) | None, extra (L, n_extra)
    | None, *, key=None, inference=True)`, like `SequenceNetwork`;
    `net.batch(...)` runs B sequences (`jax.vmap`).
    """

    encoder: eqx.Module
    projection: eqx.nn.Linear
    blocks: tuple[DSSBlock, ...]
    head: eqx.Module
    regular: bool = eqx.field(static=True)
    n_extra: int = eqx.field(static=True)
    pooling: str = eqx.field(static=True)

    def __init__(
        self,
        encoder: eqx.Module,
        blocks: tuple[DSSBlock, ...] | list[DSSBlock],
        head: eqx.Module,
        *,
        regular: bool,
        n_extra: int = 0,
        pooling: str = "none",
        key: PRNGKeyArray,
        dtype=None,
    ):
        if pooling != "none" and pooling not in POOLS:
            raise ValueError(f"pooling must be one of {('none', *POOLS)}, got {pooling!r}")
        if not blocks:
            raise ValueError("a DSSNetwork needs at least one DSSBlock")
        if not regular:
            for block in blocks:
                if not block.dss.variant.has_recurrence:
                    raise ValueError(
                        f"kernel={block.dss.variant.name!r} runs on regular grids only: build the network "
                        "with regular=True (gaps ignored) or use kernel='exp'"
                    )
        self.encoder = encoder
        self.projection = eqx.nn.Linear(encoder.out_features + n_extra, blocks[0].dss.d_model, key=key, dtype=dtype)
        self.blocks = tuple(blocks)
        self.head = head
        self.regular = regular
        self.n_extra = n_extra
        self.pooling = pooling

    def __call__(
        self,
        u: Float[Array, "L D"],
        gaps: Float[Array, " L"],
        mask: Bool[Array, " L"] | None = None,
        extra: Float[Array, "L E"] | None = None,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = True,
    ):
        if mask is None:
            mask = jnp.ones(u.shape[0], bool)
        if self.n_extra and (extra is None or extra.shape != (u.shape[0], self.n_extra)):
            raise ValueError(f"this network needs extra features of shape ({u.shape[0]}, {self.n_extra})")
        # Padding may hold NaN: replaced before the encoder sees it.
        features = jax.vmap(self.encoder)(jnp.where(mask[:, None], u, 0.0))
        if self.n_extra:
            features = jnp.concatenate([features, jnp.where(mask[:, None], extra, 0.0)], axis=1)
        h = jax.vmap(self.projection)(features)
        keys = [None] * len(self.blocks) if key is None else list(jax.random.split(key, len(self.blocks)))
        for block, block_key in zip(self.blocks, keys):
            h = block(h, None if self.regular else gaps, mask, key=block_key, inference=inference)
        if self.pooling == "none":
            return jax.vmap(self.head)(h)
        return self.head(POOLS[self.pooling](h, mask))
