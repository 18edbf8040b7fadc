"""data (to come)."""
import streamlit as st

st.title("data")
st.info("This screen is being built.")
