"""The library's command lines report bad input the same way: exit status 2
and one line on stderr naming the flag (or the file), never a traceback.

argparse's own ``error`` prints the whole usage first (several lines); this
parser prints only ``error: <what>``. Flag values are checked after parsing
with the library's argument checks (`tf1_awd_sparse.base.checks`, or the
language model's parameter table), each given the flag's name.

This module imports no TensorFlow (``awd-lm info`` runs without it).
"""
from __future__ import absolute_import, division, print_function

import argparse
import sys

__all__ = ["ArgumentParser", "fail", "requirement_line"]


def fail(message, status=2):
    """Prints ``error: <message>`` (its first line) to stderr and exits
    with ``status``: 2 (bad input) unless a program documents another
    (e.g. 1 for a training run that diverged).

    Raises:
      SystemExit: always, with code ``status``.
    """
    lines = str(message).strip().splitlines() or [""]
    print("error: %s" % lines[0], file=sys.stderr)
    raise SystemExit(status)


def requirement_line(error, program):
    """The one line for an ``ImportError`` of what every program needs:
    TensorFlow itself, or the library's own refusal of this TensorFlow
    (`tf1_awd_sparse.base.compat`, which names the fix); None for any
    other ``ImportError`` (a bug, shown with its traceback).

    Args:
      error: the ``ImportError``.
      program: the program's name (e.g. ``awd-lm score``).
    """
    name = getattr(error, "name", None)
    if name == "tensorflow":
        return "%s needs TensorFlow: %s" % (program, error)
    if name == "tf1_awd_sparse.base.compat":
        return str(error)
    return None


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line, exit status 2.

    ``check_flags`` validates parsed values with check functions
    ``(value, name) -> value`` that raise ValueError naming ``name``.
    """

    def error(self, message):
        """Ends the program with ``error: <message>``, exit status 2."""
        fail(message)

    def format_help(self):
        """The help text, every flag with a default showing it as
        ``(default: VALUE)`` unless its help already speaks of its default
        (flags added later, in groups or by ``set_defaults``, included: the
        text is filled in here, when the help is printed)."""
        for action in self._actions:
            if (action.default is not None
                    and action.default is not argparse.SUPPRESS
                    and action.help is not argparse.SUPPRESS
                    and "default" not in (action.help or "").lower()):
                action.help = ("%s (default: %%(default)s)"
                               % (action.help or "")).lstrip()
        return super(ArgumentParser, self).format_help()

    def check_flags(self, args, checks):
        """Validates parsed flags in place.

        Args:
          args: the ``argparse.Namespace``.
          checks: dict ``dest -> check(value, name)``; None values (flags
            not given, without a default) are not checked.

        Returns:
          ``args``, with each checked value replaced by what the check
          returned.

        Raises:
          SystemExit: (code 2, via `fail`) the first value a check rejects;
            the line names the flag, e.g. ``--bptt must be a positive int,
            got 0``.
        """
        for dest, check in checks.items():
            value = getattr(args, dest)
            if value is None:
                continue
            try:
                setattr(args, dest, check(value, self._flag(dest)))
            except ValueError as e:
                fail(e)
        return args

    def _flag(self, dest):
        for action in self._actions:
            if action.dest == dest and action.option_strings:
                return action.option_strings[0]
        return dest
