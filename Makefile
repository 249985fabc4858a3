# The two set-up commands of the README: `make run` and `make test`. Both start from a
# fresh clone: they create .venv, build the native module and pull the models.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export LINEGATE_MODEL_DIR ?= $(HOME)/.cache/linegate/models
PORT ?= 8080
DATA_DIR ?= data

.PHONY: run test fuzz native venv venv-test system-deps models clean deb image boot-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -U "setuptools>=70.1" wheel
	$(BIN)/pip install -q scikit-build-core pybind11 ninja cmake

venv: $(BIN)/python
	$(BIN)/pip install -q --no-build-isolation -e .

venv-test: $(BIN)/python
	$(BIN)/pip install -q --no-build-isolation -e '.[test,reference]'

# Incremental rebuild of gateway._native after editing native/.
# flock: several developers may rebuild at once in one build directory.
native: $(BIN)/python
	flock /tmp/linegate-build.lock $(BIN)/pip install -q --no-build-isolation --no-deps -e .

system-deps:
	tools/setup_system.sh

models: $(BIN)/python
	$(BIN)/linegate models pull

run: venv
	$(BIN)/linegate models pull
	$(BIN)/linegate serve --port $(PORT) --data-dir $(DATA_DIR)

test: venv-test system-deps
	$(BIN)/linegate models pull
	rm -f $(VENV)/pytest-exit-code
	$(BIN)/python -m pytest -m "not slow and not gpu and not rknn" --durations=15 $(PYTEST_ARGS); \
	  rc=$$?; echo $$rc > $(VENV)/pytest-exit-code; exit $$rc

# The property tests with fresh random examples, RUNS times (the test command derandomizes them).
RUNS ?= 5
fuzz: venv-test
	for i in $$(seq $(RUNS)); do HYPOTHESIS_PROFILE=explore $(BIN)/python -m pytest -q -p no:cacheprovider \
	  tests/ingest/test_syslog.py tests/test_tokenizer.py tests/server/test_schema.py || exit 1; done

# The arm64 appliance (docs/flash-rk3588.md): the .deb cross-built here, a flashable image, and the image
# booted in an emulated arm64 machine. Slow, and not part of `make test`.
deb: $(BIN)/python
	tools/setup_system.sh --package
	nice -n 10 tools/build_deb.sh

image: deb
	nice -n 10 tools/build_image.sh

boot-test: deb
	nice -n 10 tools/boot_test.sh

clean:
	rm -rf build $(VENV) gateway/_native*.so
