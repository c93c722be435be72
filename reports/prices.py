"""Cost estimates per leaderboard row from token usage and an editable price table.

`prices.yaml` beside this module is the default table (USD per million input / output tokens,
exact model names or `prefix*` patterns); `docket report --prices FILE` replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from docket.reports.files import load_document

DEFAULT_PRICES = Path(__file__).parent / "prices.yaml"
PRICES_FORMAT = "docket-prices/1"


class PriceError(ValueError):
    """A price table that cannot be used (one line naming the file and entry)."""


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens."""

    input: float
    output: float


@dataclass(frozen=True)
class PriceTable:
    """Prices by exact model name or `prefix*` pattern, and the file they came from."""

    prices: dict[str, Price]
    currency: str
    source: str

    def lookup(self, model: str) -> Price | None:
        """Exact name first, then the longest matching `prefix*` pattern."""
        if model in self.prices:
            return self.prices[model]
        patterns = [p for p in self.prices if p.endswith("*") and model.startswith(p[:-1])]
        return self.prices[max(patterns, key=len)] if patterns else None

    def cost(self, usage: dict[str, dict[str, int]]) -> tuple[float | None, list[str]]:
        """(estimated cost, models without a price); the cost is None when any lacks one."""
        total, missing = 0.0, []
        for model, counts in sorted(usage.items()):
            price = self.lookup(model)
            if price is None:
                missing.append(model)
                continue
            total += counts.get("input_tokens", 0) * price.input / 1e6
            total += counts.get("output_tokens", 0) * price.output / 1e6
        return (None if missing else total), missing


def _rate(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PriceError(f"{where} must be a number >= 0, got {value!r}")
    return float(value)


def load_prices(path: str | Path | None = None) -> PriceTable:
    """Read a price table (the shipped one by default)."""
    source = Path(path) if path is not None else DEFAULT_PRICES
    data = load_document(source, PriceError, "price table", PRICES_FORMAT)
    models = data.get("models")
    if not isinstance(models, dict):
        raise PriceError(f"{source}: field 'models' must be a mapping")
    prices: dict[str, Price] = {}
    for name, entry in models.items():
        where = f"{source}: models[{name!r}]"
        if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
            raise PriceError(f"{where} must have exactly 'input' and 'output'")
        prices[str(name)] = Price(
            _rate(f"{where}.input", entry["input"]), _rate(f"{where}.output", entry["output"])
        )
    return PriceTable(prices, str(data.get("currency") or "USD"), str(source))
