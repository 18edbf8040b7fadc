"""Input files -> validated golden items and RAG outputs.

`load` turns a CSV / JSON / JSONL / Parquet file (a path, or the bytes of an upload) into a
`Dataset`, or raises `LoadError` listing every problem found, each naming file, row and field.
Nothing partial is ever returned, so nothing half-valid reaches the store.

The pipeline, one module a step:
- formats.py   bytes -> records: the source, format detection, encodings, the four parsers (Parquet read a
               batch at a time), the up-front memory bound (a file too big for the machine is refused before
               its rows are read); `read_records` and `column_names` for readers that give the columns their own
               meaning
- columns.py   records' columns -> RAGScope's fields: ALIASES, the column mapping, missing columns
- cells.py     one cell -> text, chunks or checks, refused over MAX_CELL_CHARS or as a formula
- jsontext.py  JSON text (a file, a line, a cell) -> values, refused past MAX_DEPTH levels or with a key twice
- records.py   records -> GoldenItems and RagOutputs, question ids, repeats within a file
- dataset.py   `load` (the pipeline) and `check_against_golden` (outputs across files)
- criteria.py  a criteria file (JSON, TOML or YAML) -> the analyst's criteria (`read_criteria`)
- relevant.py  a qrels file into the golden set (`with_qrels`), retrieved lists checked against its relevant ids
- problems.py  the problems of one file, and the words messages use for values
"""
from evaluators.loaders.cells import MAX_CELL_CHARS
from evaluators.loaders.columns import ALIASES, GOLDEN_FIELDS, OUTPUT_FIELDS
from evaluators.loaders.criteria import read_criteria
from evaluators.loaders.dataset import ROLES, Dataset, check_against_golden, load
from evaluators.loaders.formats import FORMATS, Records, column_names, detect_format, read_records
from evaluators.loaders.jsontext import MAX_DEPTH
from evaluators.loaders.records import derive_question_id
from evaluators.loaders.relevant import read_qrels, with_qrels

__all__ = ["ALIASES", "FORMATS", "GOLDEN_FIELDS", "MAX_CELL_CHARS", "MAX_DEPTH", "OUTPUT_FIELDS", "ROLES", "Dataset",
           "Records", "check_against_golden", "column_names", "derive_question_id", "detect_format", "load",
           "read_criteria", "read_qrels", "read_records", "with_qrels"]
