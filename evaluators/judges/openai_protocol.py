"""The OpenAI-compatible judge's protocol: what it asks a chat model and what the replies mean. Each sample's claim
matrix takes 2 calls (1 + one more per further 16 chunks), its holistic rubric ratings 1 more and the run's own
criteria 1 more (all of them in one call), in 2 rounds: the holistic and criteria calls go out with the extraction
(they need no claims), the verification calls follow the extraction. Every
call of a sample starts with the same text (`prompts`), so the verification calls find the sample and its chunks in
the provider's prompt cache; the server says how much it served from there (`CallRecord.cached_input_tokens`). How a
request reaches the server (HTTP, deadline, retries, cache, Batch API, budget) is the transport's (openai_transport).

    judge = JudgeClient(base_url="http://localhost:8000/v1", model="qwen2.5-7b-instruct")
    both = judge.assess_sync(samples)   # [(Judgment, HolisticJudgment)]; or: await judge.assess(samples)
    every = judge.assess_parts_sync(samples, criteria=[Criterion(...)])  # [(Judgment, HolisticJudgment,
                                                                         #   CriteriaJudgment)]
    judgments = judge.judge_sync(samples)          # claim matrices only
    ratings = judge.rate_sync(samples)             # holistic ratings only

Policy (and why):
* Replies are parsed against the models below (the holistic one is `judgments.Holistic`, whose JSON schema the
  request carries: `prompts.SCHEMA`). Replies that do not parse, do not validate or are empty get one repair call:
  the start of the bad output (`REPAIR_EXCERPT_CHARS`, never all of it) goes back with the error and a request for
  corrected JSON. A reply longer than `MAX_REPLY_CHARS` is such a reply, refused unread, and its record keeps only
  its start.
* A server that did not hold the model to the schema (it ignores response_format, as Anthropic's OpenAI-compatible
  endpoint and many local servers do) may wrap the JSON in prose or a fenced ```json block: the JSON is taken from
  there (`reply_json`), validated by the same model and repaired as above; the call's record says the schema was not
  enforced (`CallRecord.schema_enforced`). A reply with no JSON object is unusable, never read for a verdict.
* A verification reply that misses verdicts keeps the matrix: the missing cells are None, so
  `evaluators.metrics.claims` gives judge_error on exactly the metrics that need them; the call's status
  is "incomplete". A failed verification call leaves its chunks' cells None and sets the
  Judgment's status; a failed extraction leaves no matrix.
* Repeats (`repeats` N > 1): the holistic call is asked N times per sample, as N choices of one
  request (`n`; input tokens paid once) where the server gives them, else one request per reply,
  reply k with seed + k (so each is its own cache entry). The ratings are averaged and the labels go
  by majority (`judgments.aggregate`, which keeps every reply for the spread). The temperature stays what
  the run sends (0, or the server's default for a reasoning model): the spread is the judge's own variation at the
  run's settings.
* The criteria call (`criteria_reply`): every score on its criterion's scale, every criterion scored, no other id,
  or the reply is invalid and gets its one repair; what the repaired reply still lacks is those criteria's
  judge_error (the others keep their scores; the call's status is "incomplete"). It is asked `repeats` times as the
  holistic call is (`n` choices, else one request per reply), and the replies combine per criterion (the mean; a
  pass/fail's majority). With a 1-5 criterion it asks for the tokens' log-probabilities (`logprobs`,
  `top_logprobs`), and each 1-5 score whose token has them is G-Eval's probability-weighted score (`geval`), read
  from the call's raw response, so a cached reply gives the same score; a server that refuses them is not asked
  again (openai_params).
* A sample's replies go into the transport's cache once its records are final (`Transport.remember`): only those
  that ended "ok".
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from pydantic import BaseModel, ValidationError, field_validator

from evaluators.judges import criteria_reply, geval, prompts, reply_json
from evaluators.judges.options import check_numbers
from evaluators.judges.openai_transport import (MAX_REPLY_CHARS, CallFailed, Connection, Transport, excerpt,
                                                with_status)
from evaluators.judges.protocol import CallRecord
from evaluators.records import INCOMPLETE, INVALID, JUDGE_ERROR, OK, TIMEOUT, Sample
from evaluators.records.criteria import Criterion
from evaluators.records.judgments import (UNKNOWN, VERDICTS, ChunkRelevance, ClaimMatrix, CriterionScore, Holistic,
                                          JudgeFailure, Verdict, aggregate)


@dataclass
class Judgment:
    """The judge's output for one sample. With status != ok the matrix may still be there, with the
    cells of the failed call as None; with a failed extraction it is None."""

    matrix: ClaimMatrix | None
    generated_questions: tuple[str, ...]
    status: str  # ok, judge_error or timeout (evaluators.records)
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)


@dataclass
class HolisticJudgment:
    """The holistic ratings of one sample, or why there are none (status judge_error or timeout)."""

    holistic: Holistic | None
    status: str
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)


@dataclass
class CriteriaJudgment:
    """The scores of the run's criteria for one sample (each a CriterionScore, or a JudgeFailure for a criterion the
    replies left unscored), or why there are none (`scores` None: status judge_error or timeout)."""

    scores: dict[str, CriterionScore | JudgeFailure] | None
    status: str
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)


class _Reply(NamedTuple):
    """One usable reply: what it says, the raw response it came in and which of its choices it is."""

    value: object
    response: str | None
    choice: int = 0


# -- reply models: lenient on purpose (verdict strings are mapped, not rejected); the holistic reply's is
# `judgments.Holistic`, the record the rubric family reads.

class _Extraction(BaseModel):
    answer_claims: list[str]
    reference_claims: list[str]
    generated_questions: list[str]

    @field_validator("answer_claims", "reference_claims", "generated_questions")
    @classmethod
    def _no_placeholders(cls, texts: list[str]) -> list[str]:
        # Small models copy the prompt's "..." examples: text without a letter or digit is no claim.
        if any(t.strip() and not any(c.isalnum() for c in t) for t in texts):
            raise ValueError("holds a placeholder such as '...' instead of text from the input")
        return texts


class _ChunkVerdict(BaseModel):
    chunk_id: str | int
    verdict: str | None


class _AnswerClaim(BaseModel):
    claim_id: str | int
    chunk_verdicts: list[_ChunkVerdict]
    reference_verdict: str | None = None
    matched_reference_claims: list[str | int] = []


class _ReferenceClaim(BaseModel):
    claim_id: str | int
    chunk_verdicts: list[_ChunkVerdict]
    answer_verdict: str | None = None


class _ChunkRelevanceReply(BaseModel):
    chunk_id: str | int
    relevant: bool
    relevance_score: float | None = None
    reason: str | None = None


class _Verification(BaseModel):
    answer_claims: list[_AnswerClaim]
    reference_claims: list[_ReferenceClaim]
    chunks: list[_ChunkRelevanceReply]


class JudgeClient:
    """The protocol over one transport. `options` are the transport's (openai_transport.Transport: api_key,
    concurrency, timeout, max_attempts, seed, backoff, cache, batch, budget, max_output_tokens...), or give a
    `transport` made already."""

    def __init__(self, base_url: str | None = None, model: str | None = None, *, repeats: int = 1,
                 transport: Transport | None = None, **options):
        check_numbers({"repeats": repeats})
        self.transport = transport or Transport(base_url, model, schema=prompts.SCHEMA,
                                                version=prompts.PROMPT_VERSION, **options)
        self.repeats = repeats  # holistic replies per sample (module doc)

    def __repr__(self) -> str:  # the key stays out of logs
        return f"JudgeClient(base_url={self.transport.base_url!r}, model={self.transport.model!r})"

    async def assess(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                     on_sample: Callable[[], None] | None = None
                     ) -> list[tuple[Judgment | None, HolisticJudgment | None]]:
        """Per sample, in order, its claim matrix (when `claims`) and its holistic ratings (when
        `holistic`), both started at once; None for a part not asked for. `on_sample()` is called as
        each sample is done. Never raises for a judge fault."""
        return [(j, r) for j, r, _ in await self.assess_parts(samples, claims, holistic, (), on_sample)]

    async def assess_parts(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                           criteria: Sequence[Criterion] = (), on_sample: Callable[[], None] | None = None
                           ) -> list[tuple[Judgment | None, HolisticJudgment | None, CriteriaJudgment | None]]:
        """`assess`, and the scores of `criteria` (None when there are none), all three parts started at once."""
        criteria = tuple(criteria)
        async with self.transport.connect() as connection:
            session = _Session(self, connection)

            async def one(sample: Sample):
                text = _sample_text(sample)
                parts = await asyncio.gather(session.judge_sample(sample, text) if claims else _nothing(),
                                             session.rate_sample(text) if holistic else _nothing(),
                                             session.score_criteria(text, criteria) if criteria else _nothing())
                if on_sample is not None:
                    on_sample()
                return tuple(parts)

            return list(await asyncio.gather(*(one(s) for s in samples)))

    def assess_sync(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                    on_sample: Callable[[], None] | None = None
                    ) -> list[tuple[Judgment | None, HolisticJudgment | None]]:
        """`assess` for synchronous callers (CLI, a Streamlit worker thread); not inside a running loop."""
        return asyncio.run(self.assess(samples, claims, holistic, on_sample))

    def assess_parts_sync(self, samples: Sequence[Sample], claims: bool = True, holistic: bool = True,
                          criteria: Sequence[Criterion] = (), on_sample: Callable[[], None] | None = None
                          ) -> list[tuple[Judgment | None, HolisticJudgment | None, CriteriaJudgment | None]]:
        """`assess_parts` for synchronous callers."""
        return asyncio.run(self.assess_parts(samples, claims, holistic, criteria, on_sample))

    def judge_sync(self, samples: Sequence[Sample]) -> list[Judgment]:
        """The claim matrix of every sample, in order."""
        return [j for j, _ in self.assess_sync(samples, holistic=False)]

    def rate_sync(self, samples: Sequence[Sample]) -> list[HolisticJudgment]:
        """The holistic ratings of every sample, in order (one call each)."""
        return [r for _, r in self.assess_sync(samples, claims=False)]


async def _nothing() -> None:
    return None


def _sample_text(sample: Sample) -> prompts.SampleText:
    golden, output = sample.golden, sample.output
    return prompts.sample_text(golden.question, golden.reference, output.answer, [c.text for c in output.contexts])


class _Session:
    """The protocol's work within one `assess()`: one connection of the transport."""

    def __init__(self, client: JudgeClient, connection: Connection):
        self.client = client
        self.connection = connection
        self.transport = connection.transport

    async def judge_sample(self, sample: Sample, text: prompts.SampleText) -> Judgment:
        judgment = await self._judge_sample(sample, text)
        self.transport.remember(judgment.calls)
        return judgment

    async def rate_sample(self, text: prompts.SampleText) -> HolisticJudgment:
        """`repeats` holistic replies (`replies`), aggregated (`judgments.aggregate`). A sample with a failed reply
        fails as a whole: a retry asks again, and the replies that came are cached."""
        replies, calls, failed = await self.replies(prompts.HOLISTIC, prompts.holistic_messages(text), _parse_holistic)
        if failed:
            judgment = HolisticJudgment(None, *failed, calls)
        else:
            judgment = HolisticJudgment(aggregate([r.value for r in replies]), OK, None, calls)
        self.transport.remember(calls)
        return judgment

    async def score_criteria(self, text: prompts.SampleText, criteria: tuple[Criterion, ...]) -> CriteriaJudgment:
        """`repeats` replies scoring every criterion in one call (`replies`), G-Eval weighted where the response
        says how (`geval`), combined per criterion (`criteria_reply.combined`). A failed reply fails the part as a
        whole, as the holistic one."""
        by_id = {c.id: c for c in criteria}
        weigh = any(c.scale == "1-5" for c in criteria)
        replies, calls, failed = await self.replies(
            prompts.CRITERIA, prompts.criteria_messages(text, criteria),
            lambda content: criteria_reply.read(criteria, content),
            last=lambda content: criteria_reply.read(criteria, content, strict=False), logprobs=weigh)
        if failed:
            judgment = CriteriaJudgment(None, *failed, calls)
        else:
            read = [criteria_reply.weighted(r.value, by_id, geval.weighted_scores(
                        r.response, r.choice, {cid: s.at for cid, s in r.value.scores.items()})) if weigh else r.value
                    for r in replies]
            judgment = CriteriaJudgment(criteria_reply.combined(criteria, read), OK, None, calls)
        self.transport.remember(calls)
        return judgment

    async def replies(self, purpose: str, messages: prompts.Messages, parse: Callable, last: Callable | None = None,
                      logprobs: bool = False) -> tuple[list[_Reply], list[CallRecord], tuple[str, str] | None]:
        """`repeats` usable replies to `messages`: first as the choices of one request (`n`), then one request per
        missing reply, reply k with seed + k -> (the replies, every call's record, None or (status, why) when a reply
        failed). `parse` reads a reply, `last` a repaired one (`call`)."""
        calls: list[CallRecord] = []
        n = self.client.repeats
        replies = (await self.choices(purpose, messages, n, calls, parse, logprobs)
                   if n > 1 and self.transport.n_supported else [])
        outcomes = await asyncio.gather(*(self.once(purpose, messages, parse, k, last, logprobs)
                                          for k in range(len(replies), n)))
        replies += [reply for reply, _, _ in outcomes if reply is not None]
        calls += [record for _, records, _ in outcomes for record in records]
        failures = [failed for _, _, failed in outcomes if failed is not None]
        if not failures:
            return replies, calls, None
        status = TIMEOUT if all(f.status == TIMEOUT for f in failures) else JUDGE_ERROR
        return replies, calls, (status, str(failures[0]) if n == 1 else
                                f"{len(failures)} of {n} replies failed: {failures[0]}")

    async def once(self, purpose: str, messages: prompts.Messages, parse: Callable, k: int,
                   last: Callable | None = None, logprobs: bool = False):
        """Reply k (with seed + k) -> (reply or None, its records, None or why it failed). A repaired reply that
        `last` read with problems (criteria it left unscored) marks its record incomplete: it is used, not cached."""
        records: list[CallRecord] = []
        try:
            value = await self.call(purpose, messages, parse, records, seed_offset=k, last=last, logprobs=logprobs)
        except CallFailed as failed:
            return None, records, failed
        if isinstance(value, criteria_reply.CriteriaReply) and (problems := value.described()):
            records[-1] = with_status(records[-1], INCOMPLETE, problems)
        return _Reply(value, records[-1].response), records, None

    async def choices(self, purpose: str, messages: prompts.Messages, n: int, calls: list[CallRecord],
                      parse: Callable, logprobs: bool = False) -> list[_Reply]:
        """The usable replies among the `n` choices of one request (none on any failure: the missing
        replies are asked one by one)."""
        try:
            attempt = await self.connection.request(purpose, messages, calls, n=n, logprobs=logprobs)
        except CallFailed:
            return []
        usable, errors = [], []
        for i, (content, finish_reason) in enumerate(attempt.choices):
            try:
                if finish_reason == "length":
                    raise ValueError("cut off (finish_reason 'length')")
                usable.append(_Reply(_checked(content, parse)[0], attempt.record.response, i))
            except ValueError as bad:
                errors.append(str(bad))
        if errors:  # the request is kept (and cached) for its usable choices; the others are asked again
            calls[-1] = with_status(calls[-1], OK, f"{len(errors)} of {len(attempt.choices)} choices unusable: "
                                                   f"{errors[0]}")
        return usable

    async def _judge_sample(self, sample: Sample, text: prompts.SampleText) -> Judgment:
        output = sample.output
        calls: list[CallRecord] = []
        try:
            extraction = await self.call(prompts.EXTRACTION, prompts.extraction_messages(text), _parse_extraction,
                                         calls)
        except CallFailed as failed:
            return Judgment(None, (), failed.status, f"extraction: {failed}", calls)
        answer_claims, reference_claims = _clean(extraction.answer_claims), _clean(extraction.reference_claims)
        questions = tuple(_clean(extraction.generated_questions)[:prompts.N_GENERATED_QUESTIONS])
        n_chunks = len(output.contexts)
        # Nothing to verify without chunks and claims; otherwise one call per 16 chunks (at least one).
        batches = _batches(n_chunks) if (n_chunks or answer_claims or reference_claims) else []
        outcomes = await asyncio.gather(*(self.verify(text, answer_claims, reference_claims, batch, first=i == 0)
                                          for i, batch in enumerate(batches)))
        merged = _Merge(answer_claims, reference_claims, n_chunks)
        failures = []
        for i, (batch, (reply, records)) in enumerate(zip(batches, outcomes)):
            if isinstance(reply, CallFailed):
                failures.append(reply)
            else:
                merged.add(reply, batch, compare_claims=i == 0)
                if missing := merged.missing_count(batch, compare_claims=i == 0):
                    # The reply is used as it is; its record says it was short.
                    records[-1] = with_status(records[-1], INCOMPLETE, f"{missing} verdicts missing")
            calls.extend(records)
        if failures:
            status = TIMEOUT if all(f.status == TIMEOUT for f in failures) else JUDGE_ERROR
            error = "; ".join(f"verification: {f}" for f in failures)
        else:
            status, error = OK, merged.missing_description()
        # The cells a failed call left None carry its status and reason to the metrics that need them.
        matrix = merged.matrix(tuple(c.chunk_id for c in output.contexts), status if failures else JUDGE_ERROR, error)
        return Judgment(matrix, questions, status, error, calls)

    async def verify(self, text: prompts.SampleText, answer_claims: list[str], reference_claims: list[str],
                     batch: range, first: bool):
        """One verification call -> (reply or CallFailed, its records). The failure is returned, not
        raised, so the other batches survive; each batch keeps its own records (they run concurrently)."""
        messages = prompts.verification_messages(text, answer_claims, reference_claims, batch, compare_claims=first)
        records: list[CallRecord] = []
        try:
            reply = await self.call(prompts.VERIFICATION, messages, _parse_verification, records)
        except CallFailed as failed:
            return failed, records
        return reply, records

    # -- one logical call: a complete reply, parsed, with one repair --------------------------------

    async def call(self, purpose: str, messages: prompts.Messages, parse: Callable[[str], BaseModel],
                   records: list[CallRecord], seed_offset: int = 0, last: Callable | None = None,
                   logprobs: bool = False):
        """The parsed reply to `messages`, with one repair; `last` (default `parse`) reads the repaired reply (the
        criteria's keeps what is usable of it)."""
        content, limit = await self.connection.complete(purpose, messages, records, seed_offset=seed_offset,
                                                        logprobs=logprobs)
        try:
            return _used(records, *_checked(content, parse))
        except ValueError as bad:
            records[-1] = with_status(records[-1], INVALID, str(bad))
            repair = prompts.repair_messages(messages, excerpt(content or ""), str(bad))
            content, _ = await self.connection.complete(f"{purpose}_repair", repair, records, limit,
                                                       seed_offset, logprobs=logprobs)
            try:
                return _used(records, *_checked(content, last or parse))
            except ValueError as still_bad:
                records[-1] = with_status(records[-1], INVALID, str(still_bad))
                raise CallFailed(JUDGE_ERROR, f"unusable reply after one repair: {still_bad}") from None


# -- reply checking ----------------------------------------------------------------------------------

def _checked(content: str | None, parse: Callable[[str], BaseModel]) -> tuple[BaseModel, bool]:
    """(the parsed reply, whether it was JSON alone: else found in prose, `reply_json`); ValueError (with what to
    tell the model in a repair) when unusable."""
    if not content or not content.strip():
        raise ValueError("the reply was empty")
    if len(content) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply is {len(content):,} characters, over the {MAX_REPLY_CHARS:,}-character limit "
                         f"(not read): answer with the JSON only, as short as the task allows")
    if (found := reply_json.found(content)) is None:
        if content.lstrip().startswith(("{", "[")):  # JSON that does not parse: say where
            try:
                json.loads(content)
            except json.JSONDecodeError as e:
                raise ValueError(f"the reply is not valid JSON ({e})") from None
        raise ValueError("the reply holds no JSON object (prose only): answer with the JSON object only")
    text, bare = found
    try:
        return parse(text), bare
    except json.JSONDecodeError as e:
        raise ValueError(f"the reply is not valid JSON ({e})") from None
    except ValidationError as e:
        raise ValueError(f"the JSON does not match the required format: {_short(e)}") from None


def _used(records: list[CallRecord], reply: BaseModel, bare: bool) -> BaseModel:
    """`reply`, its record marked with whether the server held it to the schema: a json_schema was sent and the
    reply was that JSON alone."""
    sent = json.loads(records[-1].request).get("response_format") or {}
    enforced = bare and sent.get("type") == "json_schema"
    records[-1] = dataclasses.replace(records[-1], schema_enforced=enforced)
    return reply


def _short(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:5])


def _parse_extraction(content: str) -> _Extraction:
    return _Extraction.model_validate(prompts.part(json.loads(content), prompts.EXTRACTION))


def _parse_verification(content: str) -> _Verification:
    return _Verification.model_validate(prompts.part(json.loads(content), prompts.VERIFICATION))


def _parse_holistic(content: str) -> Holistic:
    return Holistic.model_validate(prompts.part(json.loads(content), prompts.HOLISTIC))


def _clean(texts: list[str]) -> list[str]:
    return [t.strip() for t in texts if t and t.strip()]


def _batches(n_chunks: int) -> list[range]:
    size = prompts.CHUNKS_PER_CALL
    return [range(start, min(start + size, n_chunks)) for start in range(0, n_chunks, size)] or [range(0)]


def _verdict(raw: str | None) -> Verdict:
    """A reply's verdict string as a matrix verdict; strings outside the vocabulary are unknown."""
    if raw is None:
        return None
    value = raw.strip().lower().replace(" ", "_").replace("-", "_")
    return value if value in VERDICTS else UNKNOWN


def _norm_id(prefix: str, raw: str | int) -> str:
    """"C3", "c3", "3", 3 -> "C3": models drop or recase the prefix."""
    text = str(raw).strip().upper().strip("[]")
    return text if text.startswith(prefix) else f"{prefix}{text}"


def _by_id(items, prefix: str, id_of: Callable) -> dict:
    """Reply items keyed by their normalised id; the first of duplicates wins."""
    out = {}
    for item in items:
        out.setdefault(_norm_id(prefix, id_of(item)), item)
    return out


def _chunk_verdicts(claim) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    for v in claim.chunk_verdicts:
        out.setdefault(_norm_id("C", v.chunk_id), _verdict(v.verdict))
    return out


class _Merge:
    """Verification replies -> one ClaimMatrix, aligned by id; a cell no reply filled stays None."""

    def __init__(self, answer_claims: list[str], reference_claims: list[str], n_chunks: int):
        self.answer_claims, self.reference_claims = answer_claims, reference_claims
        self.answer_vs_chunks = [[None] * n_chunks for _ in answer_claims]
        self.reference_vs_chunks = [[None] * n_chunks for _ in reference_claims]
        self.answer_vs_reference: list[Verdict] = [None] * len(answer_claims)
        self.reference_vs_answer: list[Verdict] = [None] * len(reference_claims)
        self.matched: list[tuple[int, ...]] = [() for _ in answer_claims]
        self.relevance = [ChunkRelevance(None) for _ in range(n_chunks)]

    def add(self, reply: _Verification, batch: range, compare_claims: bool) -> None:
        answer = _by_id(reply.answer_claims, "A", lambda c: c.claim_id)
        reference = _by_id(reply.reference_claims, "R", lambda c: c.claim_id)
        for i in range(len(self.answer_claims)):
            claim = answer.get(prompts.answer_claim_id(i))
            if claim is None:
                continue
            self._fill(self.answer_vs_chunks[i], _chunk_verdicts(claim), batch)
            if compare_claims:
                self.answer_vs_reference[i] = _verdict(claim.reference_verdict)
                self.matched[i] = self._reference_indexes(claim.matched_reference_claims)
        for i in range(len(self.reference_claims)):
            claim = reference.get(prompts.reference_claim_id(i))
            if claim is None:
                continue
            self._fill(self.reference_vs_chunks[i], _chunk_verdicts(claim), batch)
            if compare_claims:
                self.reference_vs_answer[i] = _verdict(claim.answer_verdict)
        chunks = _by_id(reply.chunks, "C", lambda c: c.chunk_id)
        for j in batch:
            if (c := chunks.get(prompts.chunk_id(j))) is not None:
                score = None if c.relevance_score is None else min(max(c.relevance_score, 0.0), 100.0)
                self.relevance[j] = ChunkRelevance(c.relevant, score, c.reason)

    @staticmethod
    def _fill(row: list[Verdict], verdicts: dict[str, Verdict], batch: range) -> None:
        for j in batch:
            row[j] = verdicts.get(prompts.chunk_id(j))

    def _reference_indexes(self, ids: list[str | int]) -> tuple[int, ...]:
        wanted = {_norm_id("R", i) for i in ids}
        return tuple(i for i in range(len(self.reference_claims)) if prompts.reference_claim_id(i) in wanted)

    def missing_count(self, batch: range, compare_claims: bool) -> int:
        cells = [row[j] for rows in (self.answer_vs_chunks, self.reference_vs_chunks) for row in rows for j in batch]
        cells += [self.relevance[j].relevant for j in batch]
        if compare_claims:
            cells += [*self.answer_vs_reference, *self.reference_vs_answer]
        return sum(v is None for v in cells)

    def missing_description(self) -> str | None:
        n = self.missing_count(range(len(self.relevance)), compare_claims=True)
        if not n:
            return None
        return f"the judge gave no verdict for {n} cells (left None: judge_error on the metrics needing them)"

    def matrix(self, chunk_ids: tuple[str, ...], missing_status: str, missing_reason: str | None) -> ClaimMatrix:
        return ClaimMatrix(
            answer_claims=tuple(self.answer_claims), reference_claims=tuple(self.reference_claims),
            chunk_ids=chunk_ids,
            answer_vs_chunks=tuple(map(tuple, self.answer_vs_chunks)),
            reference_vs_chunks=tuple(map(tuple, self.reference_vs_chunks)),
            answer_vs_reference=tuple(self.answer_vs_reference), reference_vs_answer=tuple(self.reference_vs_answer),
            chunk_relevance=tuple(self.relevance), answer_matches=tuple(self.matched),
            missing_status=missing_status, missing_reason=missing_reason)
