"""The generator's prompt: what the harness asks the model and what attribution replays.

One place for the chat messages of seed 001, appendix B, because two packages use them: the
harness (:mod:`ragaudit_core.harness`) writes answers with it, and attribution
(:mod:`ragaudit_core.attribution.generator_game`) rebuilds it for every coalition of documents.
An attribution explains the answer to exactly this prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SYSTEM_PROMPT", "build_prompt"]

SYSTEM_PROMPT = (
    "Use the following retrieved documents, ranked from highest to lowest relevance, "
    "to answer the user's query.\nBe thorough and accurate, and cite documents when useful.\n"
    "Keep the answer under 200 words."
)


def build_prompt(query: str, documents: Sequence[str]) -> list[dict]:
    """Chat messages in the format of seed 001, appendix B (Llama variant: instructions in
    the system prompt, documents and query in the user prompt). No document: the query alone."""
    body = "\n".join(f"Document {i}: {d}" for i, d in enumerate(documents, 1))
    user = f"{body}\nQuery: {query}" if documents else f"Query: {query}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
