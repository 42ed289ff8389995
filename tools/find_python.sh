#!/usr/bin/env bash
# Usage: tools/find_python.sh X.Y [VAR]
# Prints the path of a CPython X.Y interpreter, the first of:
#   $VAR if set (default VAR: PYTHON), pythonX.Y on PATH, the newest X.Y.z
#   under $(pyenv root)/versions.
# Exits 2 with a message saying how to get one when there is none
# (TensorFlow 1.x publishes wheels only for CPython <= 3.7; the TF 2.x
# environments are built on 3.11: docs/versions.md).
set -u
want=${1:?usage: tools/find_python.sh X.Y [VAR]}
var=${2:-PYTHON}
given=${!var:-}
isv() { "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$want' else 1)" 2>/dev/null; }
if [ -n "$given" ]; then
  if [ ! -x "$(command -v "$given" 2>/dev/null)" ]; then
    echo "error: $var=$given is not an executable interpreter; this environment needs CPython $want (e.g. 'pyenv install $want', then $var=\$(pyenv root)/versions/$want.N/bin/python)" >&2
    exit 2
  fi
  if ! isv "$given"; then
    echo "error: $var=$given is $("$given" -V 2>&1), but this environment needs CPython $want (e.g. 'pyenv install $want')" >&2
    exit 2
  fi
  command -v "$given"; exit 0
fi
if command -v "python$want" >/dev/null 2>&1 && isv "python$want"; then
  command -v "python$want"; exit 0
fi
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for d in $(ls -d "$root"/versions/"$want".* 2>/dev/null | sort -t. -k3,3n -r); do
  if [ -x "$d/bin/python" ] && isv "$d/bin/python"; then echo "$d/bin/python"; exit 0; fi
done
echo "error: no CPython $want interpreter found (checked \$$var, python$want on PATH, $root/versions/$want.*): install one with 'pyenv install $want' or set $var=/path/to/python$want" >&2
exit 2
