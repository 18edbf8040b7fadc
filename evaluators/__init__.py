"""RAGScope's metric engine: load golden sets and RAG outputs, score them, store them in DuckDB."""
