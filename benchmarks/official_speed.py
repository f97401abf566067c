"""One pendulum training step of s5ts against the official S5 code, side by side.

The paper's pendulum model (15 820 parameters: the CRU CNN → Linear to H=30,
4 S5 layers, P=8, J=8, ZOH, half GLU, post-LayerNorm, two Linear→tanh→Linear
heads, Gaussian NLL) built twice in one process: by s5ts (Equinox, the
estimator's own compiled step, as `pendulum_speed.py` times it) and by the
official code (Flax, lindermanlab/S5 `pendulum` branch, its own jitted
`train_step` with the optimiser `create_train_state` builds: Adam for the SSM
parameters, AdamW for the rest). Both get the same batch, 32 sequences × 50
frames of 24×24 pendulum images with their gaps (`load_pendulum`, seeded),
and the same parameters: s5ts' copied into the official parameter tree,
where they give the same outputs (the script prints the largest difference).
Every round calls each of these once, in a shuffled order, after a warm-up
round that compiles them:

- the training step (forward, backward, optimiser update) of each code;
- the CNN encoder alone (conv → pool → conv → pool → Linear(108→30) → ReLU →
  Linear(30→30), the official `CRN_CNN` and s5ts' `PendulumCNN` + input
  projection), forward+backward of Σ out² on the batch's 1 600 frames;
- "everything else" is derived: step − CNN, per code.

It prints medians, ranges and the ratios official / s5ts (of medians and of
minima). Only the official modules the model needs are imported (`ssm`,
`ssm_init`, `layers`, `seq_model`, `train_helpers`, `cru.util`,
`cru.losses`); their maths is untouched. Three shims let that 2023 code run
on today's JAX/Flax, none of them inside a computation: `jnp.DeviceArray`
(a type annotation in `S5SSM`) is aliased to `jax.Array`; `jax.tree_leaves`
(the parameter-count print of `create_train_state`) to `jax.tree.leaves`;
Flax's `flax_return_frozendict` is switched on while `create_train_state`
runs, so its `variables["params"].unfreeze()` finds a FrozenDict. The
official trace-time prints ("Discretizing on-the-fly") are silenced.

Set up (scratch only; nothing here is committed, flax stays out of the main
environment):

    git clone --branch pendulum https://github.com/lindermanlab/S5 /tmp/official-s5
    # or, from a bare mirror M: mkdir -p /tmp/official-s5 && git --git-dir=M archive pendulum |
    #   tar -x -C /tmp/official-s5 && git --git-dir=M rev-parse pendulum > /tmp/official-s5/COMMIT
    python3 -m venv --system-site-packages /tmp/official-venv
    pip freeze | grep -v -E '^-e|@ file' > /tmp/official-constraints.txt
    /tmp/official-venv/bin/pip install -c /tmp/official-constraints.txt flax==0.12.8
    pip freeze | grep -i -E 'jax|numpy|optax'     # unchanged in the main environment

Run (from the repository root; pin it to one core on a shared machine, and
compare only runs made with the same cores: one XLA program may gain more
from a second core than the other):

    taskset -c 1 /tmp/official-venv/bin/python benchmarks/official_speed.py --official /tmp/official-s5 --rounds 40
    /tmp/official-venv/bin/python benchmarks/official_speed.py --official /tmp/official-s5 --quick   # 5 rounds
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import _timing  # noqa: F401  (puts the repository on sys.path)
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _report import versions
from _timing import print_header, print_table, seconds, time_interleaved
from pendulum_speed import _step_call  # s5ts' step, exactly as pendulum_speed.py times it

from s5ts.data import to_panel
from s5ts.datasets import load_pendulum
from s5ts.experiments.pendulum import PRESETS, S5_PAPER_CONFIG, make_model
from s5ts.training import padded_batch

BATCH = 32
#: The official module files the pendulum model needs (no data loaders: they import torch).
_OFFICIAL_FILES = ("ssm.py", "ssm_init.py", "layers.py", "seq_model.py", "train_helpers.py", "cru/util.py", "cru/losses.py")


def _check_official(path: Path) -> None:
    missing = [name for name in _OFFICIAL_FILES if not (path / "s5" / name).is_file()]
    if missing:
        raise SystemExit(
            f"--official {path}: not a checkout of lindermanlab/S5's `pendulum` branch "
            f"(missing s5/{', s5/'.join(missing)}). Make one with\n"
            f"  git clone --branch pendulum https://github.com/lindermanlab/S5 {path}"
        )
    try:
        import flax  # noqa: F401
    except ImportError:
        raise SystemExit(
            "flax is not importable in this Python. Keep it out of the main environment: make a venv,\n"
            "  python3 -m venv --system-site-packages /tmp/official-venv\n"
            "  pip freeze | grep -v -E '^-e|@ file' > /tmp/official-constraints.txt\n"
            "  /tmp/official-venv/bin/pip install -c /tmp/official-constraints.txt flax==0.12.8\n"
            "and run this script with /tmp/official-venv/bin/python."
        ) from None


def _official_commit(path: Path) -> str:
    if (path / "COMMIT").is_file():
        return (path / "COMMIT").read_text().strip()[:12]
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        return out.stdout.strip()[:12]
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no COMMIT file, not a git work tree)"


def _official_model(path: Path, cfg: dict):
    """The official pendulum model and its training state, built as the
    official `train.py` builds them for `bin/run_experiments/run_pendulum.sh`
    (S5 row: `--ssm_size=16 --blocks=8 --conj_sym=True --C_init=trunc_standard_normal
    --use_integration_timestep True --opt_config=standard --lr_factor=4 --ssm_lr=0.003 --weight_decay=0`)."""
    sys.path.insert(0, str(path))
    import flax

    # Shims for 2023 code on today's JAX/Flax; none of them is in a computation.
    if not hasattr(jnp, "DeviceArray"):
        jnp.DeviceArray = jax.Array  # only a dataclass-field annotation of S5SSM
    if not hasattr(jax, "tree_leaves"):
        jax.tree_leaves = jax.tree.leaves  # only the parameter-count print

    from jax.scipy.linalg import block_diag
    from s5.cru.util import CRN_CNN
    from s5.seq_model import BatchGaussianRegressionModel
    from s5.ssm import init_S5SSM
    from s5.ssm_init import make_DPLR_HiPPO
    from s5.train_helpers import create_train_state, train_step

    # As the official train.py does it (the S5 row of run_pendulum.sh).
    ssm_size, blocks = 2 * cfg["state_size"], cfg["blocks"]  # 16 before conjugate symmetry
    block_size = ssm_size // blocks
    Lambda, _, _, V, _ = make_DPLR_HiPPO(block_size)
    block_size, ssm_size = block_size // 2, ssm_size // 2  # conj_sym
    Lambda, V = Lambda[:block_size], V[:, :block_size]
    Vc = V.conj().T
    Lambda = (Lambda * jnp.ones((blocks, block_size))).ravel()
    V, Vinv = block_diag(*([V] * blocks)), block_diag(*([Vc] * blocks))
    ssm_init_fn = init_S5SSM(
        H=cfg["d_model"], P=ssm_size, Lambda_re_init=Lambda.real, Lambda_im_init=Lambda.imag, V=V, Vinv=Vinv,
        C_init="trunc_standard_normal", discretization=cfg["discretization"], dt_min=cfg["dt_min"],
        dt_max=cfg["dt_max"], variable_observation_interval=True, conj_sym=True, clip_eigs=False,
        bidirectional=False,
    )
    model_cls = lambda **kw: BatchGaussianRegressionModel(  # noqa: E731  (train.py's functools.partial)
        ssm=ssm_init_fn, d_output=2, d_model=cfg["d_model"], n_layers=cfg["n_layers"], padded=False,
        activation=cfg["activation"], dropout=cfg["dropout"], prenorm=cfg["prenorm"], batchnorm=False,
        bn_momentum=0.95, append_integration_timestep=False, use_integration_timestep=True,
        encoder_fn=lambda d: CRN_CNN(d, input_shape=24, append_timestep=False), **kw,
    )
    flax.config.update("flax_return_frozendict", True)  # create_train_state calls .unfreeze()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            state = create_train_state(
                model_cls, jax.random.PRNGKey(0), False, False, in_dim=576, bsz=BATCH, seq_len=50,
                weight_decay=cfg["weight_decay"], batchnorm=False, opt_config="standard",
                ssm_lr=cfg["ssm_learning_rate"], lr=cfg["learning_rate"], dt_global=False,
            )
    finally:
        flax.config.update("flax_return_frozendict", False)
    model = model_cls(training=True)
    cnn = CRN_CNN(cfg["d_model"], input_shape=24, append_timestep=False)
    return state, model, cnn, train_step


def _as_official_params(network) -> dict:
    """s5ts' parameters in the official model's parameter tree (Flax layouts:
    kernels (in, out), convolutions HWIO flattened channels last; Λ's real
    part as −exp(log_neg_real); complex B̃, C̃ stacked (…, 2))."""
    a = lambda x: jnp.asarray(x)  # noqa: E731

    def dense(linear):
        return {"kernel": a(linear.weight).T, "bias": a(linear.bias)}

    def conv(c):
        return {"kernel": a(c.weight).transpose(2, 3, 1, 0), "bias": a(c.bias).reshape(-1)}

    cnn = network.encoder
    out, flat = cnn.linear.weight.shape  # flat = 12·3·3 in (channel, row, column) order
    channels = cnn.conv2.weight.shape[0]
    side = int(round((flat // channels) ** 0.5))
    dense0 = a(cnn.linear.weight).reshape(out, channels, side, side).transpose(2, 3, 1, 0).reshape(flat, out)
    params = {"encoder": {"encoder": {
        "Conv_0": conv(cnn.conv1), "Conv_1": conv(cnn.conv2),
        "Dense_0": {"kernel": dense0, "bias": a(cnn.linear.bias)}, "Dense_1": dense(network.projection),
    }}}
    for i, block in enumerate(network.blocks):
        ssm = block.ssm
        params["encoder"][f"layers_{i}"] = {
            "norm": {"scale": a(block.norm.weight), "bias": a(block.norm.bias)},
            "out2": dense(block.activation.gate),
            "seq": {
                "Lambda_re": -jnp.exp(a(ssm.log_neg_real)), "Lambda_im": a(ssm.lambda_imag),
                "B": jnp.stack([a(ssm.B_re), a(ssm.B_im)], -1), "C": jnp.stack([a(ssm.C_re), a(ssm.C_im)], -1),
                "D": a(ssm.D), "log_step": a(ssm.log_step)[:, None],
            },
        }
    for name, head in (("decoder_mu", network.head.mean), ("decoder_lvar", network.head.variance)):
        params[name] = {"layers_0": dense(head.hidden), "layers_1": dense(head.out)}
    return params


def _sum_squares_grad(apply):
    return jax.jit(jax.grad(lambda params, frames: jnp.sum(apply(params, frames) ** 2)))


def _ratio(official: float, ours: float) -> str:
    """official / ours; "-" where a difference of noisy timings came out ≤ 0."""
    return f"{official / ours:.2f}x" if official > 0 and ours > 0 else "-"


def _n_params(tree) -> int:
    return sum(int(np.size(x)) for x in jax.tree.leaves(tree))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--official", type=Path, required=True, help="checkout of lindermanlab/S5's `pendulum` branch")
    parser.add_argument("--rounds", type=int, default=40, help="timed rounds (each calls every variant once)")
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args()
    official = args.official.resolve()
    _check_official(official)
    rounds = 5 if args.quick else args.rounds

    print_header(f"Pendulum training step: s5ts against the official S5 code (batch {BATCH} × 50 frames)")
    load = os.getloadavg()
    print(f"# {versions(['jax', 'jaxlib', 'flax', 'equinox', 'optax', 'numpy'])}")
    print(
        f"# nproc={os.cpu_count()}  affinity={sorted(os.sched_getaffinity(0))}  "
        f"load={load[0]:.2f} {load[1]:.2f} {load[2]:.2f}  official={official} @ {_official_commit(official)}"
    )

    # s5ts: the estimator's compiled step on one real batch (as pendulum_speed.py).
    X, y = load_pendulum("train", n_sequences=BATCH, return_X_y=True, verbose=False)
    panel = to_panel(X)
    ours = make_model("S5", PRESETS["paper"], seed=0).set_params(max_epochs=1)
    ours.fit(panel, y)  # one step: builds the training state _step_call reads
    our_step = _step_call(ours, panel, y, BATCH)
    network = ours._training_state_.model
    # The batch _step_call builds, rebuilt the same way for the official code.
    data = ours.preprocessing_.transform(panel, *ours._task().encode(y, panel, ours._target_state)[:2])
    batch = padded_batch(data, np.arange(BATCH), BATCH)
    assert bool(np.all(batch["mask"])), "expected 32 full sequences of 50 frames"

    # The official code on the same batch: frames, targets, and the gaps
    # after the first (its `integration_timesteps`, (B, L-1); it puts 1 in
    # front, as the first of s5ts' gaps is).
    inputs = jnp.asarray(batch["u"], jnp.float32)  # (32, 50, 576)
    targets = jnp.asarray(batch["y"], jnp.float32)  # (32, 50, 2)
    timesteps = jnp.asarray(batch["gaps"][:, 1:], jnp.float32)  # (32, 49)
    state, model, official_cnn, official_train_step = _official_model(official, S5_PAPER_CONFIG)
    rng = jax.random.PRNGKey(1)

    # The same function: s5ts' parameters copied into the official model give
    # the same outputs (up to float32 rounding: LayerNorm's epsilon is 1e-5 in
    # Equinox, 1e-6 in Flax; associative against sequential scan). Both steps
    # then start from these parameters (the optimiser state is all zeros).
    params = _as_official_params(network)
    if jax.tree.structure(params) != jax.tree.structure(dict(state.params)) or any(
        x.shape != z.shape for x, z in zip(jax.tree.leaves(params), jax.tree.leaves(dict(state.params)))
    ):
        raise SystemExit("s5ts' parameters do not fit the official model's tree: the models differ")
    state = state.replace(params=params)
    with contextlib.redirect_stdout(io.StringIO()):
        mean_o, var_o = jax.jit(lambda p, u, g: model.apply({"params": p}, u, g, rngs={"dropout": rng}))(
            params, inputs, timesteps
        )
    mean_s, var_s = eqx.filter_jit(jax.vmap(lambda u, g, m: network(u, g, m, None, inference=True)))(
        batch["u"], batch["gaps"], batch["mask"]
    )
    print(
        f"# same parameters in both models: max |mean difference| {float(jnp.max(jnp.abs(mean_o - mean_s))):.1e} "
        f"(of max |mean| {float(jnp.max(jnp.abs(mean_s))):.2f}), max |variance difference| "
        f"{float(jnp.max(jnp.abs(var_o - var_s))):.1e} (of max {float(jnp.max(var_s)):.2f})"
    )

    def official_step():
        return official_train_step(state, rng, inputs, targets, timesteps, model, False, True)[1]

    n_ours = _n_params(eqx.filter(network, eqx.is_inexact_array))
    n_official = _n_params(state.params)
    print(f"# parameters: s5ts {n_ours:,}  official {n_official:,}" + ("" if n_ours == n_official else "  (DIFFERENT!)"))

    # The CNN encoder alone, forward+backward on the batch's 1 600 frames.
    frames = inputs.reshape(-1, 576)
    our_cnn = (network.encoder, network.projection)
    our_cnn_grad = eqx.filter_jit(
        eqx.filter_grad(lambda m, x: jnp.sum(jax.vmap(m[1])(m[0].batch(x)) ** 2))
    )
    official_cnn_grad = _sum_squares_grad(lambda p, x: official_cnn.apply({"params": p}, x))
    official_cnn_params = state.params["encoder"]["encoder"]
    print(f"# CNN parameters (with the Linear 30→30): s5ts {_n_params(eqx.filter(our_cnn, eqx.is_inexact_array)):,}  "
          f"official {_n_params(official_cnn_params):,}")

    calls = {
        "s5ts step": (our_step, ()),
        "official step": (official_step, ()),
        "s5ts CNN": (our_cnn_grad, (our_cnn, frames)),
        "official CNN": (official_cnn_grad, (official_cnn_params, frames)),
    }
    # Compile everything before timing, the official trace-time prints
    # silenced (a print while timing would mean a recompilation).
    with contextlib.redirect_stdout(io.StringIO()):
        for fn, fn_args in calls.values():
            jax.block_until_ready(fn(*fn_args))
    t = time_interleaved(calls, repeats=rounds, warmup=1)

    def row(name, ours_key, official_key):
        a, b = t[ours_key], t[official_key]
        return [name, seconds(a.median), f"{seconds(a.low)}..{seconds(a.high)}", seconds(b.median),
                f"{seconds(b.low)}..{seconds(b.high)}", _ratio(b.median, a.median), _ratio(b.low, a.low)]

    rest_ours = t["s5ts step"].median - t["s5ts CNN"].median
    rest_official = t["official step"].median - t["official CNN"].median
    rest_ours_min = t["s5ts step"].low - t["s5ts CNN"].low
    rest_official_min = t["official step"].low - t["official CNN"].low
    print(f"# {rounds} interleaved rounds (shuffled order per round) after a warm-up round; "
          f"load1 at the end {os.getloadavg()[0]:.2f}")
    print_table(
        ["measurement", "s5ts", "s5ts range", "official", "official range", "official/s5ts", "of minima"],
        [
            row(f"training step, batch {BATCH} x 50", "s5ts step", "official step"),
            row("CNN encoder fwd+bwd, 1600 frames", "s5ts CNN", "official CNN"),
            ["everything else (step - CNN)", seconds(rest_ours), "", seconds(rest_official), "",
             _ratio(rest_official, rest_ours), _ratio(rest_official_min, rest_ours_min)],
        ],
    )


if __name__ == "__main__":
    main()
