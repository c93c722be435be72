"""Tabular anomaly data sets that ship with scikit-learn or PyOD, or are generated here.

- `breast_cancer` (scikit-learn, 569 rows): the 10 `mean ...` numeric features; benign tumours
  are normal, malignant ones (the minority class) anomalies.
- `wine` (scikit-learn, 178 rows): 13 numeric features; cultivars 0 and 1 are normal, cultivar
  2 anomalies.
- `shop` (generated here): sales records with 3 categorical and 3 numeric columns that depend
  on each other; injected anomalies: a store outside its region, another product's price, a
  total that is not price x quantity, an absurd quantity.
- `pyod_categorical` (PyOD's `generate_data_categorical`): 4 categorical columns, PyOD's
  inliers and outliers.

Protocol (one-class, as AnoLLM): for each seed, half of the normal rows (at most
`max_train`) train the detector; the test set is the other normal rows (at most `max_test`)
plus anomalies sampled to `anomaly_share` of it, every test row once and none a training row
(`row_key`). Numeric columns keep about 3 significant digits when serialized
(`serialize.decimals_for`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from docket.methods.anomaly.serialize import Column, Value, decimals_for, serialize

Row = dict[str, Value]
DATASETS = ("breast_cancer", "wine", "shop", "pyod_categorical")


@dataclass(frozen=True)
class Table:
    """Columns, normal rows and anomalous rows (with an anomaly kind each)."""

    name: str
    columns: list[Column]
    normal: list[Row]
    anomalies: list[Row]
    kinds: list[str]


@dataclass(frozen=True)
class Split:
    """Training rows (normal) and labelled test rows (1 = anomaly)."""

    train: list[Row]
    test: list[Row]
    labels: list[int]
    kinds: list[str]


def _numeric_table(name: str, names: list[str], data: Any, normal: list[bool]) -> Table:
    columns = [
        Column(n.replace(",", " "), "numeric", decimals_for(list(data[:, j])))
        for j, n in enumerate(names)
    ]
    rows: list[dict[str, float | str]] = [
        {c.name: float(v) for c, v in zip(columns, row, strict=True)} for row in data
    ]
    anomalies = [r for r, ok in zip(rows, normal, strict=True) if not ok]
    return Table(
        name,
        columns,
        [r for r, ok in zip(rows, normal, strict=True) if ok],
        anomalies,
        ["minority_class"] * len(anomalies),
    )


def breast_cancer() -> Table:
    """scikit-learn's Wisconsin breast cancer set: malignant tumours as anomalies."""
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    keep = [j for j, n in enumerate(bunch.feature_names) if str(n).startswith("mean ")]
    names = [str(bunch.feature_names[j]) for j in keep]
    return _numeric_table(
        "breast_cancer", names, bunch.data[:, keep], [bool(t == 1) for t in bunch.target]
    )


def wine() -> Table:
    """scikit-learn's wine set: the third cultivar as anomalies."""
    from sklearn.datasets import load_wine

    bunch = load_wine()
    names = [str(n) for n in bunch.feature_names]
    return _numeric_table("wine", names, bunch.data, [bool(t != 2) for t in bunch.target])


REGIONS = {"north": ("alder", "birch", "cedar"), "south": ("dune", "elm", "fern"),
           "east": ("gale", "heath", "iris"), "west": ("juniper", "kelp", "larch")}  # fmt: skip
PRICES = {"tea": (3.0, 0.3), "coffee": (4.5, 0.4), "cake": (6.0, 0.5), "bread": (2.5, 0.2),
          "juice": (3.5, 0.3)}  # fmt: skip
SHOP_COLUMNS = [
    Column("region", "categorical"),
    Column("store", "categorical"),
    Column("product", "categorical"),
    Column("price", "numeric", 2),
    Column("quantity", "numeric", 0),
    Column("total", "numeric", 2),
]


def _sale(rng: random.Random) -> Row:
    region = rng.choice(sorted(REGIONS))
    product = rng.choice(sorted(PRICES))
    mean, sd = PRICES[product]
    price = round(rng.gauss(mean, sd), 2)
    quantity = float(rng.randint(1, 6))
    return {
        "region": region,
        "store": rng.choice(REGIONS[region]),
        "product": product,
        "price": price,
        "quantity": quantity,
        "total": round(price * quantity, 2),
    }


def _inject(rng: random.Random, row: Row, kind: str) -> Row:
    bad = dict(row)
    if kind == "store_region":
        others = [s for r, stores in REGIONS.items() if r != row["region"] for s in stores]
        bad["store"] = rng.choice(others)
    elif kind == "price_product":
        other = rng.choice([p for p in sorted(PRICES) if p != row["product"]])
        while abs(PRICES[other][0] - PRICES[str(row["product"])][0]) < 1.0:
            other = rng.choice([p for p in sorted(PRICES) if p != row["product"]])
        bad["price"] = round(rng.gauss(*PRICES[other]), 2)
        bad["total"] = round(float(bad["price"]) * float(bad["quantity"]), 2)
    elif kind == "total_mismatch":
        bad["total"] = round(float(row["total"]) * rng.uniform(1.5, 2.5), 2)
    else:  # quantity far outside the usual 1-6
        bad["quantity"] = float(rng.randint(15, 20))
        bad["total"] = round(float(bad["price"]) * float(bad["quantity"]), 2)
    return bad


SHOP_KINDS = ("store_region", "price_product", "total_mismatch", "outlier_quantity")


def shop(n_normal: int = 600, n_anomalies: int = 120, seed: int = 2026) -> Table:
    """Sales records with dependencies between columns and four injected anomaly kinds."""
    rng = random.Random(seed)
    normal = [_sale(rng) for _ in range(n_normal)]
    kinds = [SHOP_KINDS[i % len(SHOP_KINDS)] for i in range(n_anomalies)]
    anomalies = [_inject(rng, _sale(rng), kind) for kind in kinds]
    return Table("shop", list(SHOP_COLUMNS), normal, anomalies, kinds)


def pyod_categorical(seed: int = 2026) -> Table:
    """PyOD's generated categorical data (inliers vs its outliers)."""
    from pyod.utils.data import generate_data_categorical

    x_train, x_test, y_train, y_test = generate_data_categorical(
        n_train=500, n_test=200, n_features=4, n_informative=4, n_category_in=4,
        n_category_out=3, contamination=0.1, shuffle=True, random_state=seed,
    )  # fmt: skip
    columns = [Column(f"attribute {j + 1}", "categorical") for j in range(x_train.shape[1])]
    rows: list[dict[str, float | str]] = [
        {c.name: str(v) for c, v in zip(columns, row, strict=True)}
        for row in [*x_train.tolist(), *x_test.tolist()]
    ]
    labels = [int(v) for v in [*y_train.tolist(), *y_test.tolist()]]
    anomalies = [r for r, y in zip(rows, labels, strict=True) if y == 1]
    return Table(
        "pyod_categorical",
        columns,
        [r for r, y in zip(rows, labels, strict=True) if y == 0],
        anomalies,
        ["pyod_outlier"] * len(anomalies),
    )


LOADERS: dict[str, Callable[[], Table]] = {
    "breast_cancer": breast_cancer,
    "wine": wine,
    "shop": shop,
    "pyod_categorical": pyod_categorical,
}


def row_key(row: Row, columns: list[Column]) -> str:
    """A row as deduplication compares it: the text the language-model detectors read.

    Numeric values are rounded to their column's decimals there, so two rows that differ only
    beyond them count as one (for PyOD's detectors they are all but identical too).
    """
    return serialize(row, columns)[0]


def split(
    table: Table, seed: int, max_train: int = 200, max_test: int = 200, anomaly_share: float = 0.1
) -> Split:
    """Train on half the normal rows; test on the rest plus a share of anomalies.

    No test row repeats a training row or another test row (`row_key`): a normal row that would
    is skipped and the next one of the second half takes its place; an anomaly that would is
    redrawn from the anomalies not yet drawn. Where the table has fewer distinct rows than that
    (`pyod_categorical`: 4 categorical columns, 239 distinct normal rows of 630 and 3 distinct
    anomalies of 70) the test split is smaller; a table without repeated rows splits as if
    nothing were checked (the random draws are the same).

    Args:
        table: The data set.
        seed: The split's seed (with the table's name).
        max_train: Most training rows.
        max_test: Most normal test rows.
        anomaly_share: The anomalies' share of the test rows (at least 2 anomalies).

    Returns:
        The split; test rows in a random order.
    """
    rng = random.Random(f"{table.name}:{seed}")
    normal = list(table.normal)
    rng.shuffle(normal)
    half = len(normal) // 2
    train = normal[:half][:max_train]
    held = {row_key(row, table.columns) for row in train}
    test_normal = [
        normal[i] for i in _new(range(half, len(normal)), normal, table.columns, max_test, held)
    ]
    wanted = max(2, round(anomaly_share * len(test_normal) / (1 - anomaly_share)))
    drawn = rng.sample(range(len(table.anomalies)), min(wanted, len(table.anomalies)))
    picked = _new(drawn, table.anomalies, table.columns, wanted, held)
    if len(picked) < len(drawn):  # a repeated anomaly: redraw from the ones not yet drawn
        rest = sorted(set(range(len(table.anomalies))) - set(drawn))
        rng.shuffle(rest)
        picked += _new(rest, table.anomalies, table.columns, wanted - len(picked), held)
    test = test_normal + [table.anomalies[i] for i in picked]
    labels = [0] * len(test_normal) + [1] * len(picked)
    kinds = ["normal"] * len(test_normal) + [table.kinds[i] for i in picked]
    order = list(range(len(test)))
    rng.shuffle(order)
    return Split(
        train, [test[i] for i in order], [labels[i] for i in order], [kinds[i] for i in order]
    )


def _new(
    indices: Iterable[int], rows: list[Row], columns: list[Column], count: int, held: set[str]
) -> list[int]:
    """The first `count` indices whose row's `row_key` is not in `held`; their keys join it."""
    out: list[int] = []
    for index in indices:
        if len(out) == count:
            break
        key = row_key(rows[index], columns)
        if key not in held:
            held.add(key)
            out.append(index)
    return out
