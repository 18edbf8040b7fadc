"""Streamlit helpers shared by the pages: the run in view, exports, the formula panel, escaping."""
