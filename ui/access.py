"""Who may use the app. Served on loopback only (the default: .streamlit/config.toml), only people on this machine
can reach it. Served to a network on purpose (`make app HOST=0.0.0.0`, or any other address), it shows a sign-in
screen before any page and asks for $RAGSCOPE_PASSWORD; without one set it serves nothing at all. A password that
is set is asked for on loopback too (an app behind a reverse proxy listens there).

The password is compared in constant time (HMAC-compare of SHA-256 digests: neither its characters nor its length
leak through timing). It is never logged, stored or shown: the field is cleared on submit and only "signed in"
stays in the session. Failed attempts from one address are taken one at a time, each after a wait that doubles
(1, 2, 4 ... 30 s), so guessing is slow however many tabs try at once.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import threading
import time
from collections import defaultdict

import streamlit as st

PASSWORD_VARIABLE = "RAGSCOPE_PASSWORD"
SIGNED_IN = "_ragscope_signed_in"
LOOPBACK = ("localhost", "::1", "[::1]")
MAX_DELAY = 30.0


def is_shared(address: str) -> bool:
    """Whether the server listens beyond this machine (an empty address: every interface)."""
    address = address.strip()
    return not (address in LOOPBACK or address.startswith("127."))


def password_matches(given: str, expected: str) -> bool:
    digest = lambda text: hashlib.sha256(text.encode("utf-8")).digest()  # noqa: E731
    return hmac.compare_digest(digest(given), digest(expected))


class Throttle:
    """Per address: one attempt at a time, the next one after 2**(failures - 1) seconds (at most MAX_DELAY)."""

    def __init__(self, max_delay: float = MAX_DELAY):
        self.max_delay = max_delay
        self._failures: dict[str, int] = defaultdict(int)
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()

    def delay(self, address: str) -> float:
        failures = self._failures[address]
        return min(2.0 ** (failures - 1), self.max_delay) if failures else 0.0

    def attempt(self, address: str, check) -> bool:
        """`check()` after this address's wait, alone among its attempts; its failures counted."""
        with self._guard:
            lock = self._locks[address]
        with lock:
            time.sleep(self.delay(address))
            ok = check()
            self._failures[address] = 0 if ok else self._failures[address] + 1
            return ok


THROTTLE = Throttle()


def _sign_in_screen() -> None:
    st.title("RAGScope")
    expected = os.environ.get(PASSWORD_VARIABLE, "")
    if not expected:
        st.error(f"This app is served to the network ({st.get_option('server.address') or 'every interface'}) but "
                 f"no password is set, so it shows nothing. Restart it with {PASSWORD_VARIABLE} set, or serve it on "
                 "this machine only (`make app`, which listens on 127.0.0.1).")
        return
    with st.form("sign-in", clear_on_submit=True):
        given = st.text_input("Password", type="password", help=f"The password in {PASSWORD_VARIABLE} where the app "
                                                                "was started.")
        submitted = st.form_submit_button("Sign in", type="primary")
    if not submitted:
        return
    if THROTTLE.attempt(st.context.ip_address or "unknown", lambda: password_matches(given, expected)):
        st.session_state[SIGNED_IN] = True
        st.rerun()
    st.error("Wrong password.")


def require_sign_in(pages: dict[str, list]) -> None:
    """On a shared app, or wherever a password is set, show the sign-in screen and stop this script run until
    the session has signed in. A set password is always asked for: behind a reverse proxy the app listens on
    127.0.0.1 and is shared all the same."""
    shared = is_shared(st.get_option("server.address") or "") or os.environ.get(PASSWORD_VARIABLE)
    if not shared or st.session_state.get(SIGNED_IN):
        return
    # Every page's address shows the sign-in screen (nothing of the page runs), so a link to a page opens it
    # after sign-in (the first, the default page, answers at /); the navigation is hidden: no page name shows.
    st.navigation([st.Page(_sign_in_screen, title="Sign in", url_path=page.url_path or "sign-in")
                   for section in pages.values() for page in section], position="hidden").run()
    st.stop()


def sign_out_button() -> None:
    """In the sidebar of a shared app: end this session's sign-in."""
    if st.session_state.get(SIGNED_IN) and st.button("Sign out", key="sign-out"):
        del st.session_state[SIGNED_IN]
        st.rerun()
