"""evaluators/maths/abstention.py: the DON'T KNOW check finds abstentions in other words than seed 003's."""
import pytest

from evaluators.maths.abstention import PATTERNS, abstains
from evaluators.maths.text import is_dont_know


@pytest.mark.parametrize("answer, why", [
    ("I’m sorry, but I couldn’t find any information about a TV station sponsoring the tasting.", "cannot find or provide"),
    ("As of my last update, I cannot provide the name of the player.", "cannot find or provide"),
    ("I'm sorry, I do not have information on which TV station sponsored it.", "has no information"),
    ("The document does not provide information about the method of forecasting.", "the source is silent"),
    ("The passage doesn't mention who built the castle.", "the source is silent"),
    ("The founder is not mentioned in the provided context.", "not in the source"),
    ("There is no specific information about the ship's crew.", "no information"),
    ("There is no single answer to this question; opinions vary.", "no single answer"),
    ("It depends on the region and the season.", "it depends"),
    ("It is impossible to say who was responsible.", "impossible to say"),
    ("Could you please clarify or provide more information?", "asks for context"),
    ("I'm just a text-based AI, so I don't have the ability to feel hunger.", "an ai speaking"),
    ("This question is unanswerable from the passage.", "unanswerable"),
    ("No comment.", "refuses"),
    ("Sorry, I can't help with that question.", "refuses"),
    ("I'm afraid I cannot assist with this request.", "refuses"),
    ("I'd rather not say.", "refuses"),
    ("I have no idea.", "no idea or not enough"),
    ("There is not enough information to answer the question.", "no idea or not enough"),
    ("I'm not certain who wrote it.", "no idea or not enough"),
    ("The answer isn't in the sources I was given.", "not in my sources"),
    ("That's not something I can answer.", "not in my sources"),
    ("I'm afraid I don't have that information.", "has no information"),
    ("The documentation does not say which version introduced it.", "the source is silent"),
])
def test_abstentions_in_other_words(answer, why):
    assert is_dont_know(answer) is None  # seed 003's phrases miss every one of these
    assert abstains(answer) == why


@pytest.mark.parametrize("answer", [
    "The Chipmunks were created by Ross Bagdasarian Sr., known as David Seville.",
    "As of my knowledge cutoff in September 2021, the population of Australia was around 25 million.",
    "On a clothing label, a cross through a circle means 'Do Not Dry Clean'.",
    "The song \"Can't Hold Me Down\" features vocals from Mase.",
    "It depended heavily on trade with Venice.",
    "Longest word typed on the top row: typewriter",
    "Nixon declined to comment on the tapes until 1977.",
    "The press secretary said: no comment on the rumours would be given until the vote.",
    "Aspirin can help with headaches.",
    "Magnan tells him that he cannot help because he is a terrestrial diplomat.",
    "If this is a real issue, get a lawyer: internet strangers can't help you.",
    "She had no idea that the letter had been sent; the detective found it in 1923.",
    "The answer is in the text: the meeting is on Monday.",
    "It is not in the documentation's scope, but the API supports pagination since version 2.3.",
])
def test_answers_that_answer_do_not_abstain(answer):
    assert abstains(answer) is None


def test_seed_phrases_come_first_and_empty_answers_abstain():
    assert abstains("I don't know, it depends.") == "i don't know"
    assert abstains("   ") == is_dont_know("   ")


def test_every_family_has_an_example_above():
    tested = {"cannot find or provide", "has no information", "the source is silent", "not in the source",
              "no information", "no single answer", "it depends", "impossible to say", "asks for context",
              "an ai speaking", "unanswerable", "refuses", "no idea or not enough", "not in my sources"}
    assert tested == set(PATTERNS)
