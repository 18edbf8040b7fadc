"""error_analysis (to come)."""
import streamlit as st

st.title("error_analysis")
st.info("This screen is being built.")
