"""Starting the local embedding model early, in a thread, for a one-shot command.

When the local model is the configured provider and the store on disk holds vectors (or
the caller says the model will rank without them: a shared store, a published index that a
fresh clone restores),
onnxruntime's import and session start (~0.3 s) release the interpreter lock for most of it
and overlap the store, the listing and numpy on the second core. The retrieval service
takes the model (`ModelPreload.take`) on its first use; any failure here is left to that
normal path, which reports it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import LlmwikiError
from ..providertable import LOCAL_EMBEDDING
from .embedders import Embedder, preload_local, provider_name


class ModelPreload:
    """The model loading in its thread (see the module docstring)."""

    def __init__(self, state: Path, without_local: Callable[[], bool] | None = None) -> None:
        self._handed = threading.Event()
        self._embedder: Embedder | None = None
        self._taken = False

        def ready(embedder: Embedder | None) -> None:
            self._embedder = embedder
            self._handed.set()

        def preload() -> None:
            try:
                preload_local(state, ready, without_local)
            except (LlmwikiError, OSError, ImportError, ValueError, RuntimeError):
                pass  # the first embed loads again and reports what goes wrong
            finally:
                self._handed.set()

        self._thread = threading.Thread(target=preload, name="llmwiki-model", daemon=True)
        self._thread.start()

    @classmethod
    def start(
        cls,
        state: Path,
        environ: Mapping[str, str],
        configured: str | None,
        without_local: Callable[[], bool] | None = None,
    ) -> ModelPreload | None:
        """Start loading when the local model is the provider (None otherwise: nothing to do).
        ``without_local``: asked (in the thread) when the state folder holds no vectors,
        whether the model will rank all the same."""
        try:
            if provider_name(environ, configured) != LOCAL_EMBEDDING:
                return None
        except LlmwikiError:  # a misconfigured provider: reported by the normal path
            return None
        return cls(state, without_local)

    def take(self) -> Embedder | None:
        """The model made (still loading, perhaps: its first `embed` waits), once; None if
        there is none."""
        self._handed.wait()
        if self._taken:
            return None
        self._taken = True
        return self._embedder

    def settle(self) -> None:
        """Wait for the load to end (a command whose search never embedded: the process must
        not exit inside onnxruntime's start-up)."""
        self._thread.join()
