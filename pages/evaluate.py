"""evaluate (to come)."""
import streamlit as st

st.title("evaluate")
st.info("This screen is being built.")
