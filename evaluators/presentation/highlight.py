"""Safe HTML of answers and chunks: an answer with its claims highlighted by verdict, claim badges, chunk
cards. Pure functions returning strings, for the Claims and Error analysis screens (`st.html`, which does no
markdown processing) and for the report file (evaluators/presentation/report.py), which needs no Streamlit.

Every piece of uploaded text (answers, claims, chunks, method names, chunk ids, reasons) goes
through `html.escape` before it is placed in the markup, so `<script>`, `<img onerror=...>` and
`javascript:` URLs arrive as inert text. The only tags and attributes in the output are the ones
written here; the only links are in-page anchors built from integers.
"""
from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from evaluators.records.judgments import CONTRADICTED, NOT_FOUND, SUPPORTED, UNKNOWN

# (background, border/text) per verdict: green, red, amber, grey.
COLOURS = {
    SUPPORTED: ("#dcfce7", "#15803d"),
    CONTRADICTED: ("#fee2e2", "#b91c1c"),
    NOT_FOUND: ("#fef3c7", "#b45309"),
    UNKNOWN: ("#e5e7eb", "#4b5563"),
}
LABELS = {SUPPORTED: "supported", CONTRADICTED: "contradicted", NOT_FOUND: "not found", UNKNOWN: "unknown"}
# Text on the pastel backgrounds above: always dark, whatever the page's theme (inherited, a dark theme's light text
# on pastel is unreadable). Contrast with every background above is at least 12:1 (WCAG asks 4.5:1).
MARK_TEXT = "#111827"
# Secondary text on the page's own background (captions, a chunk's facts): the theme's text colour, dimmed, so it
# reads on a light and on a dark page alike (a fixed grey would fade into one of them).
MUTED = "color:inherit;opacity:0.72"


def esc(text: object) -> str:
    """Escaped text (quotes too, so it is safe inside attributes as well); None -> ""."""
    return "" if text is None else html.escape(str(text), quote=True)


@dataclass(frozen=True)
class ClaimMark:
    """One claim to highlight: its label (A1, R2), text, verdict and the ranks (0-based) of the
    chunks that support it, which become in-page links to the chunk cards."""

    label: str
    text: str
    verdict: str
    chunk_ranks: tuple[int, ...] = ()
    chunk_ids: tuple[str, ...] = ()


def _colour(verdict: str) -> tuple[str, str]:
    return COLOURS.get(verdict, COLOURS[UNKNOWN])


def find_spans(text: str, claims: Sequence[str]) -> list[tuple[int, int] | None]:
    """Where each claim stands verbatim in `text` (whitespace runs may differ), or None.

    Claims are looked for after the previous one first (extractors keep the answer's order), then
    anywhere; a span that would overlap one already placed is None, so marks never nest."""
    taken: list[tuple[int, int]] = []
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for claim in claims:
        words = claim.split()
        if not words:
            spans.append(None)
            continue
        pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
        found = None
        for start in (cursor, 0):
            for match in pattern.finditer(text, start):
                span = match.span()
                if not any(span[0] < end and start_ < span[1] for start_, end in taken):
                    found = span
                    break
            if found:
                break
        spans.append(found)
        if found:
            taken.append(found)
            cursor = found[1]
    return spans


def chunk_anchor(column: int, rank: int) -> str:
    """The id of a chunk card: integers only, so no uploaded text ever reaches an attribute name or URL."""
    return f"rs-chunk-{int(column)}-{int(rank)}"


def _chunk_links(claim: ClaimMark, column: int | None) -> str:
    if column is None or not claim.chunk_ranks:
        return ""
    links = " ".join(f'<a href="#{chunk_anchor(column, r)}" style="{MUTED};text-decoration:underline dotted">'
                     f'[{int(r) + 1}]</a>' for r in claim.chunk_ranks)
    return f'<sub style="font-size:0.7em">{links}</sub>'


def _title(claim: ClaimMark) -> str:
    supported_by = f" by chunks {', '.join(claim.chunk_ids)}" if claim.chunk_ids else ""
    return esc(f"{claim.label}: {LABELS.get(claim.verdict, claim.verdict)}{supported_by}")


def _mark(text: str, claim: ClaimMark, column: int | None) -> str:
    background, border = _colour(claim.verdict)
    return (f'<mark title="{_title(claim)}" style="background:{background};color:{MARK_TEXT};'
            f'border-bottom:2px solid {border};padding:0 2px;border-radius:3px">{esc(text)}'
            f'<sup style="color:{border};font-size:0.7em;margin-left:2px">{esc(claim.label)}</sup></mark>'
            f'{_chunk_links(claim, column)}')


def badge(verdict: str) -> str:
    background, border = _colour(verdict)
    return (f'<span style="background:{background};color:{border};border:1px solid {border};border-radius:8px;'
            f'padding:0 6px;font-size:0.8em;white-space:nowrap">{esc(LABELS.get(verdict, verdict))}</span>')


def legend() -> str:
    return ('<div style="font-size:0.85em">Claims by verdict against the retrieved chunks: '
            + " ".join(badge(v) for v in COLOURS) + "</div>")


def claim_list(claims: Sequence[ClaimMark], column: int | None = None) -> str:
    """Claims as a list with coloured verdict badges (for claims not found verbatim in the text)."""
    if not claims:
        return ""
    items = "".join(
        f'<li style="margin:2px 0">{badge(c.verdict)} <b>{esc(c.label)}</b> {esc(c.text)}{_chunk_links(c, column)}</li>'
        for c in claims)
    return f'<ul style="list-style:none;padding-left:0;margin:4px 0">{items}</ul>'


def text_list(items: Sequence[str]) -> str:
    """Plain items (claim texts) as a bullet list; "none" when empty."""
    if not len(items):
        return f'<i style="{MUTED}">none</i>'
    return ('<ul style="margin:2px 0 6px 0">' + "".join(f'<li>{esc(t)}</li>' for t in items) + "</ul>")


def highlight(text: str, claims: Sequence[ClaimMark], column: int | None = None) -> str:
    """`text` (an answer) with every claim found verbatim in it marked by verdict; the claims not
    found verbatim (an LLM judge rewrites claims) follow as a badge list. `column` numbers the
    chunk cards the claims link to (see `chunk_cards`); None: no links."""
    spans = find_spans(text, [c.text for c in claims])
    placed = sorted(((span, claim) for span, claim in zip(spans, claims) if span is not None), key=lambda p: p[0])
    parts, at = [], 0
    for (start, end), claim in placed:
        parts.append(esc(text[at:start]))
        parts.append(_mark(text[start:end], claim, column))
        at = end
    parts.append(esc(text[at:]))
    body = "".join(parts) if text.strip() else f'<i style="{MUTED}">(empty answer)</i>'
    out = f'<div style="white-space:pre-wrap;line-height:1.6">{body}</div>'
    rest = [c for span, c in zip(spans, claims) if span is None]
    if rest:
        note = ("Claims as the judge phrased them (not found verbatim in the answer):" if placed
                else "Claims as the judge phrased them:")
        out += f'<div style="font-size:0.85em;{MUTED};margin-top:6px">{note}</div>' + claim_list(rest, column)
    return out


def text_box(text: str, *, label: str | None = None) -> str:
    """A block of uploaded text, escaped, line breaks kept, with an optional (escaped) label."""
    head = f'<div style="font-size:0.8em;{MUTED}">{esc(label)}</div>' if label else ""
    return (f'<div style="border-left:3px solid #d1d5db;padding:4px 10px;margin:4px 0">{head}'
            f'<div style="white-space:pre-wrap">{esc(text)}</div></div>')


def caption(text: str) -> str:
    """A small grey line holding uploaded or user-typed text (a run name): escaped, never markdown."""
    return f'<div style="{MUTED};font-size:0.875em">{esc(text)}</div>'


def heading(text: str, level: int = 3) -> str:
    """A heading holding uploaded text (a method name): escaped, never markdown."""
    level = min(max(int(level), 1), 6)
    return f'<h{level} style="margin:0.2em 0">{esc(text)}</h{level}>'


@dataclass(frozen=True)
class ChunkCard:
    rank: int  # 0-based position in the retrieved list
    chunk_id: str
    text: str
    relevant: bool | None
    relevance_score: float | None
    used_by_answer: bool | None
    supports: tuple[str, ...] = ()  # labels of the claims it supports (A1, R2)
    shared_with: tuple[str, ...] = ()  # other methods that retrieved the same text


def _flag(value: bool | None, yes: str, no: str) -> str:
    return "not judged" if value is None else (yes if value else no)


def chunk_cards(cards: Sequence[ChunkCard], column: int, max_height: int = 460) -> str:
    """The retrieved chunks as cards in a scrollable box; each card is the target of its claims' links."""
    if not cards:
        return f'<i style="{MUTED}">No retrieved chunks.</i>'
    out = []
    for c in cards:
        score = "" if c.relevance_score is None else f" ({c.relevance_score:.0f})"
        facts = [f"#{c.rank + 1}", esc(c.chunk_id), _flag(c.relevant, "relevant", "not relevant") + score,
                 _flag(c.used_by_answer, "used by the answer", "not used")]
        if c.supports:
            facts.append("supports " + esc(", ".join(c.supports)))
        shared = ""
        if c.shared_with:
            shared = (' <span style="background:#e0e7ff;color:#3730a3;border-radius:8px;padding:0 6px;font-size:0.8em">'
                      f"shared with {esc(', '.join(c.shared_with))}</span>")
        border = "#15803d" if c.used_by_answer else "#d1d5db"
        out.append(
            f'<div id="{chunk_anchor(column, c.rank)}" style="border:1px solid {border};border-radius:6px;'
            f'padding:6px 8px;margin:6px 0">'
            f'<div style="font-size:0.8em"><span style="{MUTED}">{" · ".join(facts)}</span>{shared}</div>'
            f'<div style="white-space:pre-wrap;font-size:0.9em">{esc(c.text)}</div></div>')
    return f'<div style="max-height:{int(max_height)}px;overflow-y:auto">{"".join(out)}</div>'


def score_chips(chips: Sequence[tuple[str, str]]) -> str:
    """(name, shown value) pairs as a row of small chips (values are escaped like everything else)."""
    return '<div style="display:flex;flex-wrap:wrap;gap:4px">' + "".join(
        f'<span style="border:1px solid #d1d5db;border-radius:6px;padding:1px 6px;font-size:0.85em">'
        f'<span style="{MUTED}">{esc(name)}</span> <b>{esc(value)}</b></span>' for name, value in chips) + "</div>"


# -- from the Claims view's tables (queries.claims.view) -------------------------------------------

def _items(joined: str) -> tuple[str, ...]:
    """A cell's comma-joined list back as items (the markup joins them again the same way)."""
    return tuple(joined.split(", ")) if joined else ()


def claim_marks(answer_claims: pd.DataFrame, chunks: pd.DataFrame) -> list[ClaimMark]:
    """One answer's claims (its rows of the view's `answer_claims`) to highlight, each linked to the ranks of the
    chunks (its rows of `chunks`) that support it."""
    return [ClaimMark(c["claim"], c["text"], c["verdict"],
                      tuple(r - 1 for r, s in zip(chunks["rank"], chunks["supports"]) if c["claim"] in _items(s)),
                      _items(c["supporting chunks"]))
            for c in answer_claims.to_dict("records")]


def cards(chunks: pd.DataFrame) -> list[ChunkCard]:
    """One answer's retrieved chunks (its rows of the view's `chunks`) as cards."""
    return [ChunkCard(int(c["rank"]) - 1, c["chunk_id"], c["text"],
                      None if pd.isna(c["relevant"]) else bool(c["relevant"]),
                      None if pd.isna(c["relevance"]) else float(c["relevance"]),
                      None if pd.isna(c["used"]) else bool(c["used"]), _items(c["supports"]), _items(c["shared with"]))
            for c in chunks.to_dict("records")]
