# The project's interface: `make demo` and `make test` (README, "The two
# commands") on TensorFlow 1.13.1. The same suite runs on the other supported
# versions (docs/versions.md): `make test-tf115` (1.15.5), `make test-tf2`
# (2.15.1, CPython 3.11), `make test-tf2-latest` (2.21.0 with tf-keras); each
# builds its own virtualenv from its constraints/ file. `make demo-tf2` and
# `make bench-tf2` run the demo and the benchmarks on 2.15. `make bench-peer`
# times the LM's training step against its PyTorch peer (AWD-LSTM to
# salesforce/awd-lstm-lm's recipe; benchmarks/bench_peer.py) and one layer's
# (WeightDropLSTM, the cell, LSTMCell against nn.LSTM in WeightDrop) and
# writes docs/bench-peer.md; torch lives in its own .venv-peer, built by that
# target only (never by `test` or CI).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# name: venv, constraints file, CPython version, extras, interpreter variable
VENV       := .venv
PINS       := constraints/tf113.txt
VENV115    := .venv-tf115
PINS115    := constraints/tf115.txt
VENV2      := .venv-tf2
PINS2      := constraints/tf215.txt
VENV2L     := .venv-tf2-latest
PINS2L     := constraints/tf2-latest.txt
VENVPEER   := .venv-peer
PINSPEER   := constraints/peer.txt
EXTRAS1    := test,examples
EXTRAS2    := test,examples,tf2,litert
PY         := $(VENV)/bin/python
PY115      := $(VENV115)/bin/python
PY2        := $(VENV2)/bin/python
PY2L       := $(VENV2L)/bin/python
PYPEER     := $(VENVPEER)/bin/python
# TF >= 2.16 runs the v1 RNN cells only on Keras 2 (tf-keras).
LEGACY_KERAS := TF_USE_LEGACY_KERAS=1

.PHONY: env env-tf115 env-tf2 env-tf2-latest test test-tf115 test-tf2 \
        test-tf2-latest test-all demo demo-tf2 bench bench-tf2 env-peer \
        bench-peer clean

env: $(VENV)/.installed
env-tf115: $(VENV115)/.installed
env-tf2: $(VENV2)/.installed
env-tf2-latest: $(VENV2L)/.installed
env-peer: $(VENVPEER)/.installed

# $(call install,VENV,PINS,PYVERSION,PYVAR,EXTRAS): creates VENV from a
# CPython PYVERSION ($$PYVAR if set; tools/find_python.sh) if needed and
# installs the package (editable) with EXTRAS, versions held by the PINS
# constraints file; then touches VENV/.installed. An explicit $$PYVAR is
# checked even when the venv exists.
define install
@py=$$(tools/find_python.sh $(3) $(4)) || exit 2; \
if [ ! -x $(1)/bin/python ]; then echo "creating $(1) from $$py"; "$$py" -m venv $(1) || exit 2; fi; \
echo "installing the package (editable) into $(1) with the $(5) extras, pinned by $(2)"; \
$(1)/bin/python -m pip install -q --disable-pip-version-check -c $(2) -e '.[$(5)]' 2>&1 \
  | { grep -v -e "is ignored: it is neither a file nor a directory" || true; } || exit 2; \
$(LEGACY_KERAS) $(1)/bin/python -c 'import tensorflow, pytest' || exit 2; \
touch $(1)/.installed
endef

# Rebuilt only when setup.py or the pins change, so a second `make test`
# installs nothing.
$(VENV)/.installed: setup.py $(PINS)
	$(call install,$(VENV),$(PINS),3.7,PYTHON,$(EXTRAS1))

$(VENV115)/.installed: setup.py $(PINS115)
	$(call install,$(VENV115),$(PINS115),3.7,PYTHON,$(EXTRAS1))

$(VENV2)/.installed: setup.py $(PINS2)
	$(call install,$(VENV2),$(PINS2),3.11,PYTHON311,$(EXTRAS2))

$(VENV2L)/.installed: setup.py $(PINS2L)
	$(call install,$(VENV2L),$(PINS2L),3.11,PYTHON311,$(EXTRAS2))

# The PyTorch peer's environment: CPython 3.11 with torch and numpy only
# (the peer imports nothing of the package), pinned by constraints/peer.txt.
$(VENVPEER)/.installed: $(PINSPEER)
	@py=$$(tools/find_python.sh 3.11 PYTHON311) || exit 2; \
	if [ ! -x $(VENVPEER)/bin/python ]; then echo "creating $(VENVPEER) from $$py"; "$$py" -m venv $(VENVPEER) || exit 2; fi; \
	echo "installing torch and numpy into $(VENVPEER), pinned by $(PINSPEER)"; \
	$(PYPEER) -m pip install -q --disable-pip-version-check -c $(PINSPEER) torch numpy 2>&1 \
	  | { grep -v -e "is ignored: it is neither a file nor a directory" || true; } || exit 2; \
	$(PYPEER) -c 'import torch, numpy' || exit 2; \
	touch $@

# Test processes per suite (pytest-xdist, one per core; docs/testing.md):
# `make test WORKERS=0` runs the suite in one process. --dist loadfile
# keeps a test file on one worker, so its module-scoped fixtures are built
# once; tests/conftest.py hands out the costliest files first.
WORKERS    ?= 2
# A worker that dies is replaced at most twice: a crash that repeats (the
# same test, handed to the new worker) ends the run instead of retrying.
XDIST       = $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile \
              --max-worker-restart 2)
# Extra pytest arguments, e.g. PYTEST_ARGS='--durations=40'.
PYTEST_ARGS ?=
# The tests marked slow run in `make test` (the default version) and, with
# SLOW=1, on the other versions (docs/testing.md names each and says why
# the other versions can do without it).
NOT_SLOW    = $(if $(SLOW),,-m 'not slow')
# The tests marked per_python depend on the CPython and the package, not on
# the TensorFlow version (the installed wheel): they run in the suite of
# each Python's reference TensorFlow, `make test` (3.7) and `make test-tf2`
# (3.11), and with SLOW=1 on the other two as well.
NOT_SLOW_NOR_PER_PYTHON = $(if $(SLOW),,-m 'not slow and not per_python')

# TF1_AWD_CONSTRAINTS: tests/base/test_environment.py checks the installed
# versions against the environment's pins.
# $(call pytest,PYTHON,ENVIRONMENT[,SELECTION]): the suite (SELECTION: more
# pytest arguments, e.g. $(NOT_SLOW)); when a test process dies of
# a signal (a crash in native code), the test it was running and the
# innermost frames of its traceback (tests/conftest.py, TF1_AWD_CRASH_LOG:
# one file per xdist worker, suffixed with its name).
define pytest
@crash=$$(mktemp); echo "$(2) $(1) -m pytest -q -rs $(XDIST) $(3) $(PYTEST_ARGS) tests"; \
TF1_AWD_CRASH_LOG=$$crash $(2) $(1) -m pytest -q -rs $(XDIST) $(3) $(PYTEST_ARGS) tests; rc=$$?; \
if [ $$rc -ne 0 ]; then for f in $$crash $$crash.gw*; do \
  if [ -s $$f ]; then echo "a test process died (pytest exit $$rc) in:"; head -n 30 $$f; fi; \
done; fi; \
rm -f $$crash $$crash.gw*; exit $$rc
endef

test: env
	$(call pytest,$(PY),TF1_AWD_CONSTRAINTS=$(PINS))

test-tf115: env-tf115
	$(call pytest,$(PY115),TF1_AWD_CONSTRAINTS=$(PINS115),$(NOT_SLOW_NOR_PER_PYTHON))

test-tf2: env-tf2
	$(call pytest,$(PY2),TF1_AWD_CONSTRAINTS=$(PINS2),$(NOT_SLOW))

test-tf2-latest: env-tf2-latest
	$(call pytest,$(PY2L),$(LEGACY_KERAS) TF1_AWD_CONSTRAINTS=$(PINS2L),$(NOT_SLOW_NOR_PER_PYTHON))

test-all: test test-tf115 test-tf2 test-tf2-latest

# --resume: a second `make demo` (or one after an interruption) redoes
# only what is missing and prints the tables again.
demo: env
	$(PY) examples/demo.py --resume

demo-tf2: env-tf2
	$(PY2) examples/demo.py --resume --out runs/demo-tf2

bench: env
	$(PY) benchmarks/run.py

bench-tf2: env-tf2
	$(PY2) benchmarks/run.py --out docs/bench-tf2.md

# The LM's step and one 200 -> 200 layer's on TF 2.15 and, where their
# environments are built, on the newest 2.x and on 1.13.1, against the
# PyTorch peer at 1 and 2 threads; PEER_ARGS adds bench_peer options, e.g.
# PEER_ARGS='--rounds 3' or PEER_ARGS='--layer-size 400:1150'.
PEER_ARGS ?=
PEER_TF    = --tf-python $(PY2) \
             $(if $(wildcard $(VENV2L)/.installed),--tf-python $(PY2L)) \
             $(if $(wildcard $(VENV)/.installed),--tf-python $(PY))
bench-peer: env-tf2 env-peer
	$(PY2) benchmarks/bench_peer.py $(strip $(PEER_TF)) --peer-python $(PYPEER) \
	  --out docs/bench-peer.md $(PEER_ARGS)

clean:
	rm -rf $(VENV) $(VENV115) $(VENV2) $(VENV2L) $(VENVPEER) build *.egg-info .pytest_cache
