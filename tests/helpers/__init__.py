"""What tests share: servers, files, stored runs and screen checks built for them. No test module imports another;
they import from here."""
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
