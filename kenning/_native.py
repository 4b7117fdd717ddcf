"""Native libraries whose import order matters.

usearch (the SQLite store's vector index) and onnxruntime (the local encoder's fast runtime,
``kenning[onnx]``) both load compiled extensions built with pybind11. Importing onnxruntime
after usearch ends the process with a segmentation fault (usearch 2.26, onnxruntime 1.32);
the other order works. So ``load_usearch`` imports onnxruntime first when it is installed
(about 0.4 s, once per process), and a store can be opened before a local embedder in any order.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["load_usearch"]


def load_usearch() -> ModuleType:
    """``usearch.index``, imported after onnxruntime when onnxruntime is installed."""
    if "usearch.index" not in sys.modules and "onnxruntime" not in sys.modules:
        try:
            if importlib.util.find_spec("onnxruntime") is not None:
                importlib.import_module("onnxruntime")
        except ImportError:  # a broken install: the local encoder falls back to numpy
            pass
    return importlib.import_module("usearch.index")
