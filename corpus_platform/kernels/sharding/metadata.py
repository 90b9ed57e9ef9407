"""A shard sample's metadata as canonical JSON: every column of its mix row but the text, plus
``key`` and ``draw`` (sorted keys, no spaces, NaN and infinities as null, times in ISO 8601,
bytes in hex), the ``<key>.json`` member of its tar."""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_dumps = partial(json.dumps, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def metadata_json(row: dict[str, Any]) -> bytes:
    """Canonical JSON of a sample's metadata (sorted keys, no spaces, NaN as null)."""
    return _dumps({k: _jsonable(v) for k, v in row.items()}).encode()


def _as_is(kind: pa.DataType) -> bool:
    """Whether a column's Python values are already what :func:`_jsonable` makes of them
    (strings, integers, booleans, nulls)."""
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
    )


def _python_values(column: pa.ChunkedArray) -> list[Any]:
    """A column's values as :func:`_jsonable` makes them: floats as Python gives them but the
    non-finite ones, found by numpy, as None; strings, integers, booleans and nulls as they
    are; any other kind value by value."""
    values = column.to_pylist()
    if _as_is(column.type):
        return values
    if pa.types.is_floating(column.type):
        numbers = pc.fill_null(column, 0.0).to_numpy()
        for row in np.flatnonzero(~np.isfinite(numbers)).tolist():
            values[row] = None
        return values
    return [_jsonable(v) for v in values]


def metadata_jsons(table: pa.Table) -> list[bytes]:
    """:func:`metadata_json` of every row of ``table``, byte for byte, converted column by
    column (:func:`_python_values`): only a column of times, lists, bytes or structs goes
    through the value conversion."""
    if not table.num_columns:
        return [b"{}"] * table.num_rows
    names = table.column_names
    columns = [_python_values(column) for column in table.columns]
    return [
        _dumps(dict(zip(names, row, strict=True))).encode() for row in zip(*columns, strict=True)
    ]
