"""correlations (to come)."""
import streamlit as st

st.title("correlations")
st.info("This screen is being built.")
