# The project's interface: `make demo` and `make test` (README, Quick start);
# `make test-tf115` runs the same suite on TensorFlow 1.15.5 (docs/versions.md).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PINS  := constraints/tf113.txt
VENV115  := .venv-tf115
PY115    := $(VENV115)/bin/python
STAMP115 := $(VENV115)/.installed
PINS115  := constraints/tf115.txt

.PHONY: env env-tf115 pycheck pycheck-tf115 test test-tf115 demo bench clean

env: $(STAMP)

env-tf115: $(STAMP115)

# An explicit $$PYTHON is always checked, even when the venv is up to date.
pycheck:
	@if [ -n "$${PYTHON:-}" ] || [ ! -f $(STAMP) ]; then tools/find_python37.sh >/dev/null || exit 2; fi

pycheck-tf115:
	@if [ -n "$${PYTHON:-}" ] || [ ! -f $(STAMP115) ]; then tools/find_python37.sh >/dev/null || exit 2; fi

# $(call install,VENV,PINS): creates VENV if needed and installs the package
# (editable) with the test and examples extras, versions held by the PINS
# constraints file; then touches VENV/.installed.
define install
@py=$$(tools/find_python37.sh) || exit 2; \
if [ ! -x $(1)/bin/python ]; then echo "creating $(1) from $$py"; "$$py" -m venv $(1) || exit 2; fi; \
echo "installing the package (editable) into $(1) with the test and examples extras, pinned by $(2)"; \
$(1)/bin/python -m pip install -q --disable-pip-version-check -c $(2) -e '.[test,examples]' 2>&1 \
  | { grep -v -e "is ignored: it is neither a file nor a directory" || true; } || exit 2; \
$(1)/bin/python -c 'import tensorflow, pytest' || exit 2; \
touch $(1)/.installed
endef

# Rebuilt only when setup.py or the pins change, so a second `make test`
# installs nothing.
$(STAMP): setup.py $(PINS) | pycheck
	$(call install,$(VENV),$(PINS))

$(STAMP115): setup.py $(PINS115) | pycheck-tf115
	$(call install,$(VENV115),$(PINS115))

# TF1_AWD_CONSTRAINTS: tests/test_environment.py checks the installed
# versions against the environment's pins.
test: env
	TF1_AWD_CONSTRAINTS=$(PINS) $(PY) -m pytest -q tests

test-tf115: env-tf115
	TF1_AWD_CONSTRAINTS=$(PINS115) $(PY115) -m pytest -q tests

demo: env
	$(PY) examples/demo.py

bench: env
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(VENV115) build *.egg-info .pytest_cache
