"""Docstring sections shared by ops, layers and cells that mirror each other.

The text is written once (here or next to the shared code) and appended to
each mirror's own docstring, so `help()` shows complete documentation.
"""
import inspect
import textwrap


def append(*sections):
    """Decorator appending `sections` (indented text) to `obj.__doc__`."""
    def decorate(obj):
        parts = [inspect.cleandoc(obj.__doc__ or "")]
        parts += [textwrap.dedent(s).strip("\n") for s in sections]
        obj.__doc__ = "\n\n".join(p for p in parts if p) + "\n"
        return obj
    return decorate
