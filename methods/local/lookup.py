"""Prompt-lookup drafts: the tokens that followed the last earlier occurrence of the tail.

An agent's reply copies much of its context: the command it was told to run, the tool's name
and argument keys from the schema, a path from the request. Prompt-lookup decoding (Saxena
2023; transformers' `prompt_lookup_num_tokens`, vLLM's n-gram proposer) guesses the next
tokens by finding the context's last n tokens earlier in the context and proposing what came
after them. The decoding engine then checks the guesses in one forward pass and keeps the
longest run that greedy decoding itself would have chosen, so the output is unchanged and
only the number of forward passes drops.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Longest and shortest tail n-gram looked up (the longest that matches wins).
MAX_NGRAM = 3
MIN_NGRAM = 2


def propose(
    context: Sequence[int], limit: int, max_ngram: int = MAX_NGRAM, min_ngram: int = MIN_NGRAM
) -> list[int]:
    """Up to `limit` tokens that followed the latest earlier occurrence of the context's tail.

    Args:
        context: The prompt and the tokens generated so far (the last one not yet fed).
        limit: Tokens to propose at most (0: none).
        max_ngram: The longest tail tried first.
        min_ngram: The shortest tail accepted.

    Returns:
        The proposed tokens (empty when no tail of at least `min_ngram` tokens recurs).
    """
    if limit <= 0:
        return []
    size = len(context)
    for n in range(min(max_ngram, size - 1), min_ngram - 1, -1):
        tail = list(context[size - n :])
        first = tail[0]
        for start in range(size - n - 1, -1, -1):
            if context[start] == first and list(context[start : start + n]) == tail:
                return list(context[start + n : start + n + limit])
    return []
