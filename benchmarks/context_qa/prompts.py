"""Prompts of docket/context_qa, one per way the context reaches the model.

`reference` and `none` differ only in the `[context: ID]` tag, which names the context without
giving its content: a SHINE model (`-M method=shine -M context=FILE`) turns that context into an
adapter, any other model answers from the question alone.
"""

from __future__ import annotations

INSTRUCTION = "Answer the question with one word."

PROMPTS = {
    "prompt": "Read the text, then answer the question with one word.\n\n"
    "Text: {context}\n\nQuestion: {question}",
    "reference": "[context: {context_id}] " + INSTRUCTION + "\n\nQuestion: {question}",
    "none": INSTRUCTION + "\n\nQuestion: {question}",
}


def render(mode: str, *, context: str, context_id: str, question: str) -> str:
    """The user prompt of `mode` (`prompt`, `reference` or `none`)."""
    return PROMPTS[mode].format(context=context, context_id=context_id, question=question)
