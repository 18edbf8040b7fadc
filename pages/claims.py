"""claims (to come)."""
import streamlit as st

st.title("claims")
st.info("This screen is being built.")
