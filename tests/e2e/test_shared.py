"""A shared app in a real browser (issue 12): `streamlit run app.py` listening on 0.0.0.0 with a password asks for it
before any page and shows no data until then; the Data screen says its upload limit, and what to do beyond it, when
Streamlit refuses a bigger file. The browser reaches the app on 127.0.0.1 only."""
from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import SHOTS, settle, chromium, serving

pytestmark = pytest.mark.e2e

PASSWORD = "e2e-Pa55word with spaces"


@pytest.fixture(scope="module")
def shared(tmp_path_factory, demo_db_file):
    """(page, url) of the GraphRAG demo database served on every interface, with a password and a 1 MB upload limit."""
    db = tmp_path_factory.mktemp("shared") / "shared.duckdb"
    shutil.copy(demo_db_file, db)
    with serving(db, "--server.maxUploadSize", "1", address="0.0.0.0", env={"RAGSCOPE_PASSWORD": PASSWORD}) as url, \
            chromium() as page:
        yield page, url


def _sign_in(page, password: str) -> None:
    field = page.get_by_label("Password", exact=True)
    field.fill(password)
    page.get_by_role("button", name="Sign in").click()
    settle(page)


def test_the_sign_in_screen_comes_first_and_no_data_before_it(shared):
    page, url = shared
    for path in ("", "compare", "claims?question=q1"):  # a page's own address does not get around it
        page.goto(f"{url}/{path}")
        page.wait_for_selector("[data-testid='stApp']")
        settle(page)
        expect(page.get_by_label("Password", exact=True)).to_be_visible()
        body = page.inner_text("body")
        assert "GraphRAG" not in body and "local_search" not in body and "Overview" not in body, body
    page.screenshot(path=str(SHOTS / "20-sign-in.png"), full_page=True)

    _sign_in(page, "a wrong guess")
    expect(page.get_by_text("Wrong password.")).to_be_visible()
    expect(page.get_by_label("Password", exact=True)).to_have_value("")  # cleared, never echoed
    assert "a wrong guess" not in page.inner_text("body") and "GraphRAG" not in page.inner_text("body")

    _sign_in(page, PASSWORD)
    expect(page.get_by_role("heading", name="Claims", exact=True)).to_be_visible()  # the page the link asked for
    expect(page.get_by_text("GraphRAG").first).to_be_visible()
    assert PASSWORD not in page.content()


def test_a_file_over_the_upload_limit_is_refused_with_the_limit_and_the_command_line(shared, tmp_path):
    page, url = shared
    page.goto(f"{url}/data")  # a new browser session: signed out again
    password = page.get_by_label("Password", exact=True)
    expect(password).to_be_visible()
    _sign_in(page, PASSWORD)
    uploader = page.locator("[data-testid='stFileUploader']").filter(has_text="Golden sets and RAG outputs")
    expect(uploader).to_be_visible()  # the page the address asked for
    big = tmp_path / "big_golden.csv"
    row = "q{},What is {}?," + "x" * 500 + "\n"
    big.write_text("question_id,question,reference\n" + "".join(row.format(i, i) for i in range(2200)))
    assert big.stat().st_size > 1024 * 1024
    uploader.locator("input[type='file']").set_input_files(str(big))
    expect(page.get_by_text("File must be 1.0MB or smaller.")).to_be_visible()  # Streamlit's own refusal
    expect(page.get_by_text("Up to 1 MB per file. A bigger file goes through the command line").first).to_be_visible()
    expect(page.get_by_text("python -m evaluators run --golden GOLDEN --outputs OUTPUTS").first).to_be_visible()
    page.screenshot(path=str(SHOTS / "21-upload-limit.png"), full_page=True)
