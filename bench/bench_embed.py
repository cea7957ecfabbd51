"""Embedding throughput: papers (title + abstract) per second through the project's encoder in
one process, its CPU time per paper, its peak memory, and how far each variant's vectors are
from the default's.

    .venv/bin/python bench/bench_embed.py [--papers 1317] [--threads 0] [--variants all|default]
        [--smoke]

Texts are the real arXiv records the demo harvests (``papers/recorded/``), embedded with
``papers.embeddings.encoder.Encoder`` exactly as ``manage.py embed`` does (``paper_text``,
length-sorted batches of ``EMBEDDING_BATCH_SIZE``). Each variant runs in its own subprocess so
its peak RSS is its own; the model graph is built (and cached) before the clock starts.
Variants: the default (int8 weights by onnxruntime dynamic quantisation, 256 tokens, the
model's own limit, one text per forward pass), float32 weights (equal to PyTorch's vectors)
one text per pass and 32 per pass, and 128 tokens (what the model was trained on) with each
kind of weights. ``papers/s`` is wall-clock with ``--threads`` onnxruntime threads (0: one per
core); ``CPU ms/paper`` is the process's CPU time, which moves less with the machine's load;
``cos to float32`` is the mean cosine between a variant's vector and float32's at 256 tokens
for the same paper (1.0 = the same vectors). The load average before the run is printed: the figures
are this machine's under that load. ``--smoke`` (CI): 24 papers, the default and float32 variants.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

VARIANTS = {
    "default": {"max_tokens": 256, "quantize": True, "pass_size": 1},
    "float32": {"max_tokens": 256, "quantize": False, "pass_size": 1},
    "float32, passes of 32": {"max_tokens": 256, "quantize": False, "pass_size": 32},
    "int8, 128 tokens": {"max_tokens": 128, "quantize": True, "pass_size": 1},
    "float32, 128 tokens": {"max_tokens": 128, "quantize": False, "pass_size": 1},
}


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)


def recorded_texts(limit: int) -> list[str]:
    """Title + abstract of the demo's recorded papers, one per arXiv identifier, in file order."""
    from papers.embeddings.encoder import paper_text
    from papers.sources.recorded import recorded_sources

    seen: dict[str, str] = {}
    for source in recorded_sources():
        for chunk in source.chunks():
            for record in chunk.records:
                seen.setdefault(record.arxiv_id, paper_text(record.title, record.abstract))
    return list(seen.values())[:limit]


def run_variant(name: str, papers: int, threads: int, out: Path) -> None:
    """Child process: embed ``papers`` texts with one variant, write figures and vectors."""
    import numpy as np
    from django.conf import settings

    from papers.embeddings.encoder import Encoder, default_model_path

    texts = recorded_texts(papers)
    variant = VARIANTS[name]
    encoder = Encoder(
        settings.EMBEDDING_MODEL,
        default_model_path(),
        max_tokens=variant["max_tokens"],
        batch_size=variant["pass_size"],
        quantize=variant["quantize"],
        cache_dir=settings.EMBEDDING_CACHE_DIR,
        threads=threads or None,
    )
    encoder.encode(texts[:4])  # builds or loads the graph, warms the session
    truncated = sum(n > variant["max_tokens"] for n in encoder.token_counts(texts))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    vectors = encoder.encode(texts)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    np.save(out.with_suffix(".npy"), vectors)
    out.write_text(
        json.dumps(
            {
                "papers": len(texts),
                "papers_per_s": len(texts) / wall,
                "cpu_ms_per_paper": 1000 * cpu / len(texts),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "truncated": truncated / len(texts),
            }
        )
    )


def cpu_features() -> str:
    """The vector instruction sets int8 and float32 speed depend on, from /proc/cpuinfo
    ("unknown" elsewhere): VNNI doubles int8 matrix products."""
    try:
        flags = set(
            Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0].split()
        )
    except (OSError, IndexError):
        return "instruction sets unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return " ".join(flag for flag in wanted if flag in flags) or "no AVX2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1317)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--variants", choices=("all", "default"), default="all")
    parser.add_argument(
        "--smoke", action="store_true", help="24 papers, default and float32 variants (CI)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.smoke:
        options.papers, options.variants = 24, "default"
    setup_django()
    if options.child:
        run_variant(options.child, options.papers, options.threads, Path(options.out))
        return

    import tempfile

    import numpy as np

    names = list(VARIANTS) if options.variants == "all" else ["default", "float32"]
    load = os.getloadavg()
    print(
        f"Embedding {options.papers} recorded papers (title + abstract), {os.cpu_count()} cores "
        f"({cpu_features()}), "
        f"threads={options.threads or 'all'}, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    results, vectors = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            out = Path(scratch) / f"{len(results)}.json"
            subprocess.run(
                [sys.executable, __file__, "--child", name, "--out", str(out),
                 "--papers", str(options.papers), "--threads", str(options.threads)],
                check=True,
            )  # fmt: skip
            results[name] = json.loads(out.read_text())
            vectors[name] = np.load(out.with_suffix(".npy"))
    print(
        f"{'variant':22} {'papers/s':>9} {'CPU ms/paper':>13} {'peak RSS MB':>12} "
        f"{'truncated':>10} {'cos to float32':>15}"
    )
    for name in names:
        r = results[name]
        cosine = float((vectors[name] * vectors["float32"]).sum(axis=1).mean())
        print(
            f"{name:22} {r['papers_per_s']:9.1f} {r['cpu_ms_per_paper']:13.1f} "
            f"{r['peak_rss_mb']:12.0f} {r['truncated']:10.1%} {cosine:15.4f}"
        )


if __name__ == "__main__":
    main()
