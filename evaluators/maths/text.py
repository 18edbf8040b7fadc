"""Text helpers of the lexical metrics and the per-question checks (seeds 004, 003).

Pure functions of their text arguments, no judge and no model: `normalize`, `fold`, `numbers`,
`keywords`, `tokens`, keyword coverage, citation indicators, ROUGE-L and "don't know". The
extractions that metrics share are memoised with `lru_cache`: `normalize` and `fold` (exact match,
keyword coverage, citations, checks, don't know, completeness's word counts), the numbers of a text
(keyword coverage, number match, number checks), the keywords of a reference and the coverage of a
(reference, answer) pair (keyword coverage and completeness). The engine scores all metrics
over one batch of samples before the next, so the first metric's work is found by the others. The
caches that also see references (`CACHE_SIZE`) are large enough to keep a reference's extractions
across the batches of its several methods; those of answers only (`fold`, the coverage of a pair)
only need to span a batch (`ANSWER_CACHE_SIZE`), and are kept small: 100k cached answers cost
memory and time. They hold plain tuples of str/float, which the garbage collector stops tracking;
`clear_caches()` empties them.

Decisions on what the seeds leave open:

* Numbers (ASCII digits): `$ € £ ¥`, `%` and thousands separators ("6,650": groups of exactly 3
  digits, no leading 0) are stripped; a minus is a sign only when it is not glued to a word or
  number, so "-0.133%" is -0.133 but "Rule C-1" gives 1 and the range "5-10" gives 5 and 10; "$-5"
  and "-$5" are -5. Digits glued to a preceding letter ("H2O", "Q3") are not numbers; trailing
  units are ("5km" -> 5); a bare ".5" is 0.5 unless the dot is glued to a word or number ("1.2.3"
  gives 1.2 only). Numbers compare as sets of values: "0.3050" matches "0.305".
* Keywords of the reference, in this order: capitalised phrases (runs of capitalised words,
  optionally continued by plain integers: "Territory 118", "Rule C-1", "GRG 51"), split at stop
  words (so a sentence-initial "The" is dropped and an all-caps sentence is not one phrase), with a
  possessive "'s" removed; then numbers (matched by value); then words of 4+ letters that are not
  stop words. A token inside a kept phrase is not counted again as a number or a word, so "Territory
  118" is one keyword, not three. Keywords are lowercased and de-duplicated (numbers by value). A
  sentence-initial capitalised word is a one-word phrase ("Yes", "Premium"): like a word, but kept
  at any length unless it is a stop word.
* Text keywords match case-insensitively, on word boundaries, ignoring runs of whitespace and the
  typographic apostrophe (’ = ').
* Citation indicators match on word boundaries, also in the plural ("pages", "documents",
  "sources:"); "table:" needs its colon, as in seed 004; each indicator counts once.
* Don't know: seed 003's substring test, but on word boundaries ("no data" does not fire on
  "no database", "none" not on "nonempty") and apostrophe-insensitive ("I don’t know"); phrases are
  tried in seed 003's order; an empty or whitespace-only answer counts as don't know.
"""
from __future__ import annotations

import re
import string
import sys
from collections import Counter
from functools import lru_cache
from typing import NamedTuple

from rapidfuzz.distance import LCSseq

__all__ = [
    "CACHE_SIZE",
    "ANSWER_CACHE_SIZE",
    "Keyword",
    "STOP_WORDS",
    "UNCERTAINTY_PHRASES",
    "EMPTY_ANSWER",
    "CITATION_INDICATORS",
    "normalize",
    "fold",
    "numbers",
    "number_values",
    "keywords",
    "tokens",
    "keyword_coverage_counts",
    "citation_indicators",
    "rouge_l_f1",
    "squad_tokens",
    "token_overlap",
    "is_dont_know",
    "clear_caches",
]

# Big enough to keep a reference's extractions while its other methods' samples are scored,
# possibly in later batches (the engine orders samples by method).
CACHE_SIZE = 1 << 17
# An answer's extractions are shared by the metrics of its batch (the engine's are 1,000 samples).
ANSWER_CACHE_SIZE = 1 << 12

# Stop words: an NLTK-style English list with contractions and a few fillers. Used for "important words"
# and to split/strip capitalised phrases. "yes"/"no" are deliberately absent: on a yes/no question
# they are the answer (seed 004's EF_2 checks `has_yes`).
STOP_WORDS = frozenset("""
a about above after again against all also although am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does doesn't
doing don't down during each either else etc even ever every few for from further had hadn't has
hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's
however i i'd i'll i'm i've if in into is isn't it it's its itself just let's like many may me
might more most much must mustn't my myself neither nor not now of off on once only onto or other
others otherwise ought our ours ourselves out over own per rather same shall shan't she she'd she'll
she's should shouldn't since so some still such than that that's the their theirs them themselves
then there there's therefore these they they'd they'll they're they've this those though through
thus to too toward towards under unless until up upon us very via was wasn't we we'd we'll we're
we've were weren't what what's whatever when when's where where's whether which while who who's
whom whose why why's will with within without won't would wouldn't you you'd you'll you're you've
your yours yourself yourselves
""".split())

# Seed 003, section 11 (the 12-phrase list).
UNCERTAINTY_PHRASES = (
    "i don't know",
    "i do not know",
    "unknown",
    "not sure",
    "cannot determine",
    "no information",
    "insufficient data",
    "unable to answer",
    "cannot answer",
    "don't have enough information",
    "not available",
    "no data",
)
# Seed 003: "very short non-answers" (< 10 characters) containing one of these.
SHORT_NON_ANSWERS = ("unknown", "n/a", "none", "null")
SHORT_ANSWER_CHARS = 10
EMPTY_ANSWER = "(empty answer)"

# Seed 004, "Source Citation Quality", matched on word boundaries (plural allowed: "pages").
CITATION_INDICATORS = ("source:", "table:", "page", "document", "pdf", "according to", "based on", "from")

# --------------------------------------------------------------------------------------------------
# Compiled patterns. Python's `re` scans fast only for a pattern that starts with a literal or a
# character class, so boundary lookbehinds come after the first character, not before it.
# --------------------------------------------------------------------------------------------------

# 1,234,567(.89) (groups of exactly 3, no leading 0) | 12(.5), ASCII digits; not glued to a
# preceding word character.
# Sign, currency and a ".5" without its 0 are read off the preceding characters in `_read_number`.
_NUMBER = re.compile(r"[0-9](?<!\w[0-9])(?:(?<=[1-9])[0-9]{0,2}(?:,[0-9]{3})+(?![0-9])|[0-9]*)(?:\.[0-9]+)?")
_CURRENCY = "$€£¥"
_MINUS = "-\u2212"
_SPECIAL_BEFORE_NUMBER = frozenset(_CURRENCY + _MINUS + ".")
_CAP = r"[A-ZÀ-ÖØ-Þ]\w*(?:['\-]\w+)*"
_ID = r"\d+(?![\w%]|[.,]\d)"  # a plain integer continuing a name: "Territory 118", "GRG 51"
_PHRASE = re.compile(rf"[A-ZÀ-ÖØ-Þ](?<![\w'\-].)\w*(?:['\-]\w+)*(?:[ \t\u00a0]+(?:{_CAP}|{_ID}))*")
# words of letters, with inner apostrophes but without a possessive "'s"
_WORD = re.compile(r"[^\W\d_](?<![\w'].)[^\W\d_]*(?:'(?!s(?![^\W\d_]))[^\W\d_]+)*")
_WORD_ASCII = re.compile(r"[a-z](?<![a-z0-9_'].)[a-z]*(?:'(?!s(?![a-z]))[a-z]+)*")  # same, on lowercase ASCII
_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")
_ROUGE_BYTES = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256))
_NON_WORD = re.compile(r"\W")
_NON_WORD_BYTES = bytes(c if chr(c).isalnum() or c == ord("_") else 32 for c in range(256))  # on ASCII only
# Each citation indicator as (literal head, tail); matched on the lowercased answer.
_CITATION_PARTS = {
    "source:": ("source", r"s?\s*:"),
    "table:": ("table", r"s?\s*:"),
    "page": ("page", r"s?(?!\w)"),
    "document": ("document", r"s?(?!\w)"),
    "pdf": ("pdf", r"s?(?!\w)"),
    "according to": ("according", r"\s+to(?!\w)"),
    "based on": ("based", r"\s+on(?!\w)"),
    "from": ("from", r"(?!\w)"),
}
_CITATION = tuple(
    (label, head, re.compile(rf"{re.escape(head)}(?<!\w{re.escape(head)}){_CITATION_PARTS[label][1]}"))
    for label in CITATION_INDICATORS
    for head in [_CITATION_PARTS[label][0]]
)


def _on_word_boundaries(phrase: str) -> re.Pattern:
    p = re.escape(phrase)
    return re.compile(rf"{p}(?<!\w{p})(?!\w)" if phrase[0].isalnum() else rf"{p}(?!\w)")


_DONT_KNOW = tuple((p, _on_word_boundaries(p)) for p in UNCERTAINTY_PHRASES)
_SHORT_NON_ANSWER = tuple((p, _on_word_boundaries(p)) for p in SHORT_NON_ANSWERS)

# --------------------------------------------------------------------------------------------------
# Text helpers (pure, memoised)
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=CACHE_SIZE)
def normalize(text: str) -> str:
    """Seed 004's normalisation: lowercase, strip, collapse runs of whitespace."""
    low = text.lower()
    # Most texts are single-spaced already: split + join would only rebuild them, at twice the cost
    # of this test. The test is exact: every whitespace character but " " is unprintable.
    if low.isprintable() and "  " not in low and low[:1] != " " and low[-1:] != " ":
        return low
    return " ".join(low.split())


@lru_cache(maxsize=ANSWER_CACHE_SIZE)  # several metrics and checks match against the same answer
def fold(text: str) -> str:
    """`normalize` plus the typographic apostrophe folded to ': the haystack of every match."""
    text = normalize(text)
    return text.replace("\u2019", "'") if "\u2019" in text else text


def _glued(text: str, i: int) -> bool:
    """Whether position i (may be -1) holds a character that glues to what follows it."""
    return i >= 0 and (text[i].isalnum() or text[i] in "_.")


def _read_number(text: str, m: re.Match) -> tuple[int, float] | None:
    """(start including sign and currency, value) of the digits matched by `_NUMBER`, or None."""
    start, raw = m.start(), m.group()
    if start and text[start - 1] == ".":  # ".5", unless the dot belongs to "1.2.5", "x.5" or ".5.3"
        if _glued(text, start - 2) or "." in raw:  # ".5.3" (a version) is no number: float("0.5.3") fails
            return None
        start -= 1
        raw = "0." + raw
    if start and text[start - 1] in _CURRENCY:
        start -= 1
    value = float(raw.replace(",", "")) if "," in raw else float(raw)
    # a minus is a sign only when it is not a hyphen glued to a word or number ("C-1", "5-10")
    if start and text[start - 1] in _MINUS and not _glued(text, start - 2):
        start -= 1
        value = -value
    return start, value


def numbers(text: str) -> frozenset[float]:
    """The numeric values in `text` ($, %, thousands separators stripped; see the module doc)."""
    return frozenset(number_values(text))


@lru_cache(maxsize=CACHE_SIZE)
def number_values(text: str) -> tuple[float, ...]:
    """`numbers(text)` as a tuple in order of first appearance: what the metrics use and the cache
    keeps (a tuple of floats leaves the garbage collector's books; a frozenset never does)."""
    out: dict[float, None] = {}
    for m in _NUMBER.finditer(text):
        start = m.start()
        if start and text[start - 1] in _SPECIAL_BEFORE_NUMBER:
            read = _read_number(text, m)
            if read is not None:
                out[read[1]] = None
        else:  # the common case, a number after a space: no sign, currency or bare dot to read
            raw = m.group()
            out[float(raw.replace(",", "")) if "," in raw else float(raw)] = None
    return tuple(out)


class Keyword(NamedTuple):
    text: str  # lowercased; for a number, as written ("0.305%", "$604")
    kind: str  # "phrase", "number" or "word"
    value: float | None = None  # the numeric value of a "number"


def _strip_possessive(token: str) -> str:
    return token[:-2] if token.endswith("'s") and len(token) > 2 else token


def _take_phrases(text: str, out: list[str]) -> str:
    """Append the capitalised phrases of `text` to `out`; return `text` with each kept phrase
    replaced by "_", so its words and numbers are not taken again (and a "-" after it stays a
    hyphen: "Territory 118-120")."""

    def replace(m: re.Match) -> str:
        toks = m.group().split()
        if len(toks) == 1:  # the common case: one capitalised word
            low = toks[0].lower()
            if low in STOP_WORDS:
                return toks[0]
            out.append(_strip_possessive(low))
            return "_"
        pieces, segment = [], []
        for tok in (*toks, None):
            if tok is not None and tok.lower() not in STOP_WORDS:
                segment.append(tok)
                continue
            lead = 0
            while lead < len(segment) and segment[lead][0].isdigit():
                lead += 1  # a name starts with a word; a leading number stays a number
            pieces.extend(segment[:lead])
            if lead < len(segment):
                out.append(" ".join(_strip_possessive(t.lower()) for t in segment[lead:]))
                pieces.append("_")
            if tok is not None:
                pieces.append(tok)
            segment = []
        return " ".join(pieces)

    return _PHRASE.sub(replace, text)


@lru_cache(maxsize=4096)  # for callers outside the metrics, which use `_keyword_groups`
def keywords(text: str) -> tuple[Keyword, ...]:
    """Seed 004's keywords of `text`: its capitalised phrases, then its numbers, then its important
    words, each in order of appearance, lowercased and de-duplicated (see the module doc)."""
    phrases, nums, words = _keyword_groups(text)
    return (
        *(Keyword(t, "phrase") for t in phrases),
        *(Keyword(t, "number", v) for t, v in nums),
        *(Keyword(t, "word") for t in words),
    )


@lru_cache(maxsize=CACHE_SIZE)
def _keyword_groups(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...], tuple[str, ...]]:
    """The keywords of `text` as (phrases, (number as written, value) pairs, words). Plain tuples
    of str and float: cached by the hundred thousand, they stay off the garbage collector's books
    (named tuples do not)."""
    text = text.replace("\u2019", "'")
    found: list[str] = []
    rest = _take_phrases(text, found)
    phrases = tuple(dict.fromkeys(found))
    nums: list[tuple[str, float]] = []
    seen_values: set[float] = set()
    for m in _NUMBER.finditer(rest):
        read = _read_number(rest, m)
        if read is None:
            continue
        (start, value), end = read, m.end()
        if value not in seen_values:
            seen_values.add(value)
            if rest.startswith("%", end) or rest.startswith(" %", end):
                end = rest.index("%", end) + 1
            nums.append((rest[start:end].lower().replace(" ", ""), value))
    rest = rest.lower()
    taken = set(phrases)
    words = tuple(
        w for w in dict.fromkeys((_WORD_ASCII if rest.isascii() else _WORD).findall(rest))
        if len(w) >= 4 and w not in STOP_WORDS and w not in taken
    )
    return phrases, tuple(nums), words


@lru_cache(maxsize=CACHE_SIZE)
def tokens(text: str) -> tuple[str, ...]:
    """ROUGE tokens: `[a-z0-9]+` runs of the lowercased text (rouge-score's tokenizer, no stemming)."""
    # interned: cached token tuples then share one string per distinct word
    return tuple(map(sys.intern, _tokens(text)))


def _tokens(text: str) -> tuple[str, ...]:
    low = text.lower()
    if low.isascii():  # same tokens, twice as fast: every byte but [a-z0-9] becomes a space
        return tuple(low.encode().translate(_ROUGE_BYTES).decode().split())
    return tuple(_ROUGE_TOKEN.findall(low))


def _contains_word(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` with no word character right before or after it."""
    n = len(needle)
    i = haystack.find(needle)
    while i != -1:
        j = i + n
        before = haystack[i - 1] if i else " "
        after = haystack[j] if j < len(haystack) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        i = haystack.find(needle, i + 1)
    return False


@lru_cache(maxsize=ANSWER_CACHE_SIZE)
def keyword_coverage_counts(reference: str, answer: str) -> tuple[int, int, tuple[str, ...]]:
    """(matched, total, missing keywords) of the reference's keywords in the answer."""
    phrases, nums, words = _keyword_groups(reference)
    total = len(phrases) + len(nums) + len(words)
    if not total:
        return 0, 0, ()
    h = fold(answer)
    # A keyword of word characters only (most) is on word boundaries iff " keyword " is in the
    # answer with every non-word character made a space: one substring test. Others ("rule c-1",
    # "territory 118") take the boundary check, only after a substring hit.
    hw = _spaced_words(h)
    missing = [t for t in phrases if not (f" {t} " in hw if t.isalnum() else t in h and _contains_word(h, t))]
    if nums:
        found = number_values(answer)
        missing += [t for t, v in nums if v not in found]
    missing += [t for t in words if not (f" {t} " in hw if t.isalnum() else t in h and _contains_word(h, t))]
    return total - len(missing), total, tuple(missing)


def _spaced_words(text: str) -> str:
    """`text` with every non-word character (not `\\w`, i.e. not alphanumeric or "_") made a space,
    and a space added at both ends."""
    if text.isascii():  # the same, 25x faster than the regex
        return f" {text.encode().translate(_NON_WORD_BYTES).decode()} "
    return f" {_NON_WORD.sub(' ', text)} "


def citation_indicators(answer: str) -> tuple[str, ...]:
    """The distinct seed-004 source indicators in `answer`, in seed 004's order."""
    text = fold(answer)
    return tuple([label for label, head, pattern in _CITATION if head in text and pattern.search(text)])


def rouge_l_f1(answer: str, reference: str) -> float:
    """ROUGE-L F1 over `tokens`; 0.0 when either side has no token or nothing is in common."""
    # An answer is scored once, so its tokens skip the cache (they would be most of its memory).
    a, r = _tokens(answer), tokens(reference)
    if not a or not r:
        return 0.0
    lcs = LCSseq.similarity(a, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(a), lcs / len(r)
    return 2 * p * rec / (p + rec)


_SQUAD_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


@lru_cache(maxsize=CACHE_SIZE)
def squad_tokens(text: str) -> tuple[str, ...]:
    """The official SQuAD v2 evaluation script's `get_tokens(normalize_answer(text))`: lowercase, ASCII
    punctuation removed, the articles a/an/the removed, split on whitespace."""
    return tuple(_SQUAD_ARTICLES.sub(" ", text.lower().translate(_SQUAD_PUNCTUATION)).split())


def token_overlap(candidate: str, reference: str) -> tuple[float, float, float]:
    """(precision, recall, F1) of the candidate's `squad_tokens` against the reference's, counting
    repeated tokens as SQuAD does; both empty -> 1.0 each, one empty -> 0.0 each."""
    c, r = squad_tokens(candidate), squad_tokens(reference)
    if not c or not r:
        same = float(not c and not r)
        return same, same, same
    common = sum((Counter(c) & Counter(r)).values())
    if not common:
        return 0.0, 0.0, 0.0
    p, rec = common / len(c), common / len(r)
    return p, rec, 2 * p * rec / (p + rec)


def is_dont_know(answer: str) -> str | None:
    """The uncertainty phrase that makes `answer` a "don't know" (seed 003), or None.

    Phrases are tried in seed 003's order. An empty or whitespace-only answer is a non-answer too:
    returns "(empty answer)".
    """
    text = fold(answer)
    if not text:
        return EMPTY_ANSWER
    for phrase, pattern in _DONT_KNOW:
        if phrase in text and pattern.search(text):
            return phrase
    if len(text) < SHORT_ANSWER_CHARS:
        for phrase, pattern in _SHORT_NON_ANSWER:
            if phrase in text and pattern.search(text):
                return phrase
    return None


def clear_caches() -> None:
    """Empty this module's memo caches (not the checks' compiled regexes nor the metrics' own)."""
    for f in (normalize, fold, number_values, keywords, _keyword_groups, tokens, keyword_coverage_counts, squad_tokens):
        f.cache_clear()
