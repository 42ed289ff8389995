#!/usr/bin/env bash
# Prints the path of a CPython 3.7 interpreter, the first of:
#   $PYTHON if set, python3.7 on PATH, the newest 3.7.x under $(pyenv root)/versions.
# Exits 2 with a message saying how to get one when there is none: TensorFlow
# 1.13.1 publishes wheels only for CPython 3.5-3.7.
set -u
is37() { "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 7) else 1)' 2>/dev/null; }
if [ -n "${PYTHON:-}" ]; then
  if [ ! -x "$(command -v "$PYTHON" 2>/dev/null)" ]; then
    echo "error: PYTHON=$PYTHON is not an executable interpreter; TensorFlow 1.13.1 needs CPython 3.7 (e.g. 'pyenv install 3.7.17', then PYTHON=\$(pyenv root)/versions/3.7.17/bin/python)" >&2
    exit 2
  fi
  if ! is37 "$PYTHON"; then
    echo "error: PYTHON=$PYTHON is $("$PYTHON" -V 2>&1), but TensorFlow 1.13.1 needs CPython 3.7 (e.g. 'pyenv install 3.7.17')" >&2
    exit 2
  fi
  command -v "$PYTHON"; exit 0
fi
if command -v python3.7 >/dev/null 2>&1 && is37 python3.7; then
  command -v python3.7; exit 0
fi
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for d in $(ls -d "$root"/versions/3.7.* 2>/dev/null | sort -t. -k3,3n -r); do
  if [ -x "$d/bin/python" ] && is37 "$d/bin/python"; then echo "$d/bin/python"; exit 0; fi
done
echo "error: no CPython 3.7 interpreter found (checked \$PYTHON, python3.7 on PATH, $root/versions/3.7.*). TensorFlow 1.13.1 needs Python 3.5-3.7: install one with 'pyenv install 3.7.17' or set PYTHON=/path/to/python3.7" >&2
exit 2
