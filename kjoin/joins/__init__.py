"""The join processors, one module per kind of join."""

from .context import StepContext, default_joiner
from .stream_stream import JoinWindows, StreamStreamJoin
from .stream_table import StreamTableJoin
from .table_table import TableTableJoin

__all__ = ["StepContext", "default_joiner", "JoinWindows", "StreamStreamJoin", "StreamTableJoin", "TableTableJoin"]
