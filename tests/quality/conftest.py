"""The agreement tests' small codebook and `annotate` helper, for the quality tests."""

from tests.agreement.conftest import annotate, codebook, items  # noqa: F401  (fixtures)
