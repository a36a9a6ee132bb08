# make setup: create .venv if missing and install torchdoctor and its test tools (idempotent).
# make demo:  set up, then diagnose the built-in demo workload.
# make test:  set up, then run the whole test suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The CPU wheel of torch lies on this machine's disk; an unpinned torch would pull a CUDA build.
# A torch the user already has in the venv is kept.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup demo test clean
setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[test]"
	@# The HTML report's tests drive a real headless Chromium (Debian's package).
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	  echo 'note: chromium not installed; the HTML report browser test will fail'; }
	touch $(STAMP)

demo: setup
	$(VENV)/bin/torchdoctor diagnose --demo

# Two workers, one per core of CI's 2-core machine; a test file stays on one worker (its module
# fixtures run once). The timing tests compare configurations side by side, so one other test
# running beside them is the load they are built to withstand; those marked `serial` need a free
# core (or profile shares no neighbour distorts) and run afterwards, alone.
test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not serial"
	$(PY) -m pytest -q -m serial

clean:
	rm -rf $(VENV) .torchdoctor
