"""The offline judge: a deterministic heuristic that fills a sample's claim matrix without an LLM.

It is the default judge (no key, no network), and it is a heuristic, not a language model: every
score made from its matrices carries judge='offline' (`JUDGE`), and the UI labels them as such.

Method
------
* Claims (`segment_claims`): the text is split into sentences (at line breaks, after list markers,
  and at .!? unless the period closes an abbreviation or an initial, or a lowercase word follows),
  then into clauses at ";" and at "and"/"but" joins whose two sides are both clause-sized
  (`MIN_CLAUSE_WORDS_*`; the left side counts from its last comma, so the list "Uganda, Sudan, and
  Egypt" stays whole). Questions, first-person abstentions ("I don't know ...") and pieces without
  a content word are dropped, as seed 003's extraction prompt asks. A short answer is one claim.
* Units: a chunk, or the other side's text, is compared piece by piece, never as one embedding:
  its sentences, plus their clauses when a sentence splits.
* One unit's verdict on one claim (`unit_verdict`). The unit *matches* the claim when the claim's
  content-word coverage is at least `COVERAGE_MATCH` (content words: lowercase, stop words,
  numbers and negations left out, compared after `stem`, which folds plural s, -ed, -ing, -ly, a
  final e and y/i) or their MiniLM cosine is at least `COSINE_MATCH`. A matching unit
    - contradicts the claim when a negation (not, no, never, n't, ...) bears on the shared words
      on one side only (its scope: the comma-, colon- or bracket-delimited segment it sits in),
      or when the claim has a number the unit does not state while the unit states other numbers
      ("born in 1879" vs "born in 1897");
    - leaves it not_found when the claim has a number and the unit states none (the chunk is
      silent, not contrary), or a proper name (a capitalised word not starting the claim) that
      the whole chunk lacks ("born in Spain" vs "born in Germany", which MiniLM finds close);
    - supports it otherwise.
  Verdicts over units and over chunks combine as `evaluators.claims.combine` does: supported by
  any wins, then contradicted by any, else not_found.
* The same test gives reference claims vs chunks (attributable?), answer claims vs the reference
  (TP/FP) and reference claims vs the answer (covered?).
* Chunk relevance: the cosine of the question and the chunk's most similar sentence, relevant from
  `RELEVANCE_COSINE`; the score is that cosine x 100, rounded.
* `build_matrices` embeds every distinct text of a batch in one `embeddings.encode` call; text
  features are memoised, so a chunk retrieved by several methods is read once.

Limits (why the UI calls it a heuristic)
----------------------------------------
* all-MiniLM-L6-v2 is a similarity model, not an NLI model: it measures "about the same thing",
  not "entails". A paraphrase below `COSINE_MATCH` with few shared words is not_found ("must make
  sure" vs "are required to ensure"), and a change that is neither a number, a negation nor a
  name ("rose" vs "fell", "largest" vs "smallest", "people's blood" vs "martyrs' blood") is
  supported when enough words are shared.
* Contradictions are numbers and negations only; units are not converted ("4,350 miles" vs
  "7,000 kilometers" is a contradiction), and numbers in words ("ten") are not numbers.
* Claims are clauses, not atomic facts with resolved pronouns: "it was built in 1150" stays as is,
  and a clause split off an "and" has no subject of its own. A fact spread over two sentences
  of a chunk is found only through the cosine.
* Chunk relevance is similarity to the question, not usefulness for the answer: a chunk that
  restates the question's topic without answering it is relevant.
* Texts longer than 256 word pieces are embedded from their beginning only (the model's limit);
  coverage still reads every word.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from evaluators import embeddings
from evaluators.claims import CONTRADICTED, NOT_FOUND, SUPPORTED, ChunkRelevance, ClaimMatrix, combine
from evaluators.schema import Chunk, Sample
from evaluators.text import STOP_WORDS, fold, number_values

JUDGE = "offline"

# Thresholds, checked against RAGChecker's 59 labelled response-claim x chunk pairs (shared/data/
# ragchecker_examples), seed 000's case study, seed 002's examples, some hand-made same-topic pairs
# and the demo data (tests/test_offline_judge.py). RAGChecker's accuracy is flat over the whole
# grid coverage 0.6-0.9 x cosine 0.6-0.8 (0.85-0.88; answering not_found throughout gives 0.73),
# so the values below are set by what they mean, not fitted to those 59 pairs.
# Coverage: 0.8 asks for every content word of a claim of up to 4 and lets a claim of 5 or more
# miss one ("also", an adjective); 0.75 would let "the old castle was destroyed by fire" match
# "the old castle was damaged by fire".
COVERAGE_MATCH = 0.8
# Cosine: in hand-made pairs, MiniLM gives same-topic sentences that state different facts up to
# 0.71 ("data can be processed with consent" vs "... only if necessary for the public interest";
# 0.85 for two that differ only in a number, which the numbers check catches) and close
# paraphrases 0.83-0.98; 0.75 sits between, giving up the looser paraphrases (0.4-0.74).
COSINE_MATCH = 0.75
# Relevance, measured on the demo data: chunks holding the reference answer or most of its
# evidence have a best question-sentence cosine of 0.41-0.73 (5th-95th percentile, median 0.57);
# chunks retrieved for another question of the same book 0.17-0.54 (median 0.33). 0.45 keeps 90 %
# of the former and 16 % of the latter (0.5: 77 % and 8 %), the best split of the two.
RELEVANCE_COSINE = 0.45
# Content words (or numbers) each side of an "and"/"but" join for it to be split into two claims.
# A comma before the conjunction marks a clause boundary more often than a bare "and" does ("smoke
# detectors and carbon monoxide alarms"), so the bare join asks for more.
MIN_CLAUSE_WORDS_AFTER_COMMA = 2
MIN_CLAUSE_WORDS_BARE = 3
# Cosines are rounded before they are compared: the same pair embedded in a batch of a different
# make-up can differ in the 7th decimal, and a verdict must not flip on that.
COSINE_DECIMALS = 4

NEGATIONS = frozenset({"not", "no", "never", "cannot", "none", "nothing", "nobody", "neither", "nor"})
# Words a period after which does not end a sentence (lowercase, without the period).
ABBREVIATIONS = frozenset({
    "mr", "mrs", "ms", "dr", "st", "prof", "rev", "jr", "sr", "mt", "ft", "vs", "etc", "eg", "ie", "fig",
    "vol", "ch", "pp", "approx", "ca", "cf", "inc", "ltd", "co", "corp",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
})

# Sentences that claim nothing, as seed 003's extraction prompt wants them left out: questions,
# and the answerer saying it does not know (first person only: "the author is unknown" is a claim).
ABSTENTIONS = ("i don't know", "i do not know", "i'm not sure", "i am not sure", "unable to answer",
               "cannot answer", "don't have enough information")
_ABSTENTION = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, ABSTENTIONS)) + r")(?!\w)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_DOTTED = re.compile(r"(?:\w\.)+\w")  # "u.s", "e.g": the word before a final period
_CONJUNCTION = re.compile(r"(,?)\s+(?:and|but)\s+", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Where the scope of a negation ends, roughly: punctuation inside a sentence.
_SEGMENT_BREAK = re.compile(r"[,;:()\[\]\u2013\u2014]|--")
_CAPITALISED = re.compile(r"(?<![\w'])[A-Z\u00c0-\u00de][\w'-]*")


# --------------------------------------------------------------------------------------------------
# Text: sentences, claims, content words
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def sentences(text: str) -> tuple[str, ...]:
    """The sentences of `text`: split at line breaks and at .!? before a word that is not
    lowercase, unless the period closes an abbreviation or an initial ("St. Michael", "J. Smith")."""
    out = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line)
        start = 0
        for m in _SENTENCE_END.finditer(line):
            if m.end() < len(line) and line[m.end()].islower():
                continue
            if line[m.start()] == "." and _is_abbreviation(line[:m.start()]):
                continue
            out.append(line[start:m.end()].strip())
            start = m.end()
        out.append(line[start:].strip())
    return tuple(s for s in out if s)


def _is_abbreviation(before_period: str) -> bool:
    """Whether the word before a period is an abbreviation, an initial or dotted ("U.S", "e.g")."""
    m = _WORD_BEFORE.search(before_period)
    if not m:
        return False
    word = m.group(1).lower()
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or bool(_DOTTED.fullmatch(word))


@lru_cache(maxsize=1 << 16)
def segment_claims(text: str) -> tuple[str, ...]:
    """The claims of `text`: its sentences split into clauses (module doc), without questions,
    abstentions and pieces that have no content word; empty text -> ()."""
    claims = []
    for sentence in sentences(text):
        if sentence.endswith("?") or _ABSTENTION.search(fold(sentence)):
            continue
        for part in sentence.split(";"):
            claims.extend(_split_conjunctions(part))
    return tuple(dict.fromkeys(c for c in (_tidy(p) for p in claims) if _features(c).size))


def _split_conjunctions(text: str) -> list[str]:
    """Split `text` at ", and", ", but", " and ", " but " where both sides are clause-sized.

    The left side counts from its last comma and the right side up to its first one, so the
    items of a list ("red, white, and blue") are never separate claims."""
    pieces, start = [], 0
    for m in _CONJUNCTION.finditer(text):
        need = MIN_CLAUSE_WORDS_AFTER_COMMA if m.group(1) else MIN_CLAUSE_WORDS_BARE
        left = text[start:m.start()].rsplit(",", 1)[-1]
        right = text[m.end():].split(",", 1)[0]
        if _features(left).size >= need and _features(right).size >= need:
            pieces.append(text[start:m.start()])
            start = m.end()
    pieces.append(text[start:])
    return pieces


def _tidy(piece: str) -> str:
    return piece.strip().strip(",;:").strip()


def stem(word: str) -> str:
    """A crude, deterministic suffix fold: plural s, -ed, -ing, -ly, then a final e, and y -> i,
    so "disabilities"/"disability", "changes"/"changed"/"change" meet. Both sides go through it,
    so over-folding only merges a few unrelated words."""
    for suffix in ("ing", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[:-len(suffix)]
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]
    if len(word) > 3 and word[-1] == "y":
        word = word[:-1] + "i"
    return word


@dataclass(frozen=True)
class Features:
    """What the support test reads of a text, besides its embedding."""

    words: frozenset[str]  # stems of the content words (no stop words, numbers or negations)
    numbers: frozenset[float]
    negated_segments: tuple[frozenset[str], ...]  # content words of each segment with a negation
    names: frozenset[str]  # stems of capitalised words that do not start the text

    @property
    def size(self) -> int:
        """Content words plus numbers: whether a piece says anything ("1879" does)."""
        return len(self.words) + len(self.numbers)

    def negates_any_of(self, words: frozenset[str]) -> bool:
        """Whether a negation sits in a segment that mentions one of `words`: in "warm as summer,
        yet with a brightness that summer never has, the home of Arthur" the "never" says
        nothing about "the home of Arthur"."""
        return any(segment & words for segment in self.negated_segments)


@lru_cache(maxsize=1 << 17)
def _features(text: str) -> Features:
    words, negated_segments = set(), []
    for segment in _SEGMENT_BREAK.split(fold(text)):
        segment_words, negated = set(), False
        for token in _WORD.findall(segment):
            token = token.removesuffix("'s")
            if token in NEGATIONS or token.endswith("n't"):
                negated = True
            elif token not in STOP_WORDS and len(token) > 1 and not token.isdigit():
                segment_words.add(stem(token))
        words |= segment_words
        if negated:
            negated_segments.append(frozenset(segment_words))
    names = {stem(m.group().lower().removesuffix("'s")) for m in _CAPITALISED.finditer(text.strip()) if m.start()}
    return Features(frozenset(words), frozenset(number_values(text)), tuple(negated_segments), frozenset(names & words))


@lru_cache(maxsize=1 << 16)
def units(text: str) -> tuple[str, ...]:
    """What a claim is compared with: the sentences of `text` and, when a sentence splits, its
    clauses too."""
    out = []
    for sentence in sentences(text):
        out.append(sentence)
        clauses = segment_claims(sentence)
        if len(clauses) > 1:
            out.extend(clauses)
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------------
# Support of a claim by a unit
# --------------------------------------------------------------------------------------------------


def _coverage(claim: Features, unit: Features) -> float:
    """Share of the claim's content words found in the unit; a claim of numbers only
    ("1879") is covered by the share of its numbers the unit states."""
    if claim.words:
        return len(claim.words & unit.words) / len(claim.words)
    if claim.numbers:
        return len(claim.numbers & unit.numbers) / len(claim.numbers)
    return 0.0


def unit_verdict(claim: str, unit: str, cosine: float, passage_words: frozenset[str]) -> str:
    """The verdict of one unit (a sentence or clause) on one claim; see the module doc.
    `passage_words`: the content words of the whole chunk (or text) the unit comes from."""
    c, u = _features(claim), _features(unit)
    if _coverage(c, u) < COVERAGE_MATCH and round(cosine, COSINE_DECIMALS) < COSINE_MATCH:
        return NOT_FOUND
    if c.negates_any_of(u.words) != u.negates_any_of(c.words):
        return CONTRADICTED
    if not c.numbers <= u.numbers:
        return CONTRADICTED if u.numbers else NOT_FOUND
    # Names are looked for in the whole chunk: "Amazon River could be longer" is about the river
    # a sentence earlier calls "the Amazon".
    if not c.names <= passage_words:
        return NOT_FOUND
    return SUPPORTED


class Vectors:
    """The sentence vectors of many texts, from one `embeddings.encode` call over the distinct ones."""

    def __init__(self, texts: Iterable[str]):
        distinct = list(dict.fromkeys(texts))
        self._row = {t: i for i, t in enumerate(distinct)}
        self._matrix = embeddings.encode(distinct) if distinct else np.empty((0, embeddings.DIMENSION), np.float32)

    def cosines(self, left: Sequence[str], right: Sequence[str]) -> np.ndarray:
        """len(left) x len(right) cosines (the vectors are L2-normalised)."""
        a = self._matrix[[self._row[t] for t in left]]
        b = self._matrix[[self._row[t] for t in right]]
        return a @ b.T


def verdicts(claims: Sequence[str], passage: str, vectors: Vectors) -> tuple[str, ...]:
    """Per claim, the combined verdict of the units of `passage` (a chunk, or the other side's
    text); a passage without units -> not_found."""
    parts = units(passage)
    if not parts:
        return (NOT_FOUND,) * len(claims)
    cos = vectors.cosines(claims, parts)
    words = _features(passage).words
    return tuple(
        combine([unit_verdict(claim, unit, float(cos[i, j]), words) for j, unit in enumerate(parts)])
        for i, claim in enumerate(claims)
    )


def support(claim: str, chunk: str | Chunk) -> str:
    """The verdict of one chunk on one claim: supported, contradicted or not_found."""
    text = chunk.text if isinstance(chunk, Chunk) else chunk
    return verdicts([claim], text, Vectors([claim, *units(text)]))[0]


# --------------------------------------------------------------------------------------------------
# Chunk relevance
# --------------------------------------------------------------------------------------------------


def relevance(question: str, chunk_text: str, vectors: Vectors) -> ChunkRelevance:
    """Relevance of a chunk: cosine of the question and the chunk's most similar sentence."""
    parts = sentences(chunk_text)
    if not parts or not question.strip():
        return ChunkRelevance(False, 0.0, "offline: empty question or chunk")
    cosine = round(float(vectors.cosines([question], parts).max()), COSINE_DECIMALS)
    return ChunkRelevance(relevant=cosine >= RELEVANCE_COSINE, score=float(round(max(cosine, 0.0) * 100)),
                          reason=f"offline: question-chunk cosine {cosine:.2f}")


# --------------------------------------------------------------------------------------------------
# Claim matrices
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SampleTexts:
    question: str
    answer: str
    reference: str
    answer_claims: tuple[str, ...]
    reference_claims: tuple[str, ...]
    chunk_ids: tuple[str, ...]
    chunk_texts: tuple[str, ...]

    @classmethod
    def of(cls, sample: Sample) -> _SampleTexts:
        answer, reference = sample.output.answer, sample.golden.reference
        chunks = sample.output.contexts
        return cls(sample.golden.question, answer, reference, segment_claims(answer), segment_claims(reference),
                   tuple(c.chunk_id for c in chunks), tuple(c.text for c in chunks))

    def texts(self) -> Iterable[str]:
        """Every text this sample needs a vector for."""
        yield self.question
        yield from self.answer_claims
        yield from self.reference_claims
        for text in (self.answer, self.reference, *self.chunk_texts):
            yield from units(text)

    def matrix(self, vectors: Vectors) -> ClaimMatrix:
        by_chunk_a = [verdicts(self.answer_claims, t, vectors) for t in self.chunk_texts]
        by_chunk_r = [verdicts(self.reference_claims, t, vectors) for t in self.chunk_texts]
        return ClaimMatrix(
            answer_claims=self.answer_claims,
            reference_claims=self.reference_claims,
            chunk_ids=self.chunk_ids,
            answer_vs_chunks=_transpose(by_chunk_a, len(self.answer_claims)),
            reference_vs_chunks=_transpose(by_chunk_r, len(self.reference_claims)),
            answer_vs_reference=verdicts(self.answer_claims, self.reference, vectors),
            reference_vs_answer=verdicts(self.reference_claims, self.answer, vectors),
            chunk_relevance=tuple(relevance(self.question, t, vectors) for t in self.chunk_texts),
        )


def _transpose(columns: list[tuple[str, ...]], n_rows: int) -> tuple[tuple[str, ...], ...]:
    """[chunk][claim] -> [claim][chunk]."""
    return tuple(tuple(col[i] for col in columns) for i in range(n_rows))


def build_matrices(samples: Sequence[Sample]) -> list[ClaimMatrix]:
    """The claim matrix of every sample; every distinct text of the batch is embedded in one call."""
    parts = [_SampleTexts.of(s) for s in samples]
    vectors = Vectors(t for p in parts for t in p.texts())
    return [p.matrix(vectors) for p in parts]


def build_matrix(sample: Sample) -> ClaimMatrix:
    return build_matrices([sample])[0]
