"""What a person reads at a glance when checking an answer against its reference, by rule: a contradiction
(the answer states another number, unit, name, direction or yes/no than the reference, or leaves out items of
the list it asks for), or the reference's key stated in full.

The correctness scorer (`correctness.py`) weighs closeness signals that were fitted on real answers; there a
stated contradiction is rare, so a fitted weight cannot carry it ("The Berlin Wall fell in 1991." is as close to
"The Berlin Wall fell in 1989." as a paraphrase is). These rules carry it instead, on the words themselves:

  number     an answer clause that restates a reference clause (`aligned`) states a number the reference never
             states, while that reference clause states one the answer never does ("22 July 1969" for "20 July
             1969"; numbers written as words count: "six" is 6)
  unit       ... a unit the reference never uses, in place of one the answer never uses ("340 miles", "2 MB")
  name       ... a name (a capitalised word inside a sentence) the reference clause does not hold, in place of
             one the answer never names ("bought by Twitter" for "Facebook"; spellings and abbreviations of one
             name paired off: "Shostakovich" and "Shostakovitch", "WWI" and "World War I")
  direction  ... a word of one direction where the reference clause has its opposite ("fell" for "rose",
             "colder" for "hotter", "after" for "before"), with no word of the other side
  negation   ... the same statement with a negation on one side only
  yes/no     to a yes/no question, the answer and the reference take opposite sides ("No, ..." or a restatement
             of the question, negated or not)
  option     to an "X or Y?" question, the answer takes the option the reference does not
  list       the reference is a list ("Red, green and blue.") and the answer leaves out one of its items
  other      the reference's key (what it says beyond the question: one fact, at most two words) goes unstated,
             not even inside a longer word ("handbag" states "bag"), while the answer, restating the question,
             states something else instead ("... is helium." for "Hydrogen ...")

A short reference (at most five words) is compared with every clause of the answer, a sentence with the clauses
that restate it (`_aligned`), a longer reference only when the answer follows it clause by clause (`_FOLLOWS`):
a summary written by someone else tells its own account and names what the reference does not without being wrong.

`states_key` is the other side: nothing contradicted, and every word of the reference's key stated (numbers,
times and direction words compared as values: "six" is 6, "4 pm" is "16:00", "7B" is "7 billion", "reduces" is
"lowers"; a short reference that is a name by its last word, "Beethoven"), or every figure and name the reference
gives beyond the question, or the same side of a yes/no question taken.

Measured on the dev parts (the scorer's P(correct) with and without the rules): EVOUNA AUROC 0.980 -> 0.982;
SQuALITY Pearson 0.640 -> 0.640 (the rules fire on 1 of 504 answers). Pure, deterministic, no model.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from dataclasses import dataclass
from functools import lru_cache

from evaluators.maths.abstention import abstains
from evaluators.judges.offline import NEGATIONS, sentences, stem
from evaluators.maths.text import STOP_WORDS, fold, number_values

_UNITS_WORDS = {
    "km": "kilometre kilometres kilometer kilometers km kms", "mile": "mile miles mi",
    "m": "metre metres meter meters m", "ft": "foot feet ft", "cm": "cm centimetre centimetres centimeter centimeters",
    "mm": "mm millimetre millimetres", "inch": "inch inches", "kg": "kg kilogram kilograms kilo kilos",
    "lb": "lb lbs pound pounds", "tonne": "tonne tonnes ton tons", "kb": "kb kilobyte kilobytes",
    "mb": "mb megabyte megabytes", "gb": "gb gigabyte gigabytes", "tb": "tb terabyte terabytes",
    "°c": "°c celsius centigrade", "°f": "°f fahrenheit", "second": "second seconds",
    "minute": "minute minutes", "hour": "hour hours hourly", "day": "day days daily", "week": "week weeks weekly",
    "month": "month months monthly", "year": "year years yearly annually annual",
}
UNITS = {word: unit for unit, words in _UNITS_WORDS.items() for word in words.split()}

# Opposite directions: a word of one side where the other clause has one of the other side.
_OPPOSITES = (
    ("increase increases increased increasing rise rises rose risen rising raise raises raised grow grows grew "
     "grown growing climb climbs climbed gain gains gained up higher greater",
     "decrease decreases decreased decreasing fall falls fell fallen falling drop drops dropped dropping lower "
     "lowers lowered reduce reduces reduced reducing decline declines declined shrink shrinks shrank down fewer"),
    ("before earlier prior", "after later"),
    ("hotter warmer hot warm", "colder cooler cold cool"),
    ("heavier", "lighter"), ("bigger larger big large", "smaller small"), ("faster quicker", "slower"),
    ("longer", "shorter"), ("taller", "shorter"), ("above", "below"), ("win wins won", "lose loses lost"),
    ("good", "poor bad"), ("true", "false"), ("open opened", "closed shut"),
    ("fresh", "salty salt"), ("minimum least", "maximum most"), ("include includes included", "exclude excludes excluded"),
    ("north northern", "south southern"), ("east eastern", "west western"), ("profit", "loss"),
    ("positive", "negative"), ("success succeeded succeeds", "failure failed fails"),
)
DIRECTION = {word: (i, side) for i, pair in enumerate(_OPPOSITES) for side, words in enumerate(pair)
             for word in words.split()}

_SMALL = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
# "one" is a pronoun as often as a number ("the one that"): a number only before a unit ("one year", `_number_words`)
_WORD_NUMBERS = {w: i for w, i in _SMALL.items() if w != "one"} | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD = re.compile(r"°[cf]\b|[a-z][a-z']*|[0-9]+(?:[.,][0-9]+)*")
_NAME = re.compile(r"(?<=[\s(\"'])[A-Z\u00c0-\u00de][\w'-]*")
_TIME = re.compile(r"\b([01]?[0-9]|2[0-3])(?::([0-5][0-9]))?\s*(?:([ap])\.?m\b\.?)|\b([01]?[0-9]|2[0-3]):([0-5][0-9])\b",
                   re.IGNORECASE)
_AFTERNOON = re.compile(r"\b([0-9]{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) in the "
                        r"(?:afternoon|evening)\b", re.IGNORECASE)
_FILLERS = STOP_WORDS | {"one"}
_MAGNITUDES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9,
               "t": 1e12, "trillion": 1e12}
# single letters only as capitals glued to or right after the number ("7B", "340M"; not "5 m" of metres)
_MAGNITUDE = re.compile(r"\b([0-9]+(?:\.[0-9]+)?)\s?((?i:thousand|million|billion|trillion|mn|bn)|[KMBT])\b")
_ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())
_REQUEST = re.compile(r"^(?:can|could|will|would) you\b")  # "Can you describe ...?" asks for a description
_YES_NO_QUESTION = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|may|must)\b")
_PARENTHESES = re.compile(r"\(([^)]*)\)")
_PERSON = re.compile(r"^[A-Z][\w'.-]*(?:\s+(?:(?:van|von|de|der|den|da|di|du|le|la|del|bin|al)\s+)*[A-Z][\w'.-]*){1,2}$")
_LIST_ITEM_WORDS = 5
_CLAUSE_WORDS = STOP_WORDS - {"a", "an", "the", "of", "for"}  # a list item holding another one is a clause
# A phrase, not a list of things: "On the coasts of Kent and Sussex", "Between Sicily and Italy", "To Bell, who ..."
_NOT_A_LIST = re.compile(r"^(?:on|in|at|to|between|from|by|with|of|into|near|under|over|after|before|during|since|"
                         r"until|among|across)\b|\b(?:who|which|that|where|whose|when)\b", re.IGNORECASE)
_ALIGNED_SHARE = 1 / 3  # an answer clause restates a reference clause when a third of its words are in it ...
_ALIGNED_WORDS = 2  # ... and at least two
# An answer follows a long reference when at least half of its clauses restate one of the reference's (half of their
# words in it or the question): it then tells the same account, and a fact that differs is a contradiction. An answer
# that tells its own account (a summary by another writer) names things the reference does not without being wrong:
# on SQuALITY's dev part the median answer restates 8% of its clauses, 95% of answers at most a third.
_FOLLOWS = 0.5
_CLAUSE_MIN_WORDS = 3
_CLAUSE_BREAK = re.compile(r";\s*|,\s+(?:and|but|while|whereas)\s+")
# A key of at most two words is one fact ("Canberra", "Hydrogen ..." asked which element): an answer that states
# none of it while restating the question states another. A longer key is an explanation, said in other words.
_ONE_FACT = 2
_SAME_NAME = 0.75  # difflib ratio of two spellings of one name
_SAME_STATEMENT = 0.75  # the share of each clause's words the other states, to differ by a negation only


def words(text: str) -> tuple[str, ...]:
    """Lowercase words, numbers as written and °C/°F of `text`; possessives dropped."""
    return tuple(w.removesuffix("'s").strip("'") for w in _WORD.findall(fold(text).replace("-", " ")))


def _number_words(tokens: tuple[str, ...]) -> set[float]:
    out, i = set(), 0
    while i < len(tokens):
        if tokens[i] == "one" and i + 1 < len(tokens) and tokens[i + 1] in UNITS:  # "one year"; not "the one that"
            out.add(1.0)
        elif tokens[i] in _WORD_NUMBERS:
            value = _WORD_NUMBERS[tokens[i]]
            if value >= 20 and i + 1 < len(tokens) and 0 < _WORD_NUMBERS.get(tokens[i + 1], 0) < 10:
                value, i = value + _WORD_NUMBERS[tokens[i + 1]], i + 1  # "twenty five"
            out.add(float(value))
        i += 1
    return out


@dataclass(frozen=True)
class Text:
    """What the rules read of one clause or text."""

    content: frozenset[str]  # stems of the words that are not stop words, numbers as values
    numbers: frozenset[float]
    stated_numbers: frozenset[float]  # the numbers outside parentheses: "GPT-3 (175B)" states GPT-3, notes 175
    units: frozenset[str]
    names: frozenset[str]  # stems of capitalised words that do not open a sentence
    directions: frozenset[tuple[int, int]]
    negated: bool
    initials: frozenset[str]  # the initials of every run of 2-4 words ("uk" of "United Kingdom"), for abbreviations
    options: frozenset[str]  # the words on either side of an "or" ("fresh or salty?")


def _hours(m: re.Match) -> str:
    hour, minute, half = int(m[1] or m[4]), int(m[2] or m[5] or 0), (m[3] or "").lower()
    hour = hour % 12 + 12 * (half == "p") if half else hour
    return f" {hour + minute / 60:g} "


def _magnitude(m: re.Match) -> str:
    return f"{float(m[1]) * _MAGNITUDES[m[2].lower()]:.0f}"


def _pm(m: re.Match) -> str:
    hour = m[1].lower()
    return f"{_SMALL.get(hour, hour)} pm"


@lru_cache(maxsize=1 << 16)
def read(text: str) -> Text:
    text = _TIME.sub(_hours, _AFTERNOON.sub(_pm, text))  # "4 pm", "four in the afternoon", "16:00": 16
    text = _MAGNITUDE.sub(_magnitude, text)  # "7B", "7 bn" and "7 billion" are one number
    tokens = words(text)
    numbers = frozenset(set(number_values(text)) | _number_words(tokens))
    content = {_word(t) for t in tokens
               if (t in DIRECTION or t not in STOP_WORDS) and t not in _WORD_NUMBERS and not t[0].isdigit()}
    names = {_word(w) for sentence in sentences(text) for m in _NAME.finditer(sentence) for w in words(m.group())
             if w not in STOP_WORDS and w not in _ORDINALS and not w[0].isdigit()}
    negations = sum(t in NEGATIONS or t.endswith("n't") for t in tokens[1 if tokens[:1] == ("no",) else 0:])
    initials = {"".join(t[0] for t in tokens[i:i + n]) for n in (2, 3, 4) for i in range(len(tokens) - n + 1)}
    outside = _PARENTHESES.sub(" ", text)
    stated = frozenset(set(number_values(outside)) | _number_words(words(outside)))
    return Text(frozenset(content | {f"#{n:g}" for n in numbers}), numbers, stated,
                frozenset(UNITS[t] for t in tokens if t in UNITS),
                frozenset(names), frozenset(DIRECTION[t] for t in tokens if t in DIRECTION), negations % 2 == 1,
                frozenset(initials), _options(tokens))


def _options(tokens: tuple[str, ...]) -> frozenset[str]:
    """The nearest content word on either side of each "or" ("wettest" and "driest" of "one of the wettest or one
    of the driest")."""
    out = set()
    for i, t in enumerate(tokens):
        if t == "or":
            for side in (reversed(tokens[max(0, i - 4):i]), tokens[i + 1:i + 5]):
                out.update(_word(w) for w in [next((w for w in side if w in DIRECTION or w not in _FILLERS), None)] if w)
    return frozenset(out)


def _word(token: str) -> str:
    """A content word as compared: its stem, its unit ("celsius" is °c) or its direction ("lowers" and "reduces" are
    both ^0:1)."""
    if token in UNITS:
        return UNITS[token]
    if token in DIRECTION:
        pair, side = DIRECTION[token]
        return f"^{pair}:{side}"
    return stem(token)


def clauses(text: str) -> tuple[str, ...]:
    """The sentences of `text`, each split at semicolons and at ", and" / ", but" / ", while" between clauses of a few
    words ("Within 15 minutes; the SLA also says ..."; not "Frankenstein; or, The Modern Prometheus", nor a list's
    ", and blue")."""
    out = []
    for sentence in sentences(text):
        parts = [p.strip() for p in _CLAUSE_BREAK.split(sentence) if p.strip()]
        out.extend(parts if all(len(p.split()) >= _CLAUSE_MIN_WORDS for p in parts) else [sentence])
    return tuple(out)


def _aligned(a: Text, r: Text, question: Text) -> bool:
    shared = len(a.content & (r.content | question.content))
    # a clause of two words restates with one ("They are written in Java." for "... written in Go.")
    return shared >= min(_ALIGNED_WORDS, len(a.content) - 1) and shared >= max(1, _ALIGNED_SHARE * len(a.content))


def _unmatched(new: frozenset[str], missing: frozenset[str], new_spelled_out: frozenset[str],
               missing_spelled_out: frozenset[str]) -> bool:
    """Both sides keep a name after pairing off spellings of one name ("Shostakovich", "Shostakovitch"; "Jr",
    "Jnr"; "TX", "Texas") and dropping abbreviations the other side spells out ("WWI": "World War I")."""
    def close(x: str, y: str) -> bool:
        return SequenceMatcher(None, x, y).ratio() >= _SAME_NAME or (
            len(x) <= 3 and x[0] == y[0] and re.search(".*".join(x), y) is not None)
    new = {n for n in new if n not in new_spelled_out}
    missing = {m for m in missing if m not in missing_spelled_out}
    return any(not any(close(n, m) for m in missing) for n in new) and any(
        not any(close(m, n) for n in new) for m in missing)


def _opposed(a: Text, r: Text) -> str | None:
    for pair, side in a.directions:
        if (pair, 1 - side) in r.directions and (pair, side) not in r.directions and (pair, 1 - side) not in a.directions:
            return "states the opposite direction"
    return None


def _clause_conflict(a: Text, r: Text, answer: Text, reference: Text, question: Text) -> str | None:
    # a number the reference notes in parentheses ("GPT-3 (175B)") is a detail an answer may leave out
    if (a.numbers - reference.numbers - question.numbers) and (r.stated_numbers - answer.numbers):
        return "states a number the reference does not"
    if (a.units - reference.units) and (r.units - answer.units):
        return "states a unit the reference does not"
    # a name the clause it restates does not hold, in place of one the whole answer never states ("The capital is
    # Toronto." for "Its capital is Ottawa.", though the reference names Toronto elsewhere)
    if _unmatched(a.names - r.content - question.content, r.names - answer.content - question.content,
                  reference.initials | question.initials, answer.initials | question.initials):
        return "names someone or something the reference does not"
    if why := _opposed(a, r):
        return why
    shared = len(a.content & r.content)
    if (a.negated != r.negated and shared >= _ALIGNED_WORDS
            and shared >= _SAME_STATEMENT * max(len(a.content), len(r.content))):
        return "negates what the reference states" if a.negated else "states what the reference negates"
    return None


def _stance(text: str, question: Text) -> bool | None:
    """Yes (True) or no (False) to a yes/no question: a leading "yes"/"no", else a restatement of the question
    (half of its words), negated or not."""
    tokens = words(text)
    if tokens[:1] in (("yes",), ("no",)):
        return tokens[0] == "yes"
    t = read(text)
    if question.content and len(t.content & question.content) >= max(_ALIGNED_WORDS, len(question.content) / 2):
        return not t.negated
    return None


def _stances(question: str, answer: str, reference: str) -> tuple[bool, bool] | None:
    """The sides answer and reference take on a yes/no question, when both take one and one of them says "yes" or
    "no" (two restatements of "Can you describe X?" are two descriptions, not two yeses)."""
    asked = fold(question).strip()
    if not _YES_NO_QUESTION.match(asked) or " or " in asked or _REQUEST.match(asked):
        return None
    q = read(question)
    stances = _stance(answer, q), _stance(reference, q)
    said = any(words(text)[:1] in (("yes",), ("no",)) for text in (answer, reference))
    return stances if None not in stances and said else None


def list_items(reference: str) -> tuple[str, ...]:
    """The items of a reference that is one list ("Red, green and blue."; "A, B, C and D"), each of at most
    `_LIST_ITEM_WORDS` words; else ()."""
    text = reference.strip().rstrip(".")
    if len(sentences(text)) != 1 or not re.search(r"\s(?:and|&)\s", text) or _NOT_A_LIST.search(text):
        return ()
    items = [i.strip() for i in re.split(r",\s*(?:and\s+|&\s+)?|\s+(?:and|&)\s+", text) if i.strip()]
    # items are things ("a photo ID", "bank details for payroll"), not clauses ("Mars has two moons")
    if len(items) < 2 or any(len(i.split()) > _LIST_ITEM_WORDS or set(words(i)) & _CLAUSE_WORDS for i in items):
        return ()
    return tuple(items)


def _key(question: Text, reference: Text) -> frozenset[str]:
    """What the reference says beyond the question: to "fresh or salty?", the option it takes ("salty" of "Extremely
    salty"); else its words the question does not hold, or all of them when it only restates the question."""
    chosen = reference.content & question.options
    if len(chosen) == 1:
        return chosen
    return (reference.content - question.content) or reference.content


def contradiction(question: str, answer: str, reference: str) -> str | None:
    """Why a person would call `answer` wrong against `reference` at a glance (module doc), or None."""
    if not answer.strip() or not reference.strip() or abstains(answer):
        return None
    q, a, r = read(question), read(answer), read(reference)
    taken, chosen = r.content & q.options, a.content & q.options
    if len(taken) == 1 and chosen and not taken & chosen:  # "before or after?": "Before: ..." / "... after ..."
        return "takes the other option of the question"
    stances = _stances(question, answer, reference)
    if stances and stances[0] != stances[1]:
        return "answers yes where the reference answers no" if stances[0] else "answers no where the reference answers yes"
    ref_clauses = [read(c) for c in clauses(reference)] or [r]
    pairs = [(c, max(ref_clauses, key=lambda rc: len(c.content & rc.content))) for c in map(read, clauses(answer))]
    if len(ref_clauses) > 1:  # only an answer that follows a long reference clause by clause is compared with it
        restating = sum(len(c.content & (rc.content | q.content)) >= _FOLLOWS * len(c.content) > 0 for c, rc in pairs)
        pairs = [(c, rc) for c, rc in pairs if _aligned(c, rc, q)] if restating >= _FOLLOWS * len(pairs) else []
    elif len(words(reference)) > _LIST_ITEM_WORDS:  # a sentence: with the answer's clauses that restate it
        pairs = [(c, rc) for c, rc in pairs if _aligned(c, rc, q)]
    for c, rc in pairs:
        if why := _clause_conflict(c, rc, a, r, q):
            return why
    if stances:  # the same side of a yes/no question: the rest is how each puts it
        return None
    items = list_items(reference)
    if items and all(read(i).content - q.content for i in items):  # "War and Peace" asked about is not a list
        missing = [i for i in items if not (_key(q, read(i)) <= a.content)]
        if missing:
            return f"leaves out {len(missing)} of the reference's {len(items)} items ({', '.join(missing)})"
    key = _key(q, r)
    if (0 < len(key) <= _ONE_FACT and not any(k in w for k in key for w in a.content)
            and a.content - q.content - r.content and _aligned(a, r, q)):
        return "states something else than the reference"
    return None


def states_key(question: str, answer: str, reference: str) -> bool:
    """The answer states the reference's key (`key_stated`) and contradicts nothing."""
    return contradiction(question, answer, reference) is None and key_stated(question, answer, reference)


def key_stated(question: str, answer: str, reference: str) -> bool:
    """The answer states every word of the reference's key (numbers as values), or every figure and name the
    reference gives beyond the question, or takes the reference's side of a yes/no question; contradictions are
    `contradiction`'s to find."""
    if not answer.strip() or not reference.strip() or abstains(answer):
        return False
    if _stances(question, answer, reference):
        return True
    q, a, r = read(question), read(answer), read(reference)
    # what a reference holds beyond the question: its figures and its names, its opening word among them
    # ("Nitrogen, about 78% of the air.")
    facts = r.stated_numbers - q.numbers
    opening = {_word(w) for w in words(reference)[:1] if reference.strip()[:1].isupper() and w not in STOP_WORDS}
    if facts and facts <= a.numbers and (r.names | opening) - q.content <= a.content:
        return True
    outside = _PARENTHESES.sub(" ", reference)
    forms = [reference, outside]
    if len(outside.split()) <= _LIST_ITEM_WORDS:  # a short answer with an alternative, "0 °C (32 °F)": either will do
        forms.extend(_PARENTHESES.findall(reference))
    if _PERSON.match(outside.strip()):
        forms.append(outside.split()[-1])  # a name by its last word: "Beethoven" for "Ludwig van Beethoven"
    return any((key := _key(q, read(form))) and key <= a.content for form in forms if form.strip())
