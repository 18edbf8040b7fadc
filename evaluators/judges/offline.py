"""The offline judge: fills a sample's claim matrix without an LLM, deterministically, on the CPU.

It is the default judge (no key, no network): text rules, the packaged MiniLM embedder and a small
MiniLM cross-encoder fine-tuned on public human-labelled data, not a large language model. Every
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
* The verdict of a passage (a chunk, or the other side's text) on a claim (`verify`) comes from the
  verdict model (`verdict_model.py`, a logistic model fitted on dev data by
  `python -m calibration.fit_verdicts`) over two readers' signals (`signals`):
    - the heuristic (`heuristic_verdicts`, below): word coverage, MiniLM cosine, numbers, negations,
      names; precise on extractive answers, blind to paraphrase;
    - the cross-encoder (`nli.py`, all-MiniLM-L6-v2 fine-tuned on dev parts of SNLI, FM2,
      Factcheck-GPT, BEGIN and SummEdits by `python -m calibration.train_nli`): it reads the claim's
      best `NLI_CANDIDATES` sentences over all the passages (by max(word coverage, cosine), from
      `CANDIDATE_SCORE` on), each with its neighbours as the premise.
  Where the heuristic is precise its verdict stands (`rule_verdict`: its contradictions, a claim's
  number the passage lacks, a fully covered claim, a pair the cross-encoder did not read).
* The heuristic's verdict of one unit on one claim (`unit_verdict`). The unit *matches* the claim when
  the claim's content-word coverage is at least `COVERAGE_MATCH` (content words: lowercase, stop words,
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
  Verdicts over units combine as `evaluators.records.judgments.combine` does: supported by any wins, then
  contradicted by any, else not_found.
* The same test gives reference claims vs chunks (attributable?), answer claims vs the reference
  (TP/FP) and reference claims vs the answer (covered?).
* Chunk relevance: the cosine of the question and the chunk's most similar sentence, relevant from
  `RELEVANCE_COSINE`; the score is that cosine as a percentage in whole points (seed 003's 0-100).
* `build_matrices` embeds every distinct text of a batch in one `embeddings.encode` call; text
  features are memoised, so a chunk retrieved by several methods is read once.

Limits (why the UI calls it an offline judge, not an LLM)
--------------------------------------------------------
* The cross-encoder is a 6-layer MiniLM fine-tuned on ~16k dev pairs on a CPU: far from an LLM's
  reading. Its measured agreement with people, beside simple baselines, is in
  bench/results/judge_quality.md (test parts only), and the app's panels quote it.
* It reads a claim's best sentence (with its neighbours), not every sentence of every chunk: a
  chunk that supports the claim less obviously than another is not_found for it.
* A same-topic sentence that states another condition can pass for support ("personal data can be
  processed with consent" vs "... only if necessary for the public interest" is supported).
* Numbers: units are not converted ("4,350 miles" vs "7,000 kilometers" is a contradiction), and
  numbers in words ("ten") are not numbers.
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

from evaluators import threads
from evaluators.judges import embeddings, nli, verdict_model
from evaluators.maths import formulas
from evaluators.maths.text import STOP_WORDS, fold, number_values
from evaluators.records import Chunk, Sample
from evaluators.records.judgments import CONTRADICTED, NOT_FOUND, SUPPORTED, ChunkRelevance, ClaimMatrix, combine

JUDGE = "offline"

# Thresholds, checked against RAGChecker's 59 labelled response-claim x chunk pairs (shared/data/
# ragchecker_examples), seed 000's case study, seed 002's examples, some hand-made same-topic pairs
# and the demo data (tests/judges/test_offline_judge.py). RAGChecker's accuracy is flat over the whole
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
# Claim verification: each claim's best sentences over all passages (by max(word coverage, cosine))
# go to the cross-encoder, at most this many, and only from this score on (below it, a sentence shares
# neither words nor meaning with the claim: not_found without asking). One: on the dev parts the verdicts
# agreed with people as well as with two or better (verdict model's cross-validated macro-F1 0.734 vs
# 0.729; Factcheck-GPT 0.563 vs 0.549, the other sets within 0.003), at half the cross-encoder's time.
NLI_CANDIDATES = 1
CANDIDATE_SCORE = 0.3
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
_LONGEST_ABBREVIATION = 32  # characters, "e.g" and "U.S.A" included
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
            if line[m.start()] == "." and _is_abbreviation(line, m.start()):
                continue
            out.append(line[start:m.end()].strip())
            start = m.end()
        out.append(line[start:].strip())
    return tuple(s for s in out if s)


def _is_abbreviation(line: str, period: int) -> bool:
    """Whether the word before the period at `period` is an abbreviation, an initial or dotted ("U.S", "e.g").
    Only the last `_LONGEST_ABBREVIATION` characters are read: reading the whole prefix at every period made
    splitting grow with the square of the length (22.8 s for one chunk of 200,000 characters)."""
    m = _WORD_BEFORE.search(line, max(0, period - _LONGEST_ABBREVIATION - 1), period)
    if not m or len(m.group(1)) > _LONGEST_ABBREVIATION:  # a longer run of letters and dots is no abbreviation
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


def negation_mismatch(reference: str, answer: str) -> bool:
    """Whether the answer states the reference's words (`COVERAGE_MATCH`) with a negation bearing on them on
    one side only: "Penguins can fly." against "Penguins cannot fly."."""
    r, a = _features(reference), _features(answer)
    return _coverage(r, a) >= COVERAGE_MATCH and r.negates_any_of(a.words) != a.negates_any_of(r.words)


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


def heuristic_verdicts(claims: Sequence[str], passage: str, vectors: Vectors) -> tuple[str, ...]:
    """Per claim, the heuristic's combined verdict of the units of `passage` (a chunk, or the other
    side's text); a passage without units -> not_found."""
    parts = units(passage)
    if not parts:
        return (NOT_FOUND,) * len(claims)
    cos = vectors.cosines(claims, parts)
    words = _features(passage).words
    return tuple(
        combine([unit_verdict(claim, unit, float(cos[i, j]), words) for j, unit in enumerate(parts)])
        for i, claim in enumerate(claims)
    )


def verdicts(claims: Sequence[str], passage: str, vectors: Vectors) -> tuple[str, ...]:
    """Per claim, the verdict of `passage` (a chunk, or the other side's text); see `verify`."""
    return tuple(v[0] for v in verify(claims, [passage], vectors))


def signals(claims: Sequence[str], passages: Sequence[str], vectors: Vectors) -> np.ndarray:
    """claims x passages x `verdict_model.SIGNALS`: what the verdict model reads of each pair.

    The heuristic's verdict (one-hot), and the cross-encoder's (`judges/nli.py`) on the claim's best
    evidence: every (claim, sentence) pair is scored cheaply (the share of the claim's content words
    the sentence has, or their MiniLM cosine, whichever is higher) and the claim's best
    `NLI_CANDIDATES` sentences over all the passages (from `CANDIDATE_SCORE` on) are read, each with
    its neighbours as the premise; a passage holding none of them gets (0, 0, 1). Then the best word
    coverage and cosine of the passage's sentences."""
    out = np.zeros((len(claims), len(passages), len(verdict_model.SIGNALS)))
    out[:, :, 5] = 1.0  # P(not_found) where the cross-encoder reads nothing
    parts = [sentences(p) for p in passages]
    located = [(k, j) for k, sents in enumerate(parts) for j in range(len(sents))]
    if not claims or not located:
        out[:, :, 2] = 1.0
        return out
    for k, passage in enumerate(passages):
        for i, v in enumerate(heuristic_verdicts(claims, passage, vectors)):
            out[i, k, verdict_model.LABELS.index(v)] = 1.0
    flat = [parts[k][j] for k, j in located]
    rows_of = [[n for n, (kk, _) in enumerate(located) if kk == k] for k in range(len(passages))]  # passage -> its rows of flat
    cos = np.round(vectors.cosines(claims, flat), COSINE_DECIMALS)
    pairs, where = [], []
    for i, claim in enumerate(claims):
        c = _features(claim)
        coverage = np.array([_coverage(c, _features(t)) for t in flat])
        for k, mine in enumerate(rows_of):
            if mine:
                out[i, k, 6] = coverage[mine].max()
                out[i, k, 7] = max(cos[i, mine].max(), 0.0)
        score = np.maximum(cos[i], coverage)
        for n in sorted(range(len(flat)), key=lambda n: (-score[n], n))[:NLI_CANDIDATES]:
            if score[n] >= CANDIDATE_SCORE:
                k, j = located[n]
                pairs.append((" ".join(parts[k][max(0, j - 1):j + 2]), claim))
                where.append((i, k))
    if pairs:
        for (i, k), p in zip(where, nli.probabilities([p for p, _ in pairs], [h for _, h in pairs])):
            out[i, k, 3] = max(out[i, k, 3], p[0])  # the most supporting and most contradicting premise
            out[i, k, 4] = max(out[i, k, 4], p[1])
            out[i, k, 5] = min(out[i, k, 5], p[2])
    return out


def verify(claims: Sequence[str], passages: Sequence[str], vectors: Vectors) -> list[tuple[str, ...]]:
    """Per claim, the verdict of each passage (claims x passages): `rule_verdict` where a precise
    rule decides, else the verdict model (`judges/verdict_model.py`, fitted on dev data) over the
    pair's `signals`."""
    x = signals(claims, passages, vectors)
    return [tuple(rule_verdict(x[i, k], claim, passage) or verdict_model.verdict(x[i, k])
                  for k, passage in enumerate(passages))
            for i, claim in enumerate(claims)]


def rule_verdict(x: np.ndarray, claim: str, passage: str) -> str | None:
    """The verdict where the heuristic is precise and the small cross-encoder is not, else None (the
    verdict model decides). The heuristic's verdict stands when
      - it is contradicted: a negation or another number in a sentence that matches the claim (the
        cross-encoder reads "is not open" as "is open" more often than not);
      - the claim has a number the passage does not state (MiniLM reads 1879 and 1897 as the same);
      - it is supported with every content word of the claim in one sentence (an extractive answer);
      - the cross-encoder did not read the pair (no sentence near the claim), as the model learned
        from SNLI that unrelated-looking sentences often contradict."""
    heuristic = verdict_model.LABELS[int(np.argmax(x[:3]))]
    if heuristic == CONTRADICTED or not _features(claim).numbers <= _features(passage).numbers:
        return heuristic
    if (heuristic == SUPPORTED and x[6] == 1.0) or not was_read(x):
        return heuristic
    return None


def was_read(x: np.ndarray) -> bool:
    """Whether the cross-encoder read the pair (`signals` leaves (0, 0, 1) where it did not)."""
    return bool(x[3] or x[4] or x[5] != 1.0)


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
    return ChunkRelevance(relevant=cosine >= RELEVANCE_COSINE, score=formulas.semantic_similarity_percent(cosine, 0),
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
        return ClaimMatrix(
            answer_claims=self.answer_claims,
            reference_claims=self.reference_claims,
            chunk_ids=self.chunk_ids,
            answer_vs_chunks=tuple(verify(self.answer_claims, self.chunk_texts, vectors)),
            reference_vs_chunks=tuple(verify(self.reference_claims, self.chunk_texts, vectors)),
            answer_vs_reference=verdicts(self.answer_claims, self.reference, vectors),
            reference_vs_answer=verdicts(self.reference_claims, self.answer, vectors),
            chunk_relevance=tuple(relevance(self.question, t, vectors) for t in self.chunk_texts),
        )


def build_matrices(samples: Sequence[Sample]) -> list[ClaimMatrix]:
    """The claim matrix of every sample; every distinct text of the batch is embedded in one call, and the
    samples are spread over the workers (`threads.parallel`: their NLI passes run side by side)."""
    parts = [_SampleTexts.of(s) for s in samples]
    vectors = Vectors(t for p in parts for t in p.texts())
    return threads.parallel(lambda p: p.matrix(vectors), parts)


def build_matrix(sample: Sample) -> ClaimMatrix:
    return build_matrices([sample])[0]
