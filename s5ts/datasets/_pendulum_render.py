r"""Rendering of pendulum angles as noisy 24×24 "line" images.

A frame is a white rod of width 8 drawn from the centre of a black 128×128
float canvas, downsampled with Lanczos to 24×24. The observations are then
corrupted per sequence by a time-correlated noise factor $f_k \in [0, 1]$:
pixel $= f_k \cdot \text{clean} + (1 - f_k)\cdot U(0, 255)$, so a frame is
anything from pure noise ($f = 0$) to clean ($f = 1$).

Both steps store uint8 by truncation, as the reference generator does; the
Lanczos output can differ in the last bit between Pillow versions, which is
why the published checksums name the version.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float, UInt8
from PIL import Image, ImageDraw

IMAGE_SIZE = 24
CANVAS_SIZE = 128
CENTRE = 64.0
ROD_LENGTH = 55.0
LINE_WIDTH = 8

NOISE_STEP = 0.2  # r: half-width of the random-walk increments
T1_RANGE = (0.0, 0.25)  # (t_ll, t_lu)
T2_RANGE = (0.75, 1.0)  # (t_ul, t_uu)
N_CLEAN = 5


def render_frame(phi: float) -> UInt8[np.ndarray, "24 24"]:
    r"""One clean frame for the angle $\varphi$ (0 hangs down).

    The rod goes from (64, 64) to $(64 + 55\sin\varphi, 64 + 55\cos\varphi)$
    in (column, row) coordinates on a 128×128 Pillow "F" image, is resized to
    24×24 with Lanczos, clipped to [0, 1] and stored as ⌊255·value⌋.
    """
    canvas = Image.new("F", (CANVAS_SIZE, CANVAS_SIZE), 0.0)
    end = (CENTRE + ROD_LENGTH * np.sin(phi), CENTRE + ROD_LENGTH * np.cos(phi))
    ImageDraw.Draw(canvas).line(
        [(CENTRE, CENTRE), end], fill=1.0, width=LINE_WIDTH
    )
    small = canvas.resize((IMAGE_SIZE, IMAGE_SIZE), resample=Image.Resampling.LANCZOS)
    # float32 arithmetic, then a truncating cast: the reference's rounding.
    return (255.0 * np.clip(np.asarray(small), 0.0, 1.0)).astype(np.uint8)


def render_sequence(phi: Float[np.ndarray, " L"]) -> UInt8[np.ndarray, "L 24 24"]:
    """Clean frames for a sequence of (noisy) angles."""
    return np.stack([render_frame(float(p)) for p in phi])


def noise_factors(
    f0: Float[np.ndarray, " N"],
    steps: Float[np.ndarray, "F N"],
    t1: Float[np.ndarray, " N"],
    t2: Float[np.ndarray, " N"],
    n_clean: int = N_CLEAN,
) -> Float[np.ndarray, "N F+1"]:
    r"""The per-frame image-noise factors in [0, 1] of N sequences: a clipped
    random walk $f_{k+1} = \mathrm{clip}(f_k + s_k, 0, 1)$ from `f0` ~ U(0, 1)
    with increments `steps` ~ U(−r, r), rescaled by
    $\mathrm{clip}((f - t_1)/(t_2 - t_1), 0, 1)$ between the thresholds `t1`,
    `t2` so that it saturates at 0 (pure noise) and 1 (clean), and forced to 1
    on the first `n_clean` frames."""
    f = np.empty((f0.shape[0], steps.shape[0] + 1))
    f[:, 0] = f0
    for k in range(steps.shape[0]):
        f[:, k + 1] = np.clip(f[:, k] + steps[k], 0.0, 1.0)
    f = np.clip((f - t1[:, None]) / (t2[:, None] - t1[:, None]), 0.0, 1.0)
    f[:, :n_clean] = 1.0
    return f


def add_image_noise(
    clean: UInt8[np.ndarray, "L H W"],
    factors: Float[np.ndarray, " L"],
    noise: Float[np.ndarray, "L H W"],
) -> UInt8[np.ndarray, "L H W"]:
    r"""⌊f·clean + (1 − f)·noise⌋ frame by frame (noise drawn from U(0, 255))."""
    f = factors[:, None, None]
    return (f * clean + (1 - f) * noise).astype(np.uint8)
