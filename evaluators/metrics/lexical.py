"""Lexical metrics: deterministic string checks of an answer against its reference (seeds 004, 003).

Every metric here is pure text processing, no judge and no model. The text helpers (`normalize`,
`numbers`, `keywords`, `tokens`) are module-level pure functions. The extractions that metrics
share are memoised with `lru_cache`: `normalize` (exact match, keyword coverage, citations, checks,
don't know, completeness's word counts), the numbers of a text (keyword coverage, number match,
number checks), the keywords of a reference and the coverage of a (reference, answer) pair
(keyword coverage and completeness). The caches are sized so that a 100k-sample run scored metric
after metric (the engine's order) still finds the first metric's work when the next one runs, and
they hold plain tuples of str/float, which the garbage collector stops tracking; `clear_caches()`
empties them.

Decisions on what the seeds leave open (the `formula` strings are the short form, shown to users):

* exact_match uses seed 004's normalisation only (lowercase, strip, collapse whitespace):
  punctuation and apostrophe style still count.
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
* An empty reference makes every reference-based metric not applicable (the engine does not skip
  it for us).
* Citation indicators match on word boundaries, also in the plural ("pages", "documents",
  "sources:"); "table:" needs its colon, as in seed 004; each indicator counts once.
* Checks: contains / not_contains / list_items are substring tests that ignore case, whitespace
  runs and apostrophe style; regex runs on the raw answer; a malformed check makes the sample
  `skipped` with the reason (the loader should have refused it: `validate_check`).
* Don't know: seed 003's substring test, but on word boundaries ("no data" does not fire on
  "no database", "none" not on "nonempty") and apostrophe-insensitive ("I don’t know"); phrases are
  tried in seed 003's order; an empty or whitespace-only answer counts as don't know.
"""
from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from numbers import Real
from typing import Any, NamedTuple

from rapidfuzz.distance import LCSseq

from evaluators.metrics.registry import metric
from evaluators.schema import SKIPPED, Result, Sample, not_applicable

__all__ = [
    "Keyword",
    "STOP_WORDS",
    "UNCERTAINTY_PHRASES",
    "CITATION_INDICATORS",
    "CHECK_TYPES",
    "normalize",
    "numbers",
    "keywords",
    "tokens",
    "keyword_coverage_counts",
    "citation_indicators",
    "rouge_l_f1",
    "is_dont_know",
    "validate_check",
    "run_checks",
    "clear_caches",
]

# Big enough that a 100k-sample run scored metric after metric (the engine's order) still finds
# the first metric's extractions when the second one runs.
CACHE_SIZE = 1 << 17

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
CITATIONS_FOR_FULL_SCORE = 3.0

CHECK_TYPES = ("contains", "not_contains", "regex", "number", "list_items")
_CHECK_KEYS = {
    "contains": {"value"},
    "not_contains": {"value"},
    "regex": {"pattern"},
    "number": {"value"},
    "list_items": {"items", "min_share"},
}
NUMBER_REL_TOL = 1e-9
MAX_LISTED = 10  # keywords/numbers listed in a `detail`

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
    return " ".join(text.lower().split())


def _fold(text: str) -> str:
    """`normalize` plus the typographic apostrophe folded to ': the haystack of every match."""
    text = normalize(text)
    return text.replace("\u2019", "'") if "\u2019" in text else text


def _word_count(text: str) -> int:
    """Whitespace-separated words (seed 004's word count), read off the cached normal form."""
    text = normalize(text)
    return text.count(" ") + 1 if text else 0


def _glued(text: str, i: int) -> bool:
    """Whether position i (may be -1) holds a character that glues to what follows it."""
    return i >= 0 and (text[i].isalnum() or text[i] in "_.")


def _read_number(text: str, m: re.Match) -> tuple[int, float] | None:
    """(start including sign and currency, value) of the digits matched by `_NUMBER`, or None."""
    start, raw = m.start(), m.group()
    if start and text[start - 1] == ".":  # ".5", unless the dot belongs to "1.2.5" or "x.5"
        if _glued(text, start - 2):
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
    return frozenset(_number_values(text))


@lru_cache(maxsize=CACHE_SIZE)
def _number_values(text: str) -> tuple[float, ...]:
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


@lru_cache(maxsize=CACHE_SIZE)
def keyword_coverage_counts(reference: str, answer: str) -> tuple[int, int, tuple[str, ...]]:
    """(matched, total, missing keywords) of the reference's keywords in the answer."""
    phrases, nums, words = _keyword_groups(reference)
    total = len(phrases) + len(nums) + len(words)
    if not total:
        return 0, 0, ()
    h = _fold(answer)
    # `t not in h` is the cheap common case; the boundary check only runs on a substring hit
    missing = [t for t in phrases if t not in h or not _contains_word(h, t)]
    if nums:
        found = _number_values(answer)
        missing += [t for t, v in nums if v not in found]
    missing += [t for t in words if t not in h or not _contains_word(h, t)]
    return total - len(missing), total, tuple(missing)


def citation_indicators(answer: str) -> tuple[str, ...]:
    """The distinct seed-004 source indicators in `answer`, in seed 004's order."""
    text = _fold(answer)
    return tuple(label for label, head, pattern in _CITATION if head in text and pattern.search(text))


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


def is_dont_know(answer: str) -> str | None:
    """The uncertainty phrase that makes `answer` a "don't know" (seed 003), or None.

    Phrases are tried in seed 003's order. An empty or whitespace-only answer is a non-answer too:
    returns "(empty answer)".
    """
    text = _fold(answer)
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
    for f in (normalize, _number_values, keywords, _keyword_groups, tokens, keyword_coverage_counts, _compile, _fmt):
        f.cache_clear()


# --------------------------------------------------------------------------------------------------
# Checks (seed 004's EF_1/EF_2/EF_3 generalised)
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


def _is_number(x: Any) -> bool:
    """A finite real that is not a bool (numpy scalars from a Parquet loader included)."""
    return isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(float(x))


def validate_check(check: Any) -> str | None:
    """Why `check` is malformed (one message), or None when it is a valid check."""
    if not isinstance(check, Mapping):
        return f"a check must be an object with a 'type', got {type(check).__name__}"
    kind = check.get("type")
    if kind is None:
        return "the check has no 'type'"
    if kind not in CHECK_TYPES:
        return f"unknown check type {kind!r}; expected one of {', '.join(CHECK_TYPES)}"
    unknown = set(check) - _CHECK_KEYS[kind] - {"type", "name"}
    if unknown:
        return f"unknown key(s) {', '.join(map(repr, sorted(map(str, unknown))))} in a {kind} check"
    if "name" in check and not isinstance(check["name"], str):
        return f"'name' must be a string, got {type(check['name']).__name__}"
    required = "pattern" if kind == "regex" else "items" if kind == "list_items" else "value"
    if required not in check:
        return f"a {kind} check needs '{required}'"
    value = check[required]
    if kind in ("contains", "not_contains", "regex"):
        if not isinstance(value, str):
            return f"'{required}' of a {kind} check must be a string, got {type(value).__name__}"
        if not value.strip():
            return f"'{required}' of a {kind} check is empty"
        if kind == "regex":
            try:
                _compile(value)
            except re.error as exc:
                return f"'pattern' {value!r} is not a valid regular expression: {exc}"
    elif kind == "number":
        if not _is_number(value):
            return (f"'value' of a number check must be a finite number, got {type(value).__name__} "
                    f"{value!r}" + (" (write it without $, % or quotes)" if isinstance(value, str) else ""))
    else:  # list_items
        if not isinstance(value, (list, tuple)) or not value:
            return "'items' of a list_items check must be a non-empty list of strings"
        bad = [i for i, item in enumerate(value) if not isinstance(item, str) or not item.strip()]
        if bad:
            return f"'items' of a list_items check must be non-empty strings; item {bad[0] + 1} is {value[bad[0]]!r}"
        share = check.get("min_share", 1.0)
        if not _is_number(share) or not 0.0 <= share <= 1.0:
            return f"'min_share' of a list_items check must be a number in [0, 1], got {share!r}"
    return None


def _check_name(check: Mapping) -> str:
    if check.get("name"):
        return check["name"]
    kind = check["type"]
    if kind == "regex":
        return f"regex /{check['pattern']}/"
    if kind == "number":
        return f"number {check['value']:.15g}"
    if kind == "list_items":
        return f"list_items ({len(check['items'])} items, min_share {check.get('min_share', 1.0):g})"
    return f"{kind} {check['value']!r}"


def _run_check(check: Mapping, answer: str) -> bool:
    kind = check["type"]
    if kind == "contains":
        return _fold(check["value"]) in _fold(answer)
    if kind == "not_contains":
        return _fold(check["value"]) not in _fold(answer)
    if kind == "regex":
        return _compile(check["pattern"]).search(answer) is not None
    if kind == "number":
        target = float(check["value"])
        found = _number_values(answer)
        return target in found or any(math.isclose(target, x, rel_tol=NUMBER_REL_TOL) for x in found)
    items = check["items"]
    haystack = _fold(answer)
    hits = sum(1 for item in items if _fold(item) in haystack)
    return hits / len(items) >= check.get("min_share", 1.0) - 1e-12


def run_checks(answer: str, checks: Iterable[Mapping]) -> list[tuple[str, bool]]:
    """(name, passed) for every check, in order; ValueError naming the first malformed check.

    contains / not_contains / list_items compare case-, whitespace- and apostrophe-insensitively;
    regex is `re.search` with IGNORECASE; number looks for the value among `numbers(answer)`.
    """
    out = []
    for i, check in enumerate(checks, 1):
        problem = validate_check(check)
        if problem:
            raise ValueError(f"check {i}: {problem}")
        out.append((_check_name(check), _run_check(check, answer)))
    return out


# --------------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------------

_ONE = Result(1.0)
_ZERO = Result(0.0)
_EMPTY_REFERENCE = not_applicable("the reference is empty")
_NO_NUMBERS = not_applicable("no numbers in the reference")
_NO_KEYWORDS = not_applicable("no keywords in the reference")
_NO_CHECKS = not_applicable("no checks for this question")


def _listed(items: Sequence[str]) -> str:
    head = ", ".join(items[:MAX_LISTED])
    return head + (f" (+{len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")


@lru_cache(maxsize=4096)  # reference numbers repeat across methods
def _fmt(x: float) -> str:
    return f"{x:.15g}"


@metric(
    "exact_match", family="lexical", scale="binary", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="1 if normalize(answer) == normalize(reference) else 0; normalize = lowercase, "
            "strip, collapse whitespace runs (seed 004, 'Exact Match').",
)
def exact_match(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        ref = normalize(s.golden.reference)
        if not ref:
            out.append(_EMPTY_REFERENCE)
        else:
            out.append(_ONE if normalize(s.output.answer) == ref else _ZERO)
    return out


@metric(
    "keyword_coverage", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(matched keywords) / (total expected keywords). Keywords of the reference: capitalised "
            "phrases ('Territory 118', 'Rule C-1'), numbers and percentages ('0.305%', '$604'; matched "
            "by value) and important words (4+ letters, not stop words); case-insensitive, on word "
            "boundaries (seed 004).",
)
def keyword_coverage(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        if not s.golden.reference.strip():
            out.append(_EMPTY_REFERENCE)
            continue
        matched, total, missing = keyword_coverage_counts(s.golden.reference, s.output.answer)
        if not total:
            out.append(_NO_KEYWORDS)
            continue
        detail = f"{matched}/{total} reference keywords found"
        if missing:
            detail += f"; missing: {_listed(missing)}"
        out.append(Result(matched / total, detail=detail))
    return out


@metric(
    "number_match", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(matched numbers) / (total expected numbers), over the sets of numeric values of "
            "reference and answer ($, %, thousands separators stripped; '-' is a sign only before "
            "a number, not in 'C-1') (seed 004, 'Number Match').",
)
def number_match(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        if not s.golden.reference.strip():
            out.append(_EMPTY_REFERENCE)
            continue
        expected = _number_values(s.golden.reference)
        if not expected:
            out.append(_NO_NUMBERS)
            continue
        found = _number_values(s.output.answer)
        missing = [v for v in expected if v not in found]
        matched = len(expected) - len(missing)
        detail = f"{matched}/{len(expected)} reference numbers found"
        if missing:
            detail += f"; missing: {_listed([_fmt(v) for v in missing])}"
        out.append(Result(matched / len(expected), detail=detail))
    return out


@metric(
    "answer_completeness", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("reference",),
    formula="(length_score + keyword_score) / 2 with length_score = min(answer_words / "
            "reference_words, 1.0) and keyword_score = keyword_coverage; the length score alone "
            "when the reference has no keywords (seed 004, 'Answer Completeness').",
)
def answer_completeness(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        ref_words = _word_count(s.golden.reference)
        if not ref_words:
            out.append(_EMPTY_REFERENCE)
            continue
        answer_words = _word_count(s.output.answer)
        length_score = min(answer_words / ref_words, 1.0)
        matched, total, _ = keyword_coverage_counts(s.golden.reference, s.output.answer)
        length = f"length {answer_words}/{ref_words} words -> {length_score:.3f}"
        if total:
            value = (length_score + matched / total) / 2
            detail = f"{length}; keywords {matched}/{total} -> {matched / total:.3f}"
        else:
            value = length_score
            detail = f"{length}; no keywords in the reference, so the length score alone"
        out.append(Result(value, detail=detail))
    return out


@metric(
    "citation_quality", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    formula="min(found_indicators / 3.0, 1.0), counting the distinct source indicators 'source:', "
            "'table:', 'page', 'document', 'pdf', 'according to', 'based on', 'from' in the answer "
            "(case-insensitive, on word boundaries) (seed 004, 'Source Citation Quality').",
)
def citation_quality(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    return [_citation_result(citation_indicators(s.output.answer)) for s in samples]


@lru_cache(maxsize=512)  # one Result per set of indicators found (at most 2^8), shared
def _citation_result(found: tuple[str, ...]) -> Result:
    if not found:
        return Result(0.0, detail="no source indicators")
    return Result(min(len(found) / CITATIONS_FOR_FULL_SCORE, 1.0), detail="found: " + ", ".join(found))


@metric(
    "checks_pass_rate", family="lexical", scale="ratio", higher_is_better=True, seed="004",
    needs=("checks",),
    formula="passed checks / total checks of the question; check types contains, not_contains, "
            "regex, number, list_items (seed 004's EF_1/EF_2/EF_3 fact checks, generalised).",
)
def checks_pass_rate(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    # Every method's sample of a question shares its `checks` tuple: validate it and pre-render its
    # JSON once per batch, keyed by identity (stable while `samples` keeps the tuples alive).
    prepared: dict[int, tuple[str | None, list[str]]] = {}
    out = []
    for s in samples:
        checks = s.golden.checks
        if not checks:
            out.append(_NO_CHECKS)
            continue
        prep = prepared.get(id(checks))
        if prep is None:
            prep = prepared[id(checks)] = _prepare_checks(checks)
        error, fragments = prep
        if error:
            out.append(Result(None, SKIPPED, error))
            continue
        answer = s.output.answer
        flags = [_run_check(c, answer) for c in checks]
        detail = "[" + ", ".join([f + ("true}" if ok else "false}") for f, ok in zip(fragments, flags)]) + "]"
        out.append(Result(sum(flags) / len(flags), detail=detail))
    return out


def _prepare_checks(checks: Sequence[Mapping]) -> tuple[str | None, list[str]]:
    """(error, JSON fragments '{"name": ..., "type": ..., "passed": ' of each check)."""
    fragments = []
    for i, check in enumerate(checks, 1):
        problem = validate_check(check)
        if problem:
            return f"malformed checks: check {i}: {problem}", []
        name = json.dumps(_check_name(check), ensure_ascii=False)
        fragments.append(f'{{"name": {name}, "type": "{check["type"]}", "passed": ')
    return None, fragments


@metric(
    "rouge_l", family="lexical", scale="ratio", higher_is_better=True, seed="003",
    needs=("reference",),
    formula="ROUGE-L F1 as GraphRAG-Bench reports it: LCS-based F1 over lowercase word tokens "
            "[a-z0-9]+, no stemming; P = LCS / answer_tokens, R = LCS / reference_tokens, "
            "F1 = 2PR / (P + R), 0 when nothing is in common.",
)
def rouge_l(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        if not tokens(s.golden.reference):
            out.append(_EMPTY_REFERENCE if not s.golden.reference.strip()
                       else not_applicable("the reference has no [a-z0-9] tokens"))
            continue
        out.append(Result(rouge_l_f1(s.output.answer, s.golden.reference)))
    return out


@metric(
    "dont_know", family="lexical", scale="binary", higher_is_better=None, seed="003",
    formula="1 if the answer contains an uncertainty phrase (\"i don't know\", \"i do not know\", "
            "\"unknown\", \"not sure\", \"cannot determine\", \"no information\", \"insufficient "
            "data\", \"unable to answer\", \"cannot answer\", \"don't have enough information\", "
            "\"not available\", \"no data\") or is a very short (< 10 chars) non-answer containing "
            "'unknown', 'n/a', 'none' or 'null', else 0; an empty answer counts as don't know "
            "(seed 003, 'Don't Know Answers Count'; the mean is the share of don't-know answers).",
)
def dont_know(samples: Sequence[Sample], context: Any = None) -> list[Result]:
    out = []
    for s in samples:
        phrase = is_dont_know(s.output.answer)
        out.append(_ZERO if phrase is None else Result(1.0, detail=f"matched {phrase!r}" if phrase != EMPTY_ANSWER else EMPTY_ANSWER))
    return out
