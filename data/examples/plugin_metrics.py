"""Two Python metrics of your own, as a RAGScope plug-in (README, "Python metrics (plug-ins)"):

    python -m evaluators run --golden gold.csv --outputs out.jsonl --plugin data/examples/plugin_metrics.py

Each function scores one sample (`sample.golden`: question, reference, checks ...; `sample.output`: answer,
contexts) and returns a number on its scale, or None (or `not_applicable("why")`) where it does not apply."""
import re

from evaluators.metrics.plugins import not_applicable, plugin_metric

CITATION = re.compile(r"\[(\d+)\]")


@plugin_metric("answer_has_citation", scale="binary", higher_is_better=True, needs=("contexts",),
               formula="1 when the answer cites a retrieved chunk as [n] (n from 1 to the number of chunks), else 0.")
def answer_has_citation(sample):
    cited = {int(n) for n in CITATION.findall(sample.output.answer)}
    return float(any(1 <= n <= len(sample.output.contexts) for n in cited))


@plugin_metric("answer_brevity", scale="likert", higher_is_better=True,
               formula="5 for an answer of at most 40 words, one point less per 40 more words, at least 1.")
def answer_brevity(sample):
    words = len(sample.output.answer.split())
    if words == 0:
        return not_applicable("the answer is empty")
    return max(1.0, 5.0 - (words - 1) // 40)
