"""DocVAL scripted policies on hand-written prompts, word-level layout text, HF export guard."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docket.agents.scripted.docval import docval_label_right, docval_oracle
from docket.agents.scripted.policy import PolicyInput
from docket.benchmarks.docval.dataset import SHIPPED, load_documents, to_samples
from docket.methods.distill.export import to_hf_dataset
from inspect_ai.model import ChatMessageUser, GenerateConfig

LAYOUT = """Document d. OCR regions of the page, one per line as
Region #id: [x1, y1, x2, y2] -> "text":
Region #0: [10, 10, 50, 20] -> "Total"
Region #1: [100, 10, 130, 20] -> "$5.00"
Region #2: [10, 40, 60, 50] -> "Customer"
Region #3: [12, 60, 90, 70] -> "Ann Lee"

Question: {question}"""


def _state(text: str, **args: object) -> PolicyInput:
    return PolicyInput(
        messages=[ChatMessageUser(content=text)], tools=[], config=GenerateConfig(), args=args
    )


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("What is the total?", "ANSWER: $5.00\nBBOX: [100, 10, 130, 20]"),  # right of the label
        ("Which customer is it?", "ANSWER: Ann Lee\nBBOX: [12, 60, 90, 70]"),  # below the label
    ],
)
def test_label_right_answers_from_the_layout(question: str, reply: str) -> None:
    assert docval_label_right(_state(LAYOUT.format(question=question))).text == reply


def test_oracle_reads_the_data_file_and_validates_format() -> None:
    doc = load_documents(SHIPPED)[0]
    q = doc["questions"][0]
    prompt = f"Document {doc['doc_id']}.\nQuestion: {q['question']}"
    box = [round(v) for v in q["bbox"]]
    assert docval_oracle(_state(prompt)).text == f"ANSWER: {q['answers'][0]}\nBBOX: {box}"
    with pytest.raises(ValueError, match="format='xml'"):
        docval_oracle(_state(prompt, format="xml"))


def test_word_granularity_lists_every_word() -> None:
    doc = load_documents(SHIPPED)[0]
    sample = to_samples([doc], "layout_text", "word")[0]
    text = str(sample.input[0].text)  # type: ignore[index]
    assert len(re.findall(r"^Word #\d+: ", text, re.MULTILINE)) == len(doc["words"])
    first = doc["words"][0]
    assert f'Word #0: [{first[1]}, {first[2]}, {first[3]}, {first[4]}] -> "{first[0]}"' in text


@pytest.mark.slow  # importing datasets/pyarrow takes seconds
def test_hf_export_saves_or_explains_the_missing_package(tmp_path: Path) -> None:
    rows = [{"id": "a", "errors": [], "corrected": {}, "regions": [], "q": 1.0}]
    try:
        import datasets  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="needs the 'datasets' package"):
            to_hf_dataset(rows, tmp_path / "hf")
    else:
        assert (to_hf_dataset(rows, tmp_path / "hf") / "dataset_info.json").is_file()
