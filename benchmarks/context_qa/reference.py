"""Reference policies of `docket/context_qa` (benchmarks/context_qa/README.md).

`context_qa_reader` answers from the `Text:` block of the prompt by matching the question's
person and relation to a sentence: 1.0 with `-T context=prompt`, 0.0 without the text.
`context_qa_first_fact` is the no-reasoning position baseline: the last word of the text's first
sentence, whatever was asked (about 1/8 with two people and four facts each).
`context_qa_relation_first` is the chance row of `-T context=prompt`: the first value the text
states for the asked relation, whoever it belongs to (`attacks.relation_first`).
"""

from __future__ import annotations

import re

from docket.agents.scripted.policy import PolicyInput, PolicyReply, policy
from docket.benchmarks.context_qa.attacks import relation_first

UNKNOWN = "unknown"
_TEXT = re.compile(r"^Text:\s*(?P<text>.+?)\s*$", re.MULTILINE)
_QUESTION = re.compile(r"^Question:\s*(?P<question>.+?)\s*$", re.MULTILINE)
#: Question keyword -> the verb phrase of the sentence that states the fact.
_RELATIONS = {
    "live": "lives in",
    "job": "works as a",
    "animal": "keeps a",
    "colour": "likes the colour",
}


def _sentences(prompt: str) -> list[str]:
    found = _TEXT.search(prompt)
    if found is None:
        return []
    return [s.strip() for s in found["text"].split(".") if s.strip()]


def _last_word(sentence: str) -> str:
    return sentence.split()[-1] if sentence.split() else UNKNOWN


@policy("context_qa_reader")
def context_qa_reader(state: PolicyInput) -> PolicyReply:
    """The value stated for the asked person and relation in the prompt's text."""
    prompt = state.last_user_text
    asked = _QUESTION.search(prompt)
    if asked is None:
        return PolicyReply(text=UNKNOWN)
    question = asked["question"]
    names = re.findall(r"\b([A-Z][a-z]+)\b", question)
    relation = next((phrase for key, phrase in _RELATIONS.items() if key in question), None)
    for sentence in _sentences(prompt):
        if relation and names and sentence.startswith(f"{names[-1]} {relation} "):
            return PolicyReply(text=_last_word(sentence))
    return PolicyReply(text=UNKNOWN)


@policy("context_qa_first_fact")
def context_qa_first_fact(state: PolicyInput) -> PolicyReply:
    """The last word of the text's first sentence, ignoring the question."""
    sentences = _sentences(state.last_user_text)
    return PolicyReply(text=_last_word(sentences[0]) if sentences else UNKNOWN)


@policy("context_qa_relation_first")
def context_qa_relation_first(state: PolicyInput) -> PolicyReply:
    """The first value the text states for the asked relation, ignoring whose it is."""
    prompt = state.last_user_text
    text, asked = _TEXT.search(prompt), _QUESTION.search(prompt)
    if text is None or asked is None:
        return PolicyReply(text=UNKNOWN)
    return PolicyReply(text=relation_first(text["text"], asked["question"]))
