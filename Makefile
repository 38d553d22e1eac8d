# The two commands of the README: `make book` and `make test`. Both create .venv/ when it is missing.
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
PROFILE ?= real
NAME    ?=
# Real data for the tests when the shared mirror sits beside the checkout (CI sets it too).
TEST_DATA := $(or $(SDR_DATA),$(wildcard ../shared/data))

.PHONY: setup book chapters chapter html test paper-dry-run bench data clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

## book: every chapter executed with papermill at PROFILE (default: real), then the HTML book.
book: chapters html

chapters: setup
	$(VENV)/bin/sdr chapter --all --profile $(PROFILE)

html: setup
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

## chapter: one chapter, e.g. `make chapter NAME=specter PROFILE=smoke`
chapter: setup
	@test -n "$(NAME)" || (echo "usage: make chapter NAME=<chapter> [PROFILE=smoke|real|paper]"; exit 2)
	$(VENV)/bin/sdr chapter $(NAME) --profile $(PROFILE)

## test: unit tests, loader tests on $$SDR_DATA, every chapter at `smoke`, and the -W book build.
test: setup
	SDR_DATA="$(TEST_DATA)" $(PY) -m pytest

## paper-dry-run: every chapter at `paper` on official-format fixtures, offline (CI runs it after `make test`).
paper-dry-run: setup
	SDR_DATA="$(TEST_DATA)" $(VENV)/bin/sdr paper-dry-run --workdir _build/paper-dry-run

## bench: speed and memory measurements; raw output goes to benchmarks/results/.
bench: setup
	$(PY) benchmarks/run_all.py

## data: fetch a benchmark into the cache (needs network), e.g. `make data NAME=csfcube`
data: setup
	$(VENV)/bin/sdr data fetch $(NAME)

clean:
	rm -rf _build book/chapters results
