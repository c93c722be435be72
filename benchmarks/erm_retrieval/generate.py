"""The shipped ERM corpus: documents in a technical vocabulary, queries in a lay one.

Each document describes a fictional institution by its type, town, three specialities (technical
terms such as "ophthalmology") and the year it was founded. Each query asks when one of them was
founded, naming two or three of its specialities and sometimes its town or type; a speciality
is said in lay words ("eye", "vision") with probability `mismatch`, so plain BM25 often has
nothing to match. Lay words never occur in any document (checked).

Splits: `feedback` (two paraphrased queries for each of the "seen" documents, 60%) and `test`
(one further paraphrase for every document, seen or not). Qrels list every document that has
all the facets a query names (usually one). Only test queries carry their answers (the years of
their judged documents, `metadata.answer` / `answers`): a feedback query's answer let a blind
reader recall a held-out question's year from its paraphrases (2-A; `rag_attacks.py`). The
expander's thesaurus maps each lay word it knows (`coverage`) to its technical term, plus a
wrong term for some words (`noise`).

Ids are opaque and the files are shuffled (version 2-A): every document id is `d` and every query
id `q` followed by `ID_DIGITS` hex digits drawn from a random stream of their own, and
corpus.jsonl, queries.jsonl and the qrels list their rows in a shuffled order. Neither an id nor a
row's position says which document a query is about (1-A numbered both in one pass, so a held-out
query's number pointed at its document: `attacks.id_neighbours`). That stream is separate from
the one that draws the content, so the documents, queries, qrels and thesaurus are those of 1-A.

    python benchmarks/erm_retrieval/scripts/generate.py benchmarks/erm_retrieval/data
writes the BEIR layout (corpus.jsonl, queries.jsonl, qrels/{feedback,test}.tsv) and
thesaurus.json, byte for byte the same for the same arguments.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docket.core.jsonl import write_jsonl
from docket.methods.retrieval.text import tokenize

#: (technical term used in documents, lay words used in queries).
CONCEPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ophthalmology", ("eye", "vision")),
    ("dermatology", ("skin", "rash")),
    ("cardiology", ("heart", "pulse")),
    ("pediatrics", ("child", "kids")),
    ("geriatrics", ("elderly", "seniors")),
    ("orthodontics", ("braces", "crooked teeth")),
    ("veterinary", ("pet", "animal")),
    ("pharmacology", ("pills", "medicines")),
    ("physiotherapy", ("rehab", "stretching")),
    ("aquatics", ("swimming", "pool")),
    ("equestrian", ("horse", "pony")),
    ("horticulture", ("gardening", "flowers")),
    ("culinary", ("cooking", "chef")),
    ("numismatics", ("coin", "coins")),
    ("philately", ("stamp", "stamps")),
    ("astronomy", ("stars", "telescope")),
    ("paleontology", ("dinosaur", "fossils")),
    ("cartography", ("maps", "mapmaking")),
    ("apiculture", ("bees", "honey")),
    ("viticulture", ("wine", "grapes")),
    ("ornithology", ("birds", "birdwatching")),
    ("entomology", ("insects", "bugs")),
    ("ichthyology", ("fish", "aquarium")),
    ("ceramics", ("clay", "pots")),
    ("textiles", ("fabric", "cloth")),
    ("carpentry", ("woodwork", "furniture")),
    ("metallurgy", ("metal", "smelting")),
    ("typography", ("fonts", "lettering")),
    ("calligraphy", ("handwriting", "penmanship")),
    ("choreography", ("dance", "dancing")),
    ("percussion", ("drums", "drumming")),
    ("acoustics", ("sound", "echo")),
    ("cryptography", ("codes", "ciphers")),
    ("robotics", ("robots", "gadgets")),
    ("aviation", ("planes", "flying")),
    ("maritime", ("ships", "boats")),
    ("locomotives", ("trains", "steam engines")),
    ("archery", ("bows", "arrows")),
    ("meteorology", ("weather", "storms")),
    ("volcanology", ("volcanoes", "lava")),
    ("glaciology", ("ice", "frozen")),
    ("oceanography", ("sea", "tides")),
    ("linguistics", ("languages", "grammar")),
    ("archaeology", ("ruins", "digging")),
    ("botany", ("trees", "leaves")),
    ("mycology", ("mushrooms", "fungus")),
    ("horology", ("clocks", "watches")),
    ("optics", ("lenses", "mirrors")),
)
TYPES = ("museum", "institute", "society", "academy", "archive", "foundation", "guild", "college")
TOWNS = (
    "Arlow", "Brisk", "Calder", "Dunmere", "Elsby", "Fenwick", "Garrow", "Halden",
    "Ilford", "Jessop", "Kilbride", "Lorne",
)  # fmt: skip
NAMES = (
    "Ashcombe", "Belvane", "Corran", "Delmont", "Evershaw", "Farrow", "Glenholt", "Harwood",
    "Ivybridge", "Kestrel", "Larkspur", "Marlowe", "Northam", "Oakhurst", "Pennant", "Quarry",
    "Ravensworth", "Stanmore", "Thornbury", "Underhill", "Vale", "Westbrook", "Yarrow", "Zennor",
)  # fmt: skip
DOC_TEMPLATES = (
    "{name} {Type} is a {type} in {town}. It is known for {a}, {b} and {c}. "
    "It was founded in {year}.",
    "Founded in {year}, the {name} {Type} of {town} specialises in {a}, {b} and {c}.",
    "The {type} {name} {Type}, {town}: collections and courses in {a}, {b} and {c}; "
    "established {year}.",
)
QUERY_TEMPLATES = (
    "When was the {type}{town} for {a} and {b} founded?",
    "What year did the {a} and {b} {type}{town} open?",
    "Since when has there been a {type}{town} about {a}, {b}{c}?",
    "How old is the place{town} that does {a} and {b}{c}?",
    "Which year was the {type} with {a} plus {b}{c} started{town}?",
)
#: Hex digits after an id's one-letter prefix (`d` documents, `q` queries).
ID_DIGITS = 10


@dataclass(frozen=True)
class Document:
    """A generated document and its facets."""

    id: str
    type: str
    town: str
    concepts: tuple[int, ...]
    year: int
    text: str


def opaque_ids(rng: random.Random, prefix: str) -> Iterator[str]:
    """Distinct ids `prefix` + `ID_DIGITS` hex digits, each drawn from `rng`.

    Args:
        rng: The stream the ids are drawn from (not the one that draws the content).
        prefix: The id's first letter.

    Returns:
        An endless iterator of ids of one length that carry no order.
    """
    used: set[str] = set()
    while True:
        ident = f"{prefix}{rng.getrandbits(4 * ID_DIGITS):0{ID_DIGITS}x}"
        if ident not in used:
            used.add(ident)
            yield ident


def documents(rng: random.Random, count: int, ids: Iterator[str]) -> list[Document]:
    """`count` documents with distinct (type, town, specialities), named by `ids`."""
    seen: set[tuple[str, str, tuple[int, ...]]] = set()
    out: list[Document] = []
    while len(out) < count:
        kind, town = rng.choice(TYPES), rng.choice(TOWNS)
        chosen = tuple(sorted(rng.sample(range(len(CONCEPTS)), 3)))
        if (kind, town, chosen) in seen:
            continue
        seen.add((kind, town, chosen))
        year = rng.randint(1820, 2015)
        a, b, c = (CONCEPTS[i][0] for i in rng.sample(chosen, 3))
        text = rng.choice(DOC_TEMPLATES).format(
            name=rng.choice(NAMES), Type=kind.capitalize(), type=kind, town=town,
            a=a, b=b, c=c, year=year,
        )  # fmt: skip
        out.append(Document(next(ids), kind, town, chosen, year, text))
    return out


def matches(doc: Document, facets: dict[str, object]) -> bool:
    """Whether a document has every facet a query names."""
    concepts = set(facets["concepts"])  # type: ignore[call-overload]
    return (
        concepts <= set(doc.concepts)
        and facets.get("town") in (None, doc.town)
        and facets.get("type") in (None, doc.type)
    )


def query(
    rng: random.Random, doc: Document, corpus: list[Document], mismatch: float
) -> tuple[str, list[str], dict[str, object]]:
    """A paraphrased question about `doc`: (text, relevant ids, facets)."""
    while True:
        named = rng.sample(doc.concepts, rng.choice((2, 2, 3)))
        facets: dict[str, object] = {
            "concepts": named,
            "town": doc.town if rng.random() < 0.4 else None,
            "type": doc.type if rng.random() < 0.6 else None,
        }
        relevant = [d.id for d in corpus if matches(d, facets)]
        if len(relevant) <= 2:
            break
    words = [
        rng.choice(CONCEPTS[i][1]) if rng.random() < mismatch else CONCEPTS[i][0] for i in named
    ]
    text = rng.choice(QUERY_TEMPLATES).format(
        type=facets["type"] or "place",
        town=f" in {facets['town']}" if facets["town"] else "",
        a=words[0],
        b=words[1],
        c=f" and {words[2]}" if len(words) > 2 else "",
    )
    return text, relevant, facets


def thesaurus(rng: random.Random, coverage: float, noise: float) -> dict[str, list[str]]:
    """The rule-based expander's knowledge: lay word -> technical terms (noisy, incomplete)."""
    out: dict[str, list[str]] = {}
    for term, lay in CONCEPTS:
        for phrase in lay:
            for word in tokenize(phrase):
                if rng.random() >= coverage:
                    continue
                units = out.setdefault(word, [])
                units.append(term)
                if rng.random() < noise:
                    units.append(rng.choice([t for t, _ in CONCEPTS if t != term]))
    return {w: list(dict.fromkeys(u)) for w, u in sorted(out.items())}


def generate(
    out: Path,
    n_docs: int = 240,
    seen: float = 0.6,
    mismatch: float = 0.8,
    coverage: float = 0.85,
    noise: float = 0.4,
    seed: int = 2026,
) -> dict[str, int]:
    """Write the corpus, queries, qrels and thesaurus under `out`; returns split sizes."""
    rng = random.Random(seed)
    labels = random.Random(f"erm-ids:{seed}")  # ids and file order: not the content's stream
    corpus = documents(rng, n_docs, opaque_ids(labels, "d"))
    doc_words = {w for d in corpus for w in tokenize(d.text)}
    lay_words = {w for _, lay in CONCEPTS for p in lay for w in tokenize(p)}
    assert not doc_words & lay_words, sorted(doc_words & lay_words)
    query_ids = opaque_ids(labels, "q")
    queries: list[dict[str, object]] = []
    judged: dict[str, tuple[str, list[str]]] = {}  # query id -> (split, relevant ids)
    seen_ids = {d.id for d in rng.sample(corpus, round(seen * n_docs))}
    for doc in corpus:
        splits = ["feedback", "feedback", "test"] if doc.id in seen_ids else ["test"]
        texts: set[str] = set()
        for split in splits:
            text, relevant, facets = query(rng, doc, corpus, mismatch)
            while text in texts:
                text, relevant, facets = query(rng, doc, corpus, mismatch)
            texts.add(text)
            qid = next(query_ids)
            meta: dict[str, object] = {
                "target": doc.id,
                "seen": doc.id in seen_ids,
                "split": split,
            }
            if split == "test":  # a feedback query's answer would be recalled, never read
                meta["answer"] = str(doc.year)
                meta["answers"] = sorted({str(d.year) for d in corpus if d.id in relevant})
            queries.append({"_id": qid, "text": text, "metadata": meta})
            judged[qid] = (split, relevant)
    labels.shuffle(corpus)
    labels.shuffle(queries)
    position = {d.id: i for i, d in enumerate(corpus)}
    qrels: dict[str, list[tuple[str, str]]] = {"feedback": [], "test": []}
    for row in queries:  # the shuffled order; a query's documents in corpus order
        split, relevant = judged[str(row["_id"])]
        qrels[split] += [(str(row["_id"]), d) for d in sorted(relevant, key=position.__getitem__)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(exist_ok=True)
    corpus_rows = [{"_id": d.id, "title": "", "text": d.text} for d in corpus]
    write_jsonl(out / "corpus.jsonl", corpus_rows, sort_keys=True)
    write_jsonl(out / "queries.jsonl", queries, sort_keys=True)
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t1" for q, d in rows)]
        (out / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    (out / "thesaurus.json").write_text(
        json.dumps(thesaurus(rng, coverage, noise), indent=1, sort_keys=True) + "\n"
    )
    return {split: len({q for q, _ in rows}) for split, rows in qrels.items()}
