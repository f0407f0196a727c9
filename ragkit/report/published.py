"""The published numbers the course re-measures, typed once here with their sources.

Library code (`ragkit.report.claims`) and the benchmark scripts both read them from this module.
"""

from __future__ import annotations

# Chroma, "Evaluating Chunking Strategies for Retrieval" (2024), all-MiniLM-L6-v2, k = 5:
# recall / precision / precision_omega / IoU, in %. Sizes and overlaps in cl100k_base tokens.
CHROMA_PUBLISHED = {
    ("recursive", 250, 125): (78.7, 4.9, 21.9, 4.9),
    ("recursive", 250, 0): (78.5, 5.4, 26.7, 5.4),
    ("recursive", 200, 0): (75.7, 6.5, 31.2, 6.5),
    ("token", 250, 125): (82.4, 3.6, 11.4, 3.5),
    ("token", 250, 0): (77.1, 3.3, 16.4, 3.3),
    ("token", 200, 0): (76.6, 4.1, 19.1, 4.1),
    ("cluster", 250, 0): (77.3, 6.1, 28.6, 6.0),
    ("cluster", 200, 0): (75.2, 7.2, 33.6, 7.2),
}


def chroma_best(metric: str) -> tuple[float, str]:
    """The best published MiniLM value of ``recall`` or ``iou`` (%) and the row that holds it."""
    col = {"recall": 0, "precision": 1, "precision_omega": 2, "iou": 3}[metric]
    names = {"recursive": "RecursiveCharacterTextSplitter", "token": "TokenTextSplitter",
             "cluster": "ClusterSemanticChunker"}
    (kind, size, overlap), row = max(CHROMA_PUBLISHED.items(), key=lambda kv: kv[1][col])
    label = f"{names[kind]} {size}" + (f"/{overlap}" if kind != "cluster" else "")
    return row[col], label


# Anthropic contextual-retrieval cookbook, voyage-2 embeddings, Claude 3 Haiku contexts:
# Pass@5 / @10 / @20 (%).
ANTHROPIC_PUBLISHED = {
    "basic (voyage-2)": (80.92, 87.15, 90.06),
    "contextual embeddings": (86.37, 92.81, 93.78),
    "contextual embeddings + BM25": (86.43, 93.21, 94.99),
    "contextual embeddings + rerank": (91.24, 94.79, 96.30),
}

# Anthropic, "Contextual Retrieval" article (2024): reduction of the top-20 retrieval failure
# rate (1 − recall@20) against the baseline, across their datasets.
ANTHROPIC_REDUCTIONS = {"contextual embeddings": 0.35, "contextual embeddings + BM25": 0.49,
                        "contextual embeddings + BM25 + rerank": 0.67}
