"""Per-step encoders: map one time step's features to a vector.

An encoder sees one step (`jax.vmap` over time is the network's job) and has
static `in_features` / `out_features`. An encoder may also have a `batch`
method, (N, in_features) → (N, out_features), equal to `jax.vmap` of its
call: the network then hands it every step of a batch at once.
`make_encoder` maps the string names used at the estimator surface to these
modules.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray


class IdentityEncoder(eqx.Module):
    """Passes the `in_features` features of a step through unchanged: for
    tabular series, the network's own input projection does the rest."""

    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)

    def __init__(self, in_features: int):
        if in_features < 1:
            raise ValueError(f"in_features must be >= 1, got {in_features}")
        self.in_features = in_features
        self.out_features = in_features

    def __call__(self, x: Float[Array, " d"]) -> Float[Array, " d"]:
        return x


#: How many independent pieces `PendulumCNN.batch` splits its frames into.
BATCH_PIECES = 8


class PendulumCNN(eqx.Module):
    """The per-frame image encoder of CRU's pendulum experiment (also used by S5 there).

    Conv(1→12, 5×5, pad 2) → ReLU → MaxPool 2 → Conv(12→12, 3×3, stride 2,
    pad 1) → ReLU → MaxPool 2 → flatten (12·3·3 = 108 for 24×24 frames) →
    Linear(108→30) → ReLU; 4 890 parameters with 30 outputs. Frames are
    24×24, given flattened row-major (576 values in [0, 1]).

    **Arguments:**

    - `out_features`: output size (30 in the paper).
    - `key`: a `jax.random.PRNGKey` for the initialisation.
    - `dtype`: of the parameters (None: JAX's default float).

    ```python
    >>> import jax, jax.numpy as jnp
    >>> cnn = PendulumCNN(key=jax.random.key(0))
    >>> cnn(jnp.zeros(576)).shape
    (30,)

    ```
    """

    conv1: eqx.nn.Conv2d
    conv2: eqx.nn.Conv2d
    linear: eqx.nn.Linear
    image_shape: tuple[int, int] = eqx.field(static=True)
    in_features: int = eqx.field(static=True)
    out_features: int = eqx.field(static=True)

    def __init__(self, *, out_features: int = 30, key: PRNGKeyArray, dtype=None):
        k1, k2, k3 = jax.random.split(key, 3)
        channels = 12
        self.conv1 = eqx.nn.Conv2d(1, channels, kernel_size=5, padding=2, key=k1, dtype=dtype)
        self.conv2 = eqx.nn.Conv2d(channels, channels, kernel_size=3, stride=2, padding=1, key=k2, dtype=dtype)
        # 24 → 24 (conv1) → 12 (pool) → 6 (conv2, stride 2) → 3 (pool).
        self.linear = eqx.nn.Linear(channels * 3 * 3, out_features, key=k3, dtype=dtype)
        self.image_shape = (24, 24)
        self.in_features = 24 * 24
        self.out_features = out_features

    def __call__(self, x: Float[Array, " pixels"]) -> Float[Array, " out"]:
        """**Arguments:** `x`, one 24×24 frame flattened row-major, shape (576,),
        values in [0, 1]. **Returns:** the features, shape (out_features,)."""
        # Convolutions as matrix products (channels last), same parameters:
        # on CPU these beat XLA's convolution for such tiny kernels
        # (docs/performance.md, "Pendulum training"). The first layer, on
        # the whole frame, multiplies rows of the image by a banded matrix;
        # the second, on 12×12, multiplies patch matrices.
        h = x.reshape(*self.image_shape, 1)
        h = _max_pool2(jax.nn.relu(_conv_rows(self.conv1, h)))
        h = _max_pool2(jax.nn.relu(_conv(self.conv2, h, stride=2)))
        # Flatten in (channel, row, column) order, as the NCHW original does.
        return jax.nn.relu(self.linear(h.transpose(2, 0, 1).reshape(-1)))

    def batch(self, x: Float[Array, "N pixels"]) -> Float[Array, "N out"]:
        """The call on N frames, shape (N, 576) → (N, out_features): equal to
        `jax.vmap(cnn)(x)`, computed as up to `BATCH_PIECES` independent
        pieces of consecutive frames. XLA runs independent pieces on
        different cores, and each piece's intermediates (the first layer's
        are 24·288 floats a frame) stay in cache: forward+backward on the
        pendulum batch's 1,600 frames took 0.75× the time of one vmap on two
        cores and 0.86× on one (docs/performance.md, "Pendulum training")."""
        pieces = min(BATCH_PIECES, x.shape[0])
        if pieces <= 1:
            return jax.vmap(self)(x)
        return jnp.concatenate([jax.vmap(self)(piece) for piece in jnp.array_split(x, pieces)])


def _patches(h: Float[Array, "H W C"], size: int, stride: int, pad: int) -> Float[Array, "Ho Wo K"]:
    """Every size×size window (zero padded), flattened in (row, column, channel) order."""
    rows, cols, _ = h.shape
    h = jnp.pad(h, ((pad, pad), (pad, pad), (0, 0)))
    out_rows = (rows + 2 * pad - size) // stride + 1
    out_cols = (cols + 2 * pad - size) // stride + 1
    windows = [
        h[i : i + stride * out_rows : stride, j : j + stride * out_cols : stride]
        for i in range(size)
        for j in range(size)
    ]
    return jnp.concatenate(windows, axis=-1)


def _conv(conv: eqx.nn.Conv2d, h: Float[Array, "H W C"], stride: int) -> Float[Array, "Ho Wo O"]:
    """`conv` (square kernel, "same"-style padding) applied channels-last."""
    out_channels, in_channels, size, _ = conv.weight.shape
    weight = conv.weight.transpose(2, 3, 1, 0).reshape(size * size * in_channels, out_channels)
    return _patches(h, size, stride, conv.padding[0][0]) @ weight + conv.bias.reshape(1, 1, -1)


@functools.cache
def _shifts(size: int, padded: int, out: int) -> np.ndarray:
    """shifts[j, p, c] = 1 where padded column p is column c's j-th tap (p = c + j)."""
    return np.stack([np.eye(padded, out, -j, dtype=np.float32) for j in range(size)])


def _conv_rows(conv: eqx.nn.Conv2d, h: Float[Array, "H W C"]) -> Float[Array, "Ho Wo O"]:
    """`conv` (stride 1, square kernel) applied channels-last as one product:
    each output row is the `size` padded input rows it reads, side by side,
    times a banded (Toeplitz) matrix built from the weight.

    The same sums as `_conv`, in a product of far better shape: for the
    pendulum's first layer (24×24 frames, one channel, 5×5, 12 outputs) an
    (Ho, 5·28) by (5·28, 24·12) product against `_conv`'s (Ho·Wo, 25) by
    (25, 12), with a quarter of its patch matrix. Forward+backward on 1,600
    frames took half of `_conv`'s time on one CPU core."""
    if tuple(conv.stride) != (1, 1) or tuple(conv.dilation) != (1, 1) or conv.groups != 1:
        raise ValueError(f"_conv_rows needs stride 1, no dilation and one group; got {conv}")
    out_channels, in_channels, size, _ = conv.weight.shape
    pad = conv.padding[0][0]
    rows, cols, _ = h.shape
    h = jnp.pad(h, ((pad, pad), (pad, pad), (0, 0)))
    out_rows, padded_cols = rows + 2 * pad - size + 1, cols + 2 * pad
    out_cols = padded_cols - size + 1
    # band[i, p, ci, c, o] = weight[o, ci, i, p - c] where 0 <= p - c < size.
    band = jnp.einsum("jpc,xyij->ipycx", _shifts(size, padded_cols, out_cols).astype(conv.weight.dtype), conv.weight)
    band = band.reshape(size * padded_cols * in_channels, out_cols * out_channels)
    windows = jnp.concatenate([h[i : i + out_rows].reshape(out_rows, -1) for i in range(size)], axis=-1)
    return (windows @ band).reshape(out_rows, out_cols, out_channels) + conv.bias.reshape(1, 1, -1)


def _max_pool2(h: Float[Array, "H W C"]) -> Float[Array, "H/2 W/2 C"]:
    """2×2 max pooling with stride 2 (even H and W)."""
    rows, cols, channels = h.shape
    return h.reshape(rows // 2, 2, cols // 2, 2, channels).max(axis=(1, 3))


ENCODERS = ("identity", "pendulum_cnn")


def make_encoder(name: str, in_features: int, *, key: PRNGKeyArray, dtype=None) -> IdentityEncoder | PendulumCNN:
    """The per-step encoder `name` of `in_features` features a step
    (`"pendulum_cnn"` needs 576: one 24×24 frame flattened row-major),
    parameters of `dtype` (None: JAX's default float)."""
    if name == "identity":
        return IdentityEncoder(in_features)
    if name == "pendulum_cnn":
        if in_features != 24 * 24:
            raise ValueError(
                "encoder 'pendulum_cnn' needs 576 features per step (one 24×24 frame "
                f"flattened row-major); got in_features={in_features}"
            )
        return PendulumCNN(key=key, dtype=dtype)
    raise ValueError(f"unknown encoder {name!r}; choose one of {ENCODERS}")
