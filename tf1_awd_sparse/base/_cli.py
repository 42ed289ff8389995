"""The library's command lines report bad input the same way: exit status 2
and one line on stderr naming the flag (or the file), never a traceback.

argparse's own ``error`` prints the whole usage first (several lines); this
parser prints only ``error: <what>``. Flag values are checked after parsing
with the library's argument checks (`tf1_awd_sparse.base.checks`, or the
language model's parameter table), each given the flag's name.

An ``OSError`` handed to `fail` (a path that cannot be read or written,
wherever the program met it) becomes one line naming the flag whose path
it concerns: ``error: --out /proc/x.tflite: cannot write: No such file or
directory``. The parser remembers the paths it parsed for that.

This module imports no TensorFlow (``awd-lm info`` runs without it).
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import sys

__all__ = ["ArgumentParser", "fail", "os_error_line", "requirement_line",
           "WRITTEN", "interrupted", "broken_pipe", "quoted",
           "INTERRUPTED", "BROKEN_PIPE"]

#: The destinations of the flags the programs write to (an ``OSError`` on
#: their paths "cannot write"; on any other flag's, "cannot read").
WRITTEN = ("out", "compress_out", "model_dir")

# (flag, path, written) of the last command line parsed (`ArgumentParser`).
_PATHS = []


def fail(message, status=2):
    """Prints ``error: <message>`` (its first line) to stderr and exits
    with ``status``: 2 (bad input) unless a program documents another
    (e.g. 1 for a training run that diverged).

    Raises:
      SystemExit: always, with code ``status``.
    """
    if isinstance(message, OSError):
        message = os_error_line(message)
    lines = str(message).strip().splitlines() or [""]
    print("error: %s" % lines[0], file=sys.stderr)
    raise SystemExit(status)


#: The exit status of a program stopped by Ctrl-C (128 + SIGINT), as a
#: shell reports a process the signal ended.
INTERRUPTED = 130
#: The exit status of a program whose output's reader went away (128 +
#: SIGPIPE), as a shell reports a unix tool that signal ended.
BROKEN_PIPE = 141


def interrupted(message="interrupted"):
    """Ends a program stopped by Ctrl-C: ``message`` (one line, e.g. how
    to resume) on stderr, exit status `INTERRUPTED`, no traceback.

    Raises:
      SystemExit: always, with code 130.
    """
    print(message, file=sys.stderr)
    raise SystemExit(INTERRUPTED)


def broken_pipe():
    """Ends a program whose standard output was closed by its reader
    (``... | head``) silently, with exit status `BROKEN_PIPE`: what is
    still buffered is dropped (stdout pointed at the null device, so that
    Python's flush at exit has nowhere to fail), and nothing is printed.

    Raises:
      SystemExit: always, with code 141.
    """
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass   # stdout without a file descriptor (e.g. a test's StringIO)
    raise SystemExit(BROKEN_PIPE)


def quoted(text):
    """``text`` as one shell word (quoted only when it needs to be), for a
    command line a message suggests."""
    import shlex
    return shlex.quote(text)


def _within(path, folder):
    """Whether ``path`` is ``folder`` or lies inside it (absolute paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _flag_of(filename):
    """(flag, path, written) of the parsed path that ``filename`` is, lies
    in (the deepest such), or, for a path written, contains (a folder
    above it that could not be made); None when none does."""
    target = os.path.abspath(filename)
    inside = [(len(os.path.abspath(p)), (f, p, w)) for f, p, w in _PATHS
              if _within(target, os.path.abspath(p))]
    if inside:
        return max(inside, key=lambda found: found[0])[1]
    for flag, path, written in _PATHS:
        if written and _within(os.path.abspath(path), target):
            return flag, path, written
    return None


def os_error_line(error):
    """One line for an ``OSError``: the flag and path it concerns, what
    could not be done, and why.

    Args:
      error: the ``OSError`` (its ``filename`` names the path, where the
        call that raised it knew one).

    Returns:
      e.g. ``--out /proc/x.tflite: cannot write: No such file or
      directory``; ``--model runs/m: cannot read runs/m/vocab.txt:
      Permission denied`` for a file inside a flag's folder; ``FILE: why``
      for a path no flag gave; ``why`` without a path.
    """
    why = error.strerror or str(error)
    filename = error.filename
    if not isinstance(filename, str):
        return why
    found = _flag_of(filename)
    if found is None:
        return "%s: %s" % (filename, why)
    flag, path, written = found
    other = ("" if os.path.abspath(filename) == os.path.abspath(path)
             else " " + filename)
    return "%s%s: cannot %s%s: %s" % ("" if flag is None else flag + " ",
                                      path, "write" if written else "read",
                                      other, why)


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

    def parse_args(self, args=None, namespace=None):
        """argparse's, with a misspelt flag's closest flag in its one line:
        ``error: unrecognized arguments: --hiden-size 3 (did you mean
        --hidden-size?)``.

        Raises:
          SystemExit: (code 2, via `fail`) a bad or unknown flag.
        """
        parsed, rest = self.parse_known_args(args, namespace)
        if rest:
            fail("unrecognized arguments: %s%s"
                 % (" ".join(rest), self._closest_flag(rest)))
        return parsed

    def _closest_flag(self, rest):
        """`` (did you mean --X?)`` for the first unknown flag of ``rest``
        that is close to one of this parser's (difflib), else ''."""
        import difflib
        known = [option for action in self._actions
                 for option in action.option_strings
                 if option.startswith("--")]
        for arg in rest:
            if arg.startswith("--"):
                close = difflib.get_close_matches(arg.partition("=")[0],
                                                  known, n=1)
                if close:
                    return " (did you mean %s?)" % close[0]
        return ""

    def parse_known_args(self, args=None, namespace=None):
        """argparse's, remembering the paths given (every str value of a
        flag or argument without fixed choices) for `os_error_line`."""
        parsed, rest = super(ArgumentParser, self).parse_known_args(
            args, namespace)
        del _PATHS[:]
        for action in self._actions:
            value = getattr(parsed, action.dest, None)
            if action.choices is not None or action.dest == "help":
                continue
            values = value if isinstance(value, list) else [value]
            flag = (action.option_strings[0] if action.option_strings
                    else None)   # a positional: the path alone names it
            _PATHS.extend((flag, v, action.dest in WRITTEN)
                          for v in values if isinstance(v, str))
        return parsed, rest

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
