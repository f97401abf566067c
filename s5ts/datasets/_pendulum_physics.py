r"""Physics of the noisy pendulum (Becker et al. 2019, as reused by CRU and S5).

A rod of mass $m = 1$ and length $l = 1$ swings about one end, with inertia
$I = m l^2 / 3$ and friction; $\theta = 0$ points straight up:

$$\dot\omega = c \sin\theta - \mu\,\omega, \qquad \dot\theta = \omega, \qquad
c = g l m / I.$$

Each frame of 0.01 s is integrated with 100 semi-implicit Euler sub-steps of
$h = 10^{-4}$ s, after which Gaussian transition noise is added to $\omega$
and $\theta$ is wrapped to $[0, 2\pi)$.

Everything is float64 numpy, vectorised over sequences, and the floating-point
operations are written in exactly the order of the reference generator: the
published checksums depend on it.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float

N_FRAMES = 100
FRAME_DT = 0.01
SUB_STEP = 1e-4
N_SUB_STEPS = 100  # FRAME_DT / SUB_STEP, kept as an integer literal
GRAVITY = 9.81
MASS = 1.0
LENGTH = 1.0
INERTIA = MASS * LENGTH**2 / 3.0
# Evaluated as g·l·m/I (not 3g/l) to reproduce the reference's rounding.
C = GRAVITY * LENGTH * MASS / INERTIA
FRICTION = 0.1
TRANSITION_NOISE_STD = 0.1
OBSERVATION_NOISE_STD = 1e-5


def simulate(
    theta0: Float[np.ndarray, " N"],
    transition_noise: Float[np.ndarray, "F N"],
) -> tuple[Float[np.ndarray, "N F+1"], Float[np.ndarray, "N F+1"]]:
    r"""Integrate N pendulums from rest for F frame transitions.

    Per sub-step: $\omega \leftarrow \omega + h(c\sin\theta - \mu\omega)$, then
    $\theta \leftarrow \theta + h\omega$ (the new $\omega$). After each frame:
    $\omega \leftarrow \omega + \varepsilon_k$ (`transition_noise`, F = 99 for
    the data set), $\theta \leftarrow \theta \bmod 2\pi$; `theta0` with
    $\theta = 0$ up. Returns `(theta, omega)` at every frame, frame 0 being
    `(theta0, 0)`.
    """
    theta0 = np.asarray(theta0, dtype=np.float64)
    transition_noise = np.asarray(transition_noise, dtype=np.float64)
    n_transitions = transition_noise.shape[0]
    theta = np.empty((theta0.shape[0], n_transitions + 1))
    omega = np.empty_like(theta)
    th = theta0.copy()
    om = np.zeros_like(th)
    theta[:, 0], omega[:, 0] = th, om
    for k in range(n_transitions):
        for _ in range(N_SUB_STEPS):
            om = om + SUB_STEP * (C * np.sin(th) - FRICTION * om)
            th = th + SUB_STEP * om
        # The noise is not scaled by √dt: that is how the benchmark was made.
        om = om + transition_noise[k]
        th = np.mod(th, 2 * np.pi)
        theta[:, k + 1], omega[:, k + 1] = th, om
    return theta, omega


def hanging_angle(theta: Float[np.ndarray, "*shape"]) -> Float[np.ndarray, "*shape"]:
    r"""$\varphi = \theta - \pi$: the angle measured from hanging straight down."""
    return theta - np.pi


def angle_targets(phi: Float[np.ndarray, "*shape"]) -> Float[np.ndarray, "*shape 2"]:
    r"""The regression targets $(\sin\varphi, \cos\varphi)$, stacked last."""
    return np.stack([np.sin(phi), np.cos(phi)], axis=-1)
