"""The `docket/toy_math` instruction and the teacher's SAR prompts (repair, rewrite, synthesis)."""

from __future__ import annotations

from docket.methods.distill.style_refine import REPAIR_INSTRUCTION

#: `-T style=instructed` (default) appends this to the problem, so a chat model knows the answer
#: format; `style=bare` sends the problem alone (what SAR's trained students read).
INSTRUCTION = "Work it out step by step, then end with the line ANSWER: <number>."
STYLES = ("instructed", "bare")

REPAIR = (
    REPAIR_INSTRUCTION
    + """

Problem: {question}
Solution:
{trace}
End of solution
Reply with the repaired solution only, ending with the line ANSWER: <number>."""
)

REWRITE = """Rewrite this solution so that it is correct and clearly explained, in your own words.

Problem: {question}
Solution:
{trace}
End of solution
Reply with the solution only, ending with the line ANSWER: <number>."""

SOLVE = """Solve this problem step by step.

Problem: {question}
End with the line ANSWER: <number>."""
