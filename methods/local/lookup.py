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


#: Finished replies kept as draft sources for other samples (the oldest goes first).
DEFAULT_REPLIES = 32


class ReplyIndex:
    """Recent generated replies of every sample, a draft source for the others.

    The samples of one task do the same kind of work, so one sample's reply (the tool call it
    made, the answer it gave) is often what another is about to write. A row whose own context
    offers no draft looks its tail up in these replies and in the other rows' replies so far;
    the engine still keeps a draft token only where greedy decoding chooses it.

    Args:
        capacity: Finished replies kept (0: none).
    """

    def __init__(self, capacity: int = DEFAULT_REPLIES) -> None:
        self.capacity = max(0, capacity)
        self.replies: list[list[int]] = []
        #: Draft tokens this index proposed (the engine counts which were accepted).
        self.proposed = 0

    def add(self, reply: Sequence[int]) -> None:
        """Keep a finished reply (an empty one, or a repeat of the latest, is skipped).

        Args:
            reply: The reply's token ids.
        """
        if self.capacity == 0 or not reply or (self.replies and self.replies[-1] == list(reply)):
            return
        self.replies.append(list(reply))
        del self.replies[: -self.capacity]

    def propose(
        self, context: Sequence[int], limit: int, others: Sequence[Sequence[int]] = ()
    ) -> list[int]:
        """Up to `limit` tokens that followed the context's tail in another reply.

        Args:
            context: The row's prompt and tokens so far.
            limit: Tokens to propose at most.
            others: Replies in progress of the other rows (tried first: the newest work).

        Returns:
            The draft (empty when the tail occurs in no reply with a continuation).
        """
        if limit <= 0 or len(context) < MIN_NGRAM:
            return []
        for n in range(min(MAX_NGRAM, len(context)), MIN_NGRAM - 1, -1):
            tail = list(context[len(context) - n :])
            for source in [*others, *reversed(self.replies)]:
                draft = _after(source, tail, limit)
                if draft:
                    self.proposed += len(draft)
                    return draft
        return []


def _after(source: Sequence[int], tail: list[int], limit: int) -> list[int]:
    """The tokens after the latest occurrence of `tail` in `source` that has any."""
    n = len(tail)
    for start in range(len(source) - n - 1, -1, -1):
        if source[start] == tail[0] and list(source[start : start + n]) == tail:
            return list(source[start + n : start + n + limit])
    return []
