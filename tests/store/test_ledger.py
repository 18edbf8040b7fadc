import json
import random

import pytest

from evaluators.store import ledger
from evaluators.judges import prompts

CHUNKS = [
    "The Cornish heath (Erica vagans) grows on the Lizard peninsula, where the serpentine soil suits it. " * 3,
    "Line one of a PDF page,\nline two, hyphen-\nated, then line three;\n" * 8,
    "Ünïcödé «quotes», emoji 🌿, CJK 植物, RTL שלום, a tab\tand a \"quoted\" back\\slash. " * 4,
]
# Texts that are awkward to cut or to escape, or that look like the store's own references.
AWKWARD = ["", "\n\n\n", "\n", "\"", "\\", "\\n", "\u2028", "\x00", "é", "🌿" * 120,
           '{"literal": null, "hash": "0123456789abcdef0123456789abcdef"}', "0123456789abcdef0123456789abcdef",
           "\x00text\x00", "x" * (ledger.MIN_SHARED - 1), "y" * ledger.MIN_SHARED, "\n\n".join(["para"] * 80), *CHUNKS]


def _body(system: str, user: str) -> dict:
    return {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": system},
                                                 {"role": "user", "content": user}],
            "temperature": 0, "seed": 0,
            "response_format": {"type": "json_schema", "json_schema": prompts.SCHEMA}}


def _round_trip(request: str, quoted=()) -> tuple[list, dict]:
    parts, texts = ledger.pack(request, quoted)
    assert ledger.unpack(parts, texts.__getitem__) == request
    assert all((literal is None) != (hash_ is None) for literal, hash_ in parts)
    assert all(ledger.text_hash(text) == hash_ for hash_, text in texts.items())
    return parts, texts


def test_every_request_comes_back_byte_for_byte():
    rng = random.Random(0)
    for _ in range(400):
        pieces = rng.choices(AWKWARD, k=rng.randint(0, 6))
        user = rng.choice(["", "\n\n", "\n"]).join(pieces)
        system = rng.choice(AWKWARD)
        body = _body(system, user)
        quoted = rng.sample(AWKWARD, k=rng.randint(0, 5))
        for request in (json.dumps(body, ensure_ascii=False), json.dumps(body), json.dumps(body, indent=2),
                        json.dumps(body, ensure_ascii=False)[:-1], user, system):
            _round_trip(request, quoted)


def test_text_that_is_not_the_judges_json_is_one_fragment():
    for request in ("", "not json", '{"a": 1}  ', json.dumps({"content": "é" * 300})):  # the last: ensure_ascii
        parts, _ = _round_trip(request)
        assert len(parts) == 1
    assert ledger.pack("")[0] == [("", None)]  # an empty request is one part, never none


def test_system_prompt_and_schema_are_stored_by_hash_and_shared_by_requests():
    # however short the sample's message: a multi-line string is cut out of the JSON around it
    first, first_texts = _round_trip(json.dumps(_body(prompts.SYSTEM, "Q:\nWho?"), ensure_ascii=False))
    second, second_texts = _round_trip(json.dumps(_body(prompts.SYSTEM, "Q:\nWhen?"), ensure_ascii=False))
    assert len(first_texts) == 2 and first_texts == second_texts  # the system prompt, the schema tail
    prefix = '{"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "'
    assert [literal for literal, _ in first if literal] == [prefix, '"}, {"role": "user", "content": "Q:\\nWho?']


def test_chunks_are_cut_out_wherever_the_prompt_puts_them():
    question, answer, reference = "Which heath grows on the Lizard?", "Cornish heath. " * 20, "Erica vagans."
    claims = ["Cornish heath grows on the Lizard."]
    requests = [json.dumps(_body("system", user), ensure_ascii=False) for user in (
        prompts.verification_messages(prompts.sample_text(question, reference, answer, CHUNKS), claims, claims,
                                      range(len(CHUNKS)), True)[1]["content"],
        prompts.holistic_messages(prompts.sample_text(question, reference, answer, list(reversed(CHUNKS))))[1]["content"],
        f"<<{CHUNKS[0]}>>{CHUNKS[1]}|{CHUNKS[2]}")]  # any delimiters, none at all
    stored = {}
    for request in requests:
        parts, texts = _round_trip(request, [*CHUNKS, answer, question])
        stored |= texts
        literals = "".join(literal or "" for literal, _ in parts)
        assert not any(json.dumps(c, ensure_ascii=False)[1:-1] in literals for c in CHUNKS)
    chunk_texts = {json.dumps(c, ensure_ascii=False)[1:-1] for c in CHUNKS}
    assert chunk_texts <= set(stored.values())  # each chunk once, whatever its position and its neighbours


def test_what_surrounds_quoted_texts_stays_inline():
    claims = [f"Claim number {i} says something specific about the heath and the serpentine." for i in range(6)]
    sample = prompts.sample_text("Which heath?", "Erica vagans.", "Cornish heath.", CHUNKS)
    user = prompts.verification_messages(sample, claims, claims, range(len(CHUNKS)), True)[1]["content"]
    parts, texts = _round_trip(json.dumps(_body("s", user), ensure_ascii=False), CHUNKS)
    assert len(texts) == len(CHUNKS) + 1  # the chunks and the schema tail; the claims (sample-specific) inline
    assert any(claims[0] in (literal or "") for literal, _ in parts)


def test_a_quoted_text_inside_a_longer_one_is_cut_with_the_longer():
    inner = "inner text that is long enough to be shared on its own. " * 5
    outer = "Outer chunk: " + inner + " and more."
    request = json.dumps(_body("s", f"A\n{outer}\nB\n{inner}\nC"), ensure_ascii=False)
    _, texts = _round_trip(request, [inner, outer])
    assert set(texts.values()) >= {outer, inner}


@pytest.mark.parametrize("short", ["", "a", "x" * (ledger.MIN_SHARED - 1)])
def test_short_one_line_strings_stay_part_of_the_json_around_them(short):
    request = json.dumps({"name": short, "schema": prompts.SCHEMA})
    parts, texts = _round_trip(request, [short])
    assert parts == [(None, ledger.text_hash(request))] and texts == {ledger.text_hash(request): request}
