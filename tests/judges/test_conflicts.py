"""evaluators/judges/conflicts.py: contradictions and stated keys by rule, and their bounds on P(correct)."""
import pytest

from evaluators.judges import conflicts, correctness
from evaluators.judges.conflicts import contradiction, list_items, read, states_key


@pytest.mark.parametrize("question, answer, reference, why", [
    ("What is the capital of Australia?", "The capital of Australia is Sydney.", "Canberra", "something else"),
    ("Who wrote Hamlet?", "Hamlet was written by Christopher Marlowe.", "William Shakespeare wrote Hamlet.", "names"),
    ("When did the Berlin Wall fall?", "The Berlin Wall fell in 1991.", "1989", "number"),
    ("How far apart are London and Paris?", "They are about 340 miles apart.", "About 340 km", "unit"),
    ("How high is Mount Everest?", "Mount Everest is 8,849 feet high.", "8,849 metres", "unit"),
    ("How did net profit change in 2022?", "Net profit fell by 12% in 2022.", "Net profit rose by 12% in 2022.",
     "opposite direction"),
    ("Is the Great Wall visible from the Moon?", "The Great Wall is visible from the Moon.",
     "No, the Great Wall is not visible from the Moon.", "answers yes"),
    ("Can penguins fly?", "Yes, penguins can fly.", "Penguins cannot fly.", "answers yes"),
    ("Can penguins fly?", "Penguins can fly.", "Penguins cannot fly.", "reference negates"),
    ("Was it signed before or after the Revolution?", "It was signed after the Revolution began.",
     "Before: it was signed in 1776, and the Revolution began in 1789.", "other option"),
    ("Which countries make up Scandinavia?", "Scandinavia consists of Norway and Sweden.", "Denmark, Norway and Sweden.",
     "leaves out 1"),
    ("What time does the office close on Fridays?", "The office shuts at 18:00 on Fridays.",
     "On Fridays the office closes at 4 pm.", "number"),
])
def test_a_plain_contradiction_is_named(question, answer, reference, why):
    assert why in contradiction(question, answer, reference)


@pytest.mark.parametrize("question, answer, reference", [
    ("What is the capital of Australia?", "The capital of Australia is Canberra.", "Canberra"),
    ("How many sides does a hexagon have?", "Six.", "6"),
    ("What time does the office close?", "Friday closing time is four in the afternoon.", "The office closes at 4 pm."),
    ("At what temperature does water freeze?", "At 32 degrees Fahrenheit, water freezes.", "0 °C (32 °F)"),
    ("Who composed the Moonlight Sonata?", "I'm fairly confident it was Beethoven.", "Ludwig van Beethoven"),
    ("What happens to air pressure as altitude increases?", "Air pressure drops as you go higher.",
     "Air pressure decreases as altitude increases."),
    ("Is the water of the Dead Sea fresh or salty?", "The water of the Dead Sea is very salty.", "Extremely salty"),
    ("How do the LLaMA models' parameter counts compare across the different versions?",
     "The LLaMA models' parameter counts increase from 7B to 65B across different versions as follows: 7B, 13B, 33B, "
     "and 65B.", "The LLaMA models vary in size from 7 billion parameters to 65 billion parameters, with intermediate "
     "sizes of 13 billion and 33 billion parameters."),
    ("Did the Romans use gunpowder?", "No, the ancient Romans never used gunpowder.",
     "No. Gunpowder was invented in China centuries after the Western Roman Empire fell."),
])
def test_a_correct_answer_states_the_key_and_contradicts_nothing(question, answer, reference):
    assert contradiction(question, answer, reference) is None
    assert states_key(question, answer, reference)


def test_a_request_is_not_a_yes_no_question():
    question = "Can you describe the modifications LLaMA makes to the transformer architecture?"
    reference = "LLaMA incorporates pre-normalization (RMSNorm), the SwiGLU activation function and rotary embeddings."
    assert not states_key(question, "LLaMA makes modifications to the transformer architecture by training on GPUs.",
                          reference)


def test_numbers_times_and_units_are_compared_as_values():
    assert read("A hexagon has six sides.").numbers == {6.0}
    assert read("a six-year term").numbers == {6.0} and read("a six-year term").units == {"year"}
    assert read("a one-year warranty").numbers == {1.0} and read("the one that got away").numbers == frozenset()
    assert read("at 4 pm").numbers == read("at 16:00").numbers == read("four in the afternoon").numbers == {16.0}
    assert read("twenty five").numbers == {25.0}
    assert read("7B").numbers == read("7 billion").numbers == read("7 bn").numbers == {7e9}
    assert read("340M parameters").numbers == {340e6} and read("5 m").numbers == {5.0} and read("2 MB").units == {"mb"}
    assert read("in degrees Celsius").units == read("at 0 °C").units == {"°c"}


def test_lists_are_things_not_clauses_or_phrases():
    assert list_items("A signed contract, a photo ID and bank details for payroll.") == (
        "A signed contract", "a photo ID", "bank details for payroll")
    assert list_items("Hiroshima and Nagasaki.") == ("Hiroshima", "Nagasaki")
    assert list_items("Mars has two moons, Phobos and Deimos.") == ()  # a clause
    assert list_items("On the coasts of Kent and Sussex, England") == ()  # a phrase
    assert list_items("To inventor Alexander Graham Bell, who helped her") == ()
    # a list the question names is not the reference's list
    assert contradiction("Who wrote War and Peace?", "War and Peace is the work of Tolstoy.",
                         "Leo Tolstoy wrote War and Peace.") is None


def test_spellings_and_abbreviations_of_one_name_are_no_conflict():
    assert contradiction("Who composed the Leningrad Symphony?", "It was composed by Dmitri Shostakovich in 1941.",
                         "Dimitri Shostakovitch") is None
    assert contradiction("What did the Treaty of Versailles do?",
                         "It was the 1919 peace settlement that officially concluded WWI between Germany and the Allies.",
                         "It formally ended World War I between Germany and the Allied Powers in 1919.") is None


LONG_REFERENCE = ("Instagram is a photo and video sharing app created by Kevin Systrom and Mike Krieger. It launched "
                  "on iOS in October 2010 and quickly gained millions of users. In April 2012 Facebook agreed to buy "
                  "Instagram for about $1 billion in cash and stock. The app later added Stories, in 2016.")


def test_a_long_answer_that_follows_the_reference_is_read_clause_by_clause():
    follows = ("Instagram was founded by Kevin Systrom and Mike Krieger. It launched for the iPhone in October 2010. "
               "In April 2012 it was bought by {} for around $1 billion in cash and stock.")
    question = "Which company acquired Instagram?"
    assert contradiction(question, follows.format("Facebook"), LONG_REFERENCE) is None
    assert "names" in contradiction(question, follows.format("Twitter"), LONG_REFERENCE)


def test_a_sentence_reference_is_held_only_against_the_clauses_that_restate_it():
    # an extra sentence with figures of its own is not a contradiction of "LLaMA-13B outperforms GPT-3 (175B)"
    reference = "LLaMA-13B outperforms GPT-3 (175B) on most benchmarks, and LLaMA-65B is competitive with Chinchilla-70B."
    answer = ("LLaMA-13B outperforms GPT-3 on most benchmarks despite being 10 times smaller. It was trained on "
              "1.4 trillion tokens by Meta AI.")
    assert contradiction("How does LLaMA-13B compare with GPT-3?", answer, reference) is None


def test_an_answer_telling_its_own_account_is_not_held_to_every_name():
    # a summary by another writer (SQuALITY): it names what the reference does not, and is not wrong for it
    own = ("The story follows a young engineer on Mars who discovers that the colony's water supply is failing. "
           "With help from Dr. Okafor she rebuilds the pumps before the winter storms arrive.")
    reference = ("Commander Hale leads the colony through a hard winter. Supplies run low after the storms damage "
                 "the greenhouse, and Hale must decide who returns to Earth.")
    assert contradiction("What is the plot of the story?", own, reference) is None


def test_the_rules_bound_the_scorers_probability():
    def judged(question, answer, reference):
        x = correctness.signals(question, answer, reference, 0.9, (0.9, 0.9, 0.9), 0.0, 1.0)  # topically close
        return correctness.judge(question, answer, reference, x)

    p, why = judged("What is the capital of Australia?", "The capital of Australia is Sydney.", "Canberra")
    assert p <= correctness.CONTRADICTED_P and "states something else" in why
    p, why = judged("How many sides does a hexagon have?", "Six.", "6")
    assert p >= correctness.STATED_P and "states the reference's key" in why
    # against aliases, one alias stated is enough and a contradiction must hold for every alias
    p, _ = judged("Who was behind The Chipmunks?", "Ross Bagdasarian.", "David Seville/Ross Bagdasarian")
    assert p >= correctness.STATED_P
    assert conflicts.contradiction("Who was behind The Chipmunks?", "Ross Bagdasarian.", "David Seville") is not None
