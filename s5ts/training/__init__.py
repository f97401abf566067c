"""Training: batching of `Sequences`, thinning them (observation
dropout) and warping their time (`TimeWarp`), the optimiser and its schedule, the loop, early stopping,
device placement (also across `jax.distributed` processes, and the
shares of streamed files each process reads), losses, the
compilation cache and checkpoints of the loop (Orbax, for resumable fits).

Used by the estimators, the sktime forecaster and the CRU baseline through
these names; nothing here imports scikit-learn or sktime.
"""

from ._backprop import MIN_CHUNK_LENGTH, AbstractBackprop, TruncatedBackprop, WholeSequences, backprop_for, run_batch
from ._cache import (
    compilation_cache_dir,
    enable_compilation_cache,
    release_compiled_programs,
    set_compilation_cache,
)
from ._checkpoint import Checkpoints, LoopState, check_fingerprint, data_digest, saved_fingerprint
from ._devices import Placement, gather_rows, placement_for, to_default_device
from ._distributed import (
    agreed_seed,
    allgather_objects,
    check_same_data,
    free_port,
    gather_results,
    initialize,
    is_distributed,
    is_primary,
    launch_local,
    process_environment,
)
from ._distributed import main as launch_main
from ._early_stopping import EarlyStopping
from ._initial import NetworkSpec
from ._loop import (
    NonFiniteLossError,
    TrainingConfig,
    TrainingResult,
    TrainingState,
    compile_seconds_so_far,
    evaluate,
    forward_batches,
    predict_outputs,
    predicted_batches,
    train,
    train_step,
)
from ._losses import (
    VARIANCE_FLOOR,
    SquaredErrorInUnits,
    cross_entropy_loss,
    gaussian_nll_loss,
    mean_over_copies,
    mse_loss,
    point_prediction,
)
from ._optimizer import (
    make_optimizer,
    parameter_labels,
    schedule_scales,
    with_learning_rates,
)
from ._sequences import (
    PACK_GAIN,
    PACK_MIN_LENGTH,
    PackedSequences,
    SequenceData,
    Sequences,
    batch_rows,
    iterate_batches,
    packed_for,
    padded_batch,
    split_validation,
    steps_per_epoch,
)
from ._shards import FileShares, ShardedStep, file_owners, own_files, shard_plan, share_files
from ._split import Split, Static
from ._streaming import StreamedSequences
from ._thinning import PREDICTION_COPIES, Thinning, copies_kept, cut_batch, keep_observations, thin_observations
from ._warping import TimeWarp

__all__ = [
    "AbstractBackprop",
    "MIN_CHUNK_LENGTH",
    "TruncatedBackprop",
    "WholeSequences",
    "backprop_for",
    "Checkpoints",
    "LoopState",
    "EarlyStopping",
    "FileShares",
    "NetworkSpec",
    "NonFiniteLossError",
    "Placement",
    "SequenceData",
    "Sequences",
    "PackedSequences",
    "PACK_GAIN",
    "PACK_MIN_LENGTH",
    "packed_for",
    "run_batch",
    "ShardedStep",
    "Split",
    "Static",
    "StreamedSequences",
    "SquaredErrorInUnits",
    "TrainingConfig",
    "TrainingResult",
    "TrainingState",
    "VARIANCE_FLOOR",
    "PREDICTION_COPIES",
    "agreed_seed",
    "allgather_objects",
    "batch_rows",
    "check_fingerprint",
    "check_same_data",
    "compilation_cache_dir",
    "compile_seconds_so_far",
    "copies_kept",
    "cross_entropy_loss",
    "data_digest",
    "enable_compilation_cache",
    "evaluate",
    "forward_batches",
    "file_owners",
    "gather_results",
    "gather_rows",
    "gaussian_nll_loss",
    "free_port",
    "initialize",
    "is_distributed",
    "launch_local",
    "launch_main",
    "process_environment",
    "is_primary",
    "iterate_batches",
    "keep_observations",
    "make_optimizer",
    "mse_loss",
    "own_files",
    "padded_batch",
    "parameter_labels",
    "placement_for",
    "mean_over_copies",
    "point_prediction",
    "predict_outputs",
    "predicted_batches",
    "schedule_scales",
    "release_compiled_programs",
    "saved_fingerprint",
    "set_compilation_cache",
    "shard_plan",
    "share_files",
    "split_validation",
    "steps_per_epoch",
    "thin_observations",
    "Thinning",
    "TimeWarp",
    "cut_batch",
    "to_default_device",
    "train",
    "train_step",
    "with_learning_rates",
]
