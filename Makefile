# The two commands of the README: `make book` and `make test`. Both create .venv/ when it is missing.
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
PROFILE ?= real
NAME    ?=
# Real data for the tests when the shared mirror sits beside the checkout (CI sets it too).
TEST_DATA := $(or $(SDR_DATA),$(wildcard ../shared/data))

.PHONY: setup book chapters chapter html test paper-dry-run bench data data-real publish-config \
        publish-notebooks binder-lock clean

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

## data-real: every dataset the `real` profile reads, into the cache (CI and the publish workflow; needs network).
data-real: setup
	$(VENV)/bin/sdr data fetch --real-profile

## publish-config: the book's repository address = the GitHub repository this runs in (the publish workflow).
publish-config: setup
	@test -n "$(GITHUB_REPOSITORY)" || (echo "publish-config: GITHUB_REPOSITORY (OWNER/REPO) is not set"; exit 2)
	$(VENV)/bin/sdr book-publish configure --repository "https://github.com/$(GITHUB_REPOSITORY)"

## publish-notebooks: push this commit's code plus the executed chapters to the `notebooks` branch, which the
## pages' Colab and Binder buttons open (the publish workflow; needs GITHUB_TOKEN and GITHUB_REPOSITORY).
PUBLISH_DIR := _build/notebooks-branch
publish-notebooks: setup
	$(VENV)/bin/sdr book-publish check
	rm -rf $(PUBLISH_DIR) && git worktree prune
	git worktree add --detach $(PUBLISH_DIR) HEAD
	cp _config.yml $(PUBLISH_DIR)/_config.yml && cp notebooks/*.ipynb $(PUBLISH_DIR)/notebooks/
	mkdir -p $(PUBLISH_DIR)/book/chapters
	for f in $$($(VENV)/bin/sdr book-publish manifest); do cp "$$f" "$(PUBLISH_DIR)/$$f"; done
	cd $(PUBLISH_DIR) && git add -f _config.yml notebooks $$(../../$(VENV)/bin/sdr book-publish manifest) && \
	  git -c user.name="sdr-book publish" -c user.email="publish@users.noreply.github.com" \
	    commit --quiet -m "Executed chapters of $$(git rev-parse --short HEAD)" && \
	  git push --force "https://x-access-token:$${GITHUB_TOKEN}@github.com/$(GITHUB_REPOSITORY)" HEAD:refs/heads/notebooks

## binder-lock: requirements-cpu.lock (Binder's environment.yml) from requirements.lock (torch's CPU build); `make test` checks it is current.
binder-lock: setup
	$(VENV)/bin/sdr book-publish binder-lock

clean:
	rm -rf _build book/chapters results
