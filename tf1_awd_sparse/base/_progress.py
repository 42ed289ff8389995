"""The one progress display of the library's long-running command lines
(training epochs, compression stages, ``score``, ``--tune-cache``).

`bar` is a tqdm-like callable (``bar(total=..., desc=..., unit=...)``
returning an object with ``update(n)``, ``set_postfix(**values)`` and
``close()``), so it goes where
the training loop and the exporter take a ``progress`` class:

- stderr a terminal and tqdm installed: a tqdm bar;
- otherwise (stderr a file or a pipe, or no tqdm: it stays an optional
  extra): plain lines ``desc: done/total unit (p%), s elapsed`` at most
  every `LINE_SECONDS` seconds and once at the end, so a log file gets a
  few lines and never a bar's redraws.
"""
from __future__ import absolute_import, division, print_function

import sys
import time

__all__ = ["LINE_SECONDS", "Lines", "bar"]

#: Least seconds between two plain progress lines.
LINE_SECONDS = 30.0


class Lines(object):
    """Progress as plain periodic lines (the tqdm-less, non-terminal bar).

    Args:
      total: int, the units the work holds (None: unknown).
      desc: str, what the work is (starts each line).
      unit: str, the units' name.
      file: the stream written to (default stderr).
      every: float, least seconds between lines.
      clock: callable returning seconds (tests pass a fake).
    """

    def __init__(self, total=None, desc="", unit="it", file=None,
                 every=LINE_SECONDS, clock=time.time, **_ignored):
        self.total, self.desc, self.unit = total, desc, unit
        self.file = file if file is not None else sys.stderr
        self.every, self.clock = every, clock
        self.n = 0
        self.postfix = ""
        self.start = self.last = clock()
        self.closed = False

    def _line(self):
        done = "%d" % self.n if not self.total else "%d/%d" % (self.n,
                                                               self.total)
        share = (" (%.0f%%)" % (100.0 * self.n / self.total)
                 if self.total else "")
        self.file.write("%s%s %s%s, %.0f s elapsed%s\n" % (
            self.desc + ": " if self.desc else "", done, self.unit, share,
            self.clock() - self.start,
            ", " + self.postfix if self.postfix else ""))
        self.file.flush()

    def update(self, n=1):
        """Counts ``n`` more units done; writes a line when `every`
        seconds have passed since the last."""
        self.n += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            self._line()

    def set_postfix(self, **values):
        """Keeps ``values`` (e.g. ``loss='4.1'``) for the next lines, as
        tqdm's ``set_postfix`` shows them beside the bar."""
        self.postfix = ", ".join("%s=%s" % kv for kv in sorted(values.items()))

    def close(self):
        """Writes the final line (once)."""
        if not self.closed:
            self.closed = True
            self._line()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def bar(total=None, desc="", unit="it", file=None, **kwargs):
    """A progress display for ``total`` units: a tqdm bar when ``file``
    (default stderr) is a terminal and tqdm is installed, else `Lines`.
    Extra keywords go to tqdm (`Lines` ignores them)."""
    stream = file if file is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        if tqdm is not None:
            return tqdm(total=total, desc=desc, unit=unit, file=stream,
                        **kwargs)
    return Lines(total, desc, unit, stream)
