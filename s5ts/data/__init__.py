"""User input → `RaggedPanel`; targets; length buckets and padding.

Pure numpy/pandas: no JAX, no scikit-learn.
"""

from ._batching import MERGE_BUDGET as MERGE_BUDGET
from ._batching import CapAtLongest as CapAtLongest
from ._batching import CapOnGrid as CapOnGrid
from ._batching import LengthCap as LengthCap
from ._batching import PowersOfTwo as PowersOfTwo
from ._batching import assign_buckets as assign_buckets
from ._batching import bucket_length as bucket_length
from ._batching import grid_length as grid_length
from ._batching import make_batches as make_batches
from ._batching import pack_rows as pack_rows
from ._batching import pad_batch as pad_batch
from ._batching import plan_buckets as plan_buckets
from ._chunk_ledger import ChunkLedger as ChunkLedger
from ._median_gap import MedianGap as MedianGap
from ._panel import LAYOUTS as LAYOUTS
from ._panel import RaggedPanel as RaggedPanel
from ._panel import check_columns as check_columns
from ._panel import frames_from_multiindex as frames_from_multiindex
from ._panel import gaps_from_times as gaps_from_times
from ._panel import panel_to_frames as panel_to_frames
from ._panel import time_scale_from as time_scale_from
from ._panel import to_panel as to_panel
from ._parquet import ParquetSeries as ParquetSeries
from ._parquet import SeriesChunk as SeriesChunk
from ._parquet import is_parquet_source as is_parquet_source
from ._parquet import open_parquet as open_parquet
from ._targets import Targets as Targets
from ._targets import order_by_ids as order_by_ids
from ._targets import steps_by_series as steps_by_series
from ._targets import to_targets as to_targets

__all__ = [
    "LAYOUTS",
    "RaggedPanel",
    "Targets",
    "MERGE_BUDGET",
    "CapAtLongest",
    "CapOnGrid",
    "LengthCap",
    "PowersOfTwo",
    "ChunkLedger",
    "MedianGap",
    "ParquetSeries",
    "SeriesChunk",
    "assign_buckets",
    "pack_rows",
    "bucket_length",
    "check_columns",
    "frames_from_multiindex",
    "gaps_from_times",
    "grid_length",
    "is_parquet_source",
    "make_batches",
    "open_parquet",
    "order_by_ids",
    "pad_batch",
    "panel_to_frames",
    "plan_buckets",
    "steps_by_series",
    "time_scale_from",
    "to_panel",
    "to_targets",
]
