# Everything a developer or CI runs. `make run` and `make test` work on a fresh clone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMVENV := .samvenv
PORT ?= 3000
# sam build (without Docker) needs a local python matching the functions' runtime.
SAM_PYTHON ?= 3.12
export SAM_CLI_TELEMETRY = 0
export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: install run test lint format typecheck template template-check bench soak cfn-lint sam-validate stack-size sam-build ci clean

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/agent-memory serve --port $(PORT)

test: install
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check shared tests .ci examples
	$(BIN)/ruff format --check shared tests .ci examples
	cd shared && ../$(BIN)/lint-imports --no-cache ../pyproject.toml

format: install
	$(BIN)/ruff format shared tests .ci examples
	$(BIN)/ruff check --fix shared tests .ci examples

typecheck: install
	$(BIN)/mypy shared tests examples

template: install
	$(BIN)/python .ci/templategen.py
	$(BIN)/python .ci/readme_routes.py

template-check: install
	$(BIN)/python .ci/templategen.py --check
	$(BIN)/python .ci/readme_routes.py --check
	$(BIN)/python -m tests.perfdoc --check

# Measures every verb and rewrites docs/performance.md (and .json, its data); BENCH_ARGS=--quick for a smoke run.
bench: install
	$(BIN)/python -m tests.bench $(BENCH_ARGS)

# One `agent-memory serve` under a long mixed write load, its RSS sampled (SOAK_ARGS=--writes 5000 for a short one).
soak: install
	$(BIN)/python -m tests.soak $(SOAK_ARGS)

cfn-lint: install
	$(BIN)/cfn-lint template.yaml

# aws-sam-cli pins boto3/pydantic below ours: it lives in its own virtualenv.
$(SAMVENV)/.installed:
	$(PY) -m venv $(SAMVENV)
	$(SAMVENV)/bin/pip install -q --upgrade pip
	$(SAMVENV)/bin/pip install -q aws-sam-cli
	touch $@

sam-validate: $(SAMVENV)/.installed
	$(SAMVENV)/bin/sam validate --lint --region $(AWS_DEFAULT_REGION)

# The transformed stack's resource count, failing past 450 (CloudFormation refuses past 500).
stack-size: $(SAMVENV)/.installed
	$(SAMVENV)/bin/python .ci/stack_size.py

sam-build: $(SAMVENV)/.installed
	PATH="$$(bash .ci/python-for $(SAM_PYTHON)):$$PATH" $(SAMVENV)/bin/sam build --parallel --cached

ci: lint typecheck template-check test cfn-lint sam-validate stack-size sam-build

clean:
	rm -rf $(VENV) $(SAMVENV) .aws-sam .mypy_cache .ruff_cache .pytest_cache
