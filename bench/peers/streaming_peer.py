"""mosaicml-streaming 0.13.0 (MDSWriter, StreamingDataset) in a process without torch.

The package requires torch, torchvision and transformers, numpy < 2.2 and xxhash < 4 (the
project pins numpy 2.4.6 and xxhash 4.1.0), and PyPI's Linux torch wheel is the CUDA build, which
is never installed here. So the benchmark environment installs it with ``--no-deps`` (plus the
compression modules it imports: brotli, python-snappy, zstd), and this module makes it
importable:

- when torch is missing, a minimal stand-in is registered: ``torch.Tensor``,
  ``torch.utils.data.{Dataset, IterableDataset, DataLoader, get_worker_info}`` and a
  ``torch.distributed`` that reports itself unavailable (one process, no process group). The
  reading path measured here (MDS shards of strings and JSON, one process, no DataLoader) never
  touches a tensor;
- the package's ``streaming`` and ``streaming.base`` ``__init__`` modules are skipped: they import
  the bundled vision and text datasets (torchvision, transformers) and the StreamingDataLoader.
  ``streaming.base.format`` and ``streaming.base.dataset`` are imported as they ship.

With a real torch installed nothing is stubbed (the ``__init__`` modules are still skipped).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

TORCH_STUB = False  # True once the stand-in is in place (the report says so)


def _torch_stub() -> None:
    global TORCH_STUB
    torch = types.ModuleType("torch")
    torch.__path__ = []  # a package, so submodule imports resolve to the modules below
    torch.Tensor = type("Tensor", (), {})
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    distributed = types.ModuleType("torch.distributed")
    distributed.is_available = lambda: False
    distributed.is_initialized = lambda: False
    distributed.is_nccl_available = lambda: False
    utils = types.ModuleType("torch.utils")
    utils.__path__ = []
    data = types.ModuleType("torch.utils.data")
    data.Dataset = type("Dataset", (), {})
    data.IterableDataset = type("IterableDataset", (data.Dataset,), {})
    data.DataLoader = type("DataLoader", (), {})
    data.get_worker_info = lambda: None
    torch.distributed, torch.utils, utils.data = distributed, utils, data
    sys.modules.update(
        {
            "torch": torch,
            "torch.distributed": distributed,
            "torch.utils": utils,
            "torch.utils.data": data,
        }
    )
    TORCH_STUB = True


def _bare_package(name: str) -> None:
    """Register package ``name`` without running its ``__init__``."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not installed (make .bench-venv/.installed)")
    module = types.ModuleType(name)
    module.__path__ = list(spec.submodule_search_locations)
    module.__spec__ = spec
    sys.modules[name] = module


def import_streaming() -> tuple[Any, Any, str]:
    """``(MDSWriter, StreamingDataset, version)``; raises ImportError when not installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        _torch_stub()
    _bare_package("streaming")
    _bare_package("streaming.base")
    writer = importlib.import_module("streaming.base.format.mds.writer")
    dataset = importlib.import_module("streaming.base.dataset")
    version = importlib.import_module("streaming._version").__version__
    return writer.MDSWriter, dataset.StreamingDataset, version
