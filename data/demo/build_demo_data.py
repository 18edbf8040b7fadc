"""Copy the real-answer demo sources from ../shared/data into data/demo/, unchanged, with their licence.

- data/demo/aragog/: haystack's evaluation CSVs of four ARAGOG retrieval settings and its baseline RAG vs HyDE report
  (deepset-ai/haystack-evaluation)
- data/demo/clapnq/: InspectorRAGet's ClapNQ experiment file with its human ratings (IBM/InspectorRAGet)

Both sources are Apache-2.0: each folder gets the LICENSE, the source's SOURCE.md (provenance) and a note
saying what was copied. The files are copied byte for byte (the script checks it), so the demo runs
score exactly what the sources published. Run from the repo root:
    python data/demo/build_demo_data.py
"""
from __future__ import annotations

import argparse
import filecmp
import shutil
from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
SHARED_DATA = DEMO_DIR.parents[2] / "shared" / "data"

# demo folder -> (shared folder, files copied unchanged)
SOURCES = {
    "aragog": ("aragog_haystack", (
        "detailed_all-MiniLM-L6-v2__top_k1__chunk_size64.csv",
        "detailed_all-MiniLM-L6-v2__top_k3__chunk_size128.csv",
        "detailed_all-mpnet-base-v2__top_k2__chunk_size128.csv",
        "detailed_msmarco-distilroberta-base-v2__top_k3__chunk_size256.csv",
        "baseline_rag_vs_hyde.csv",
        "LICENSE",
    )),
    "clapnq": ("inspectorraget_clapnq", ("rag_model_performance.json", "LICENSE")),
}
NOTES = {
    "aragog": "baseline_rag_vs_hyde.csv's one contexts column holds the baseline's chunks only, so the baseline vs "
              "HyDE demo judges both pipelines' answers without chunks (data/demo/README.md).",
    "clapnq": "The file is copied whole (3.5 MB); the demo reads the 100 tasks that have results.",
}


def copy_source(folder: str, shared: Path, out: Path) -> list[Path]:
    """Copy one source's files unchanged, then its SOURCE.md with a note on what this folder holds."""
    source_dir, files = SOURCES[folder]
    target = out / folder
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in files:
        dest = target / name
        shutil.copyfile(shared / source_dir / name, dest)
        if not filecmp.cmp(shared / source_dir / name, dest, shallow=False):
            raise RuntimeError(f"{dest} differs from its source after copying")
        copied.append(dest)
    provenance = (shared / source_dir / "SOURCE.md").read_text(encoding="utf-8").rstrip("\n")
    note = (f"\n\n## In RAGScope\n\nCopied from `../shared/data/{source_dir}/` by `data/demo/build_demo_data.py`: "
            f"{', '.join(f'`{n}`' for n in files)}, unchanged. {NOTES[folder]}\n")
    (target / "SOURCE.md").write_text(provenance + note, encoding="utf-8")
    return [*copied, target / "SOURCE.md"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED_DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=DEMO_DIR, help="the demo data folder")
    args = parser.parse_args()
    for folder in SOURCES:
        for path in copy_source(folder, args.shared, args.out):
            print(f"{path.stat().st_size:>10,}  {path}")


if __name__ == "__main__":
    main()
