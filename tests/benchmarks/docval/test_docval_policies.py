"""DocVAL scripted policies on hand-written prompts, OCR-token layout text, HF export guard."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from inspect_ai.model import ChatMessageUser, GenerateConfig

from docket.agents.scripted.policy import PolicyInput
from docket.benchmarks.docval.dataset import SHIPPED, load_documents, to_samples
from docket.benchmarks.docval.prompts import LAYOUT_TEXT
from docket.benchmarks.docval.reference import docval_label_right, docval_oracle
from docket.methods.distill.export import to_hf_dataset

LAYOUT = """Document d. Word-level OCR tokens of the page, one per line as
Token #id: [x1, y1, x2, y2] -> "text":
Token #0: [10, 10, 50, 20] -> "Total"
Token #1: [100, 10, 130, 20] -> "$5.00"
Token #2: [10, 40, 60, 50] -> "Customer"
Token #3: [12, 60, 50, 70] -> "Ann"
Token #4: [53, 61, 90, 70] -> "Lee"

Question: {question}"""


def _state(text: str, **args: object) -> PolicyInput:
    return PolicyInput(
        messages=[ChatMessageUser(content=text)], tools=[], config=GenerateConfig(), args=args
    )


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("What is the total?", "ANSWER: $5.00\nBBOX: [100, 10, 130, 20]"),  # right of the label
        # below the label, but only the first token of a two-token answer
        ("Which customer is it?", "ANSWER: Ann\nBBOX: [12, 60, 50, 70]"),
    ],
)
def test_label_right_answers_from_the_layout(question: str, reply: str) -> None:
    assert docval_label_right(_state(LAYOUT.format(question=question))).text == reply


def test_token_oracle_answers_with_the_union_of_the_tokens_inside_the_gold_box(
    tmp_path: Path,
) -> None:
    question = "Which customer is it?"
    gold = {"question": question, "answers": ["Ann Lee"], "bbox": [11, 59, 91, 71]}
    doc = {"doc_id": "d", "image": "x.jpg", "width": 200, "height": 100, "questions": [gold]}
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(doc) + "\n")
    prompt = LAYOUT.format(question=question)
    # tokens #3 and #4 lie inside the gold box, "Customer" (#2) does not
    reply = docval_oracle(_state(prompt, box="tokens", data=str(data))).text
    assert reply == "ANSWER: Ann Lee\nBBOX: [12, 60, 90, 70]"
    gold_reply = docval_oracle(_state(prompt, data=str(data))).text
    assert gold_reply == "ANSWER: Ann Lee\nBBOX: [11, 59, 91, 71]"
    with pytest.raises(ValueError, match="box='words'"):
        docval_oracle(_state(prompt, box="words", data=str(data)))


def test_oracle_reads_the_data_file_and_validates_format() -> None:
    doc = load_documents(SHIPPED)[0]
    q = doc["questions"][0]
    prompt = f"Document {doc['doc_id']}.\nQuestion: {q['question']}"
    box = [round(v) for v in q["bbox"]]
    assert docval_oracle(_state(prompt)).text == f"ANSWER: {q['answers'][0]}\nBBOX: {box}"
    with pytest.raises(ValueError, match="format='xml'"):
        docval_oracle(_state(prompt, format="xml"))


def test_layout_text_lists_every_ocr_token_and_no_image() -> None:
    doc = load_documents(SHIPPED)[0]
    sample = to_samples([doc], "layout_text")[0]
    assert isinstance(sample.input, list)
    assert len(sample.input) == 1 and isinstance(sample.input[0].content, list)
    assert [c.type for c in sample.input[0].content] == ["text"]
    text = str(sample.input[0].text)
    assert text.startswith(LAYOUT_TEXT.split("{layout}")[0].format(doc_id=doc["doc_id"]))
    assert len(re.findall(r"^Token #\d+: ", text, re.MULTILINE)) == len(doc["ocr"])
    first = doc["ocr"][0]
    assert f'Token #0: [{first[1]}, {first[2]}, {first[3]}, {first[4]}] -> "{first[0]}"' in text
    vision = to_samples([doc], "vision")[0]
    assert isinstance(vision.input, list) and isinstance(vision.input[0].content, list)
    assert [c.type for c in vision.input[0].content] == ["image", "text"]


@pytest.mark.slow  # importing datasets/pyarrow takes seconds
def test_hf_export_saves_or_explains_the_missing_package(tmp_path: Path) -> None:
    rows = [{"id": "a", "errors": [], "corrected": {}, "regions": [], "q": 1.0}]
    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="needs the 'datasets' package"):
            to_hf_dataset(rows, tmp_path / "hf")
    else:
        assert (to_hf_dataset(rows, tmp_path / "hf") / "dataset_info.json").is_file()
