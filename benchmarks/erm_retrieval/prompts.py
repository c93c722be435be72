"""Prompts of the expander role (query expansion, doc2query) and of the RAG reader."""

from __future__ import annotations

EXPAND = """\
Rewrite this search query as the words a matching document would use.
Reply with up to 8 single keywords, one per line, and nothing else.

Query: {query}"""

DOC2QUERY = """\
Write {n} short search queries that this passage answers, one per line, and nothing else.

Passage: {passage}"""

READ = """\
Answer the question using the passages below.

{passages}

Question: {question}
Reply with one line: ANSWER: <the answer>"""


def passages_block(texts: list[str]) -> str:
    """Numbered passages for the reader."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(texts, 1))
