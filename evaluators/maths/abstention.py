"""Does an answer abstain? The DON'T KNOW check of answer_class (seed 003), made to find real abstentions.

Seed 003 classes an answer DON'T KNOW when it holds one of its uncertainty phrases ("i don't know",
"not sure", "no information", ...; `evaluators.maths.text.is_dont_know`, which the `dont_know` metric keeps
exactly). Real RAG and chat answers abstain in other words far more often: "I'm sorry, but I couldn't
find any information about ...", "The document does not provide information about ...", "There is no
single answer ...", "It depends on ...", "As of my last update, I cannot provide ...". `abstains`
keeps the seed's phrases and adds those families, each a regular expression below with the
examples it was written from (the dev parts of EVOUNA and InspectorRAGet, calibration/sets.py; refusals,
"no idea" and "not in my sources" from the answers chat models give when they decline, which those sets barely
hold).
"Restates the question" is not a rule: trivia questions often hold their answer ("the longest word
typed on the top row" -> "typewriter"), and on EVOUNA's dev part such a rule flagged 27 answers that
people judged correct for every evasive one.

An abstention followed by an answer ("I couldn't find X. However, Y is ...") still abstains: the
answerer itself says it is unsure of what follows. Deterministic, pure, no model.
"""
from __future__ import annotations

import re
from functools import lru_cache

from evaluators.maths.text import fold, is_dont_know

_SUBJECT = r"(?:i|we|i'm|i am|i've|i have)"
_INABLE = r"(?:couldn't|could not|can't|cannot|can not|am unable to|was unable to|unable to|am not able to|wasn't able to|was not able to)"
_VERB = r"(?:find|locate|provide|determine|answer|say|tell|identify|confirm|verify|give|access|know|specify)"
_SOURCE = (r"(?:the |this |that |given |provided )*(?:document|documents|documentation|passage|passages|context|contexts|text|article|"
           r"information provided|provided information|search results?|sources?|data)")
_NOT = r"(?:does not|doesn't|do not|don't|did not|didn't|is not|isn't|fails to)"

# family -> pattern (on `evaluators.maths.text.fold` of the answer: lowercase, typographic apostrophes folded)
PATTERNS = {
    # "I'm sorry, but I couldn't find any information about ..."; "I cannot provide the ..."
    "cannot find or provide": rf"\b{_SUBJECT}?\s*{_INABLE} (?:\w+ )?{_VERB}\b",
    # "I do not have information on ..."; "I don't have access to real-time data"
    "has no information": rf"\b{_SUBJECT} (?:do not|don't|did not|didn't) have (?:any |enough |sufficient |specific |the |that |this |such |real-time |access to )*(?:information|data|details|knowledge|access|context)\b",
    # "The document does not provide information about ..."; "the passage doesn't mention"
    "the source is silent": rf"\b{_SOURCE} {_NOT} (?:\w+ )?(?:provide|mention|contain|say|specify|include|state|address|give|discuss|cover|answer|indicate)\b",
    # "... is not mentioned in the document"; "not specified in the provided context"
    "not in the source": rf"\bnot (?:\w+ )?(?:mentioned|provided|specified|stated|given|available|found|included|discussed|addressed) in {_SOURCE}\b",
    # "The answer isn't in the sources I was given"; "that is not something I can answer"
    "not in my sources": rf"\b(?:the answer|the information|that information|this information) (?:is not|isn't) (?:\w+ )?in {_SOURCE}\b|\bnot something {_SUBJECT} (?:can|could) (?:answer|say|tell|help with)\b",
    # "There is no single answer"; "there is no definitive answer"
    "no single answer": r"\bno (?:single|definitive|clear|simple|one|straightforward|universal|exact) (?:answer|definition|explanation)\b",
    # "there is no (specific) information about ..."; "no information is available"
    "no information": r"\b(?:there is|there's|there are) no (?:\w+ )?(?:information|data|details|record|mention|answer)\b",
    # "It depends on ..."; "it really depends"
    "it depends": r"(?:^|[.!?]\s*)it (?:really |all )?depends\b",
    # "it is impossible to say"; "it is difficult to determine"; "hard to tell"
    "impossible to say": r"\b(?:impossible|not possible|difficult|hard|unclear) (?:for me )?to (?:say|determine|know|tell|answer|identify|pinpoint)\b",
    # "Could you please clarify or provide more information?"; "without more context"
    "asks for context": r"\b(?:could you (?:please )?(?:clarify|provide|specify|rephrase)|without (?:more|further|additional) (?:context|information|details)|need (?:more|further|additional) (?:context|information|details))\b",
    # "As an AI, I ..."; "I'm just a text-based AI". ("As of my last update, X was Y" is a hedge
    # before an answer, not an abstention: EVOUNA's people judged most of those correct.)
    "an ai speaking": r"\b(?:as an ai\b|i'm (?:just )?(?:a|an) (?:text-based )?(?:ai|language model))",
    # "The question is unanswerable"; "this question cannot be answered"
    "unanswerable": r"\b(?:unanswerable|cannot be answered|can't be answered|not answerable)\b",
    # "No comment."; "Sorry, I can't help with that question."; "I'd rather not say" (a refusal claims nothing:
    # WRONG would count it as a false answer, which it is not)
    "refuses": rf"(?:^\W*no comment\b|\b{_SUBJECT}\s*(?:{_INABLE}|won't|will not) (?:help|assist)\b(?! but)"
               r"|\bi(?: would|'d) rather not\b|\bi (?:prefer not to|decline to|won't) (?:answer|comment|say)\b)",
    # "I have no idea."; "There is not enough information to answer."; "I'm not certain."
    "no idea or not enough": r"(?:\b(?:i have|i've got|i've) no idea\b|^\W*no idea\b|\b(?:not enough|insufficient|"
                             r"not sufficient) (?:information|context|data|details|evidence)\b"
                             r"|\bi(?:'m| am) (?:not certain|uncertain)\b)",
}
_COMPILED = tuple((name, re.compile(p)) for name, p in PATTERNS.items())


@lru_cache(maxsize=1 << 16)
def abstains(answer: str) -> str | None:
    """Why `answer` abstains (seed 003's phrase or a family of `PATTERNS`), or None."""
    phrase = is_dont_know(answer)
    if phrase:
        return phrase
    text = fold(answer)
    for name, pattern in _COMPILED:
        if pattern.search(text):
            return name
    return None
