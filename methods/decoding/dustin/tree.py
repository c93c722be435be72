"""A token tree for one tree-masked dense check (Dustin's near-tie branches).

The dense check of a greedy Dustin generation verifies the tentative tokens of the sparse pass;
with branches it verifies several candidate continuations at once: the tentative path, and
for a token whose sparse top-1 led its top-2 by little, the path through the runner-up. Shared
prefixes are merged (a trie), every node attends to the cached context and to its ancestors,
and one forward over the flattened nodes reads the cache once, as a plain check does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class TokenTree:
    """Nodes in flattened order (a parent before its children); node 0 is the root, the last
    verified token. `tentative[i]`: node i came from the sparse pass (not the check's drafts)."""

    tokens: list[int]
    parents: list[int]
    depths: list[int]
    tentative: list[bool]
    children: dict[tuple[int, int], int] = field(default_factory=dict)

    @classmethod
    def of_paths(cls, root: int, paths: Sequence[tuple[Sequence[int], int]]) -> TokenTree:
        """The trie of `paths` under `root`.

        Args:
            root: The last dense-verified token (it has no cache entry yet).
            paths: (tokens after the root, how many of them are tentative; the rest are the
                check's own drafts).

        Returns:
            The tree, nodes in the order they were first inserted.
        """
        tree = cls([root], [-1], [0], [True])
        for tokens, tentative in paths:
            node = 0
            for index, token in enumerate(tokens):
                child = tree.children.get((node, token))
                if child is None:
                    child = len(tree.tokens)
                    tree.children[(node, token)] = child
                    tree.tokens.append(token)
                    tree.parents.append(node)
                    tree.depths.append(tree.depths[node] + 1)
                    tree.tentative.append(index < tentative)
                elif index < tentative:
                    tree.tentative[child] = True
                node = child
        return tree

    def __len__(self) -> int:
        return len(self.tokens)

    def visibility(self, device: torch.device | str | None = None) -> torch.Tensor:
        """`[nodes, nodes]` booleans: node i sees node j when j is i or one of its ancestors."""
        size = len(self.tokens)
        seen = torch.zeros(size, size, dtype=torch.bool)
        for node in range(size):
            ancestor = node
            while ancestor >= 0:
                seen[node, ancestor] = True
                ancestor = self.parents[ancestor]
        return seen.to(device) if device is not None else seen

    def greedy_path(self, predicted: Sequence[int]) -> tuple[list[int], int]:
        """The longest root path whose every token is the target's argmax at its parent.

        Args:
            predicted: The target's greedy token at every node (what follows it).

        Returns:
            (the path's nodes from the root, the target's token after its last node).
        """
        path = [0]
        while (path[-1], int(predicted[path[-1]])) in self.children:
            path.append(self.children[(path[-1], int(predicted[path[-1]]))])
        return path, int(predicted[path[-1]])

    def has_tentative_child(self, node: int) -> bool:
        """Whether the sparse pass proposed some token after `node` (a check that stops there
        rejected tentative work)."""
        return any(
            parent == node and self.tentative[child] for (parent, _), child in self.children.items()
        )


def common_prefix(first: Sequence[int], second: Sequence[int]) -> int:
    """The length of the longest common prefix of two token lists."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


def compact_cache(cache: object, start: int, nodes: Sequence[int]) -> None:
    """Move the entries of `nodes` (flattened tree offsets after `start`) to consecutive
    positions from `start`, so the cache holds one path; the caller crops what follows.

    Args:
        cache: A transformers cache whose `layers` hold `keys` / `values` views.
        start: The first tree position in the cache.
        nodes: The kept nodes' flattened offsets, ascending (each at or after its new place).
    """
    source = [start + node for node in nodes]
    target = list(range(start, start + len(nodes)))
    if source == target:
        return
    for layer in getattr(cache, "layers", []):
        for tensor in (layer.keys, layer.values):
            if tensor is None:
                continue
            index = torch.tensor(source, device=tensor.device)
            tensor[..., start : start + len(nodes), :] = tensor.index_select(-2, index)
