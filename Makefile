# The project's interface: `make demo` and `make test` (README, Quick start).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: env pycheck test demo bench clean

env: $(STAMP)

# An explicit $$PYTHON is always checked, even when .venv is up to date.
pycheck:
	@if [ -n "$${PYTHON:-}" ] || [ ! -f $(STAMP) ]; then tools/find_python37.sh >/dev/null || exit 2; fi

# Rebuilt only when setup.py changes, so a second `make test` installs nothing.
$(STAMP): setup.py | pycheck
	@py=$$(tools/find_python37.sh) || exit 2; \
	if [ ! -x $(PY) ]; then echo "creating $(VENV) from $$py"; "$$py" -m venv $(VENV) || exit 2; fi; \
	echo "installing the package (editable) with the test and examples extras"; \
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,examples]' 2>&1 \
	  | { grep -v -e "is ignored: it is neither a file nor a directory" || true; } || exit 2; \
	$(PY) -c 'import tensorflow, pytest' || exit 2; \
	touch $(STAMP)

test: env
	$(PY) -m pytest -q tests

demo: env
	$(PY) examples/demo.py

bench: env
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
