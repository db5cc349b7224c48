"""Run in a render process by tests/corpus/test_render_pool.py (no Django: a render process has none)."""

from apps.corpus import rendering


def lexers_loaded() -> int:
    """How many lexers this render process has loaded."""
    return rendering._lexer.cache_info().currsize
