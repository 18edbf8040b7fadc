import pytest

_SUMMARY = pytest.StashKey[str]()


@pytest.fixture
def behaviour_summary(request):
    """Call it with the suite's report: the terminal summary shows it after the run, whether the test passed or not."""
    return lambda text: request.config.stash.__setitem__(_SUMMARY, text)


def pytest_terminal_summary(terminalreporter, config):
    if text := config.stash.get(_SUMMARY, None):
        terminalreporter.write_sep("=", "judge behaviour suite")
        terminalreporter.write_line(text)
