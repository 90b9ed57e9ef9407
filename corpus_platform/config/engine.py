"""Where shard work runs: the ``engine:`` section of corpus.yaml.

```yaml
engine:
  kind: dask-local   # local (a process pool) | dask-local (a LocalCluster) | dask (a scheduler)
  workers: 2
  address: null      # kind dask: tcp://HOST:8786
  memory_mb: 1024    # working state a grouping step may keep
```

Where work runs never changes what it writes: outputs are byte-identical on every engine and
for every number of workers.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EngineConfig(BaseModel):
    """Where shard work runs: ``local`` (a process pool of ``workers``), ``dask-local`` (a Dask
    LocalCluster of ``workers`` processes) or ``dask`` (the Dask scheduler at ``address``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["local", "dask-local", "dask"] = "local"
    workers: Annotated[int, Field(ge=1, le=256)] = 1
    address: str | None = None  # kind dask: tcp://HOST:8786
    memory_mb: Annotated[int, Field(ge=64)] = 1024  # working state a grouping step may keep

    @model_validator(mode="after")
    def _address(self) -> EngineConfig:
        if self.kind == "dask" and not self.address:
            raise ValueError("engine.kind dask needs engine.address, e.g. tcp://HOST:8786")
        if self.kind != "dask" and self.address:
            raise ValueError(f"engine.address is only read by engine.kind dask, not {self.kind}")
        return self
