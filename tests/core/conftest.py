from __future__ import annotations

from tests.api.conftest import world  # noqa: F401  (the API tests' world: every kind of job needs one)
