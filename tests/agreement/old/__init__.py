"""The agreement code as it was before issue 10 (performance), as a reference for tests."""
