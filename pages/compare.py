"""compare (to come)."""
import streamlit as st

st.title("compare")
st.info("This screen is being built.")
