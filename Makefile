# adtrail: the two commands a newcomer needs are `make demo` and `make test`.
# Everything the local stack needs (moto, cfn-lint, SAM CLI) goes into a
# project virtualenv made here; the fake Meta is the project's own Rust code.

VENV ?= .venv
PYTHON := $(abspath $(VENV))/bin/python
# The demo installs only the emulator; the tests add the linters and the
# contract's fuzzer. Each stamp names its requirements' checksum (`cksum`
# is POSIX: a Mac has no `sha256sum`).
DEMO_STAMP := $(VENV)/.demo-$(shell cat infra/requirements-demo.txt | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(shell cat infra/requirements-demo.txt infra/requirements.txt | cksum | cut -d' ' -f1)
export ADTRAIL_PYTHON := $(PYTHON)
export SAM_CLI_TELEMETRY := 0

.PHONY: demo local test contract lint lint-template bench build-lambdas fault-run venv venv-demo fmt clean

$(VENV)/bin/pip:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

$(DEMO_STAMP): infra/requirements-demo.txt | $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet -r infra/requirements-demo.txt
	touch $@

$(STAMP): infra/requirements-demo.txt infra/requirements.txt | $(VENV)/bin/pip
	$(VENV)/bin/pip install --quiet -r infra/requirements.txt
	touch $@ $(DEMO_STAMP)

venv-demo: $(DEMO_STAMP)
venv: $(STAMP)

## The whole system on a laptop: two sites, the sample agency, backfill, spend.
demo: venv-demo
	cargo run --quiet -p adtrail-local -- demo

## Keep the local stack running (API at http://127.0.0.1:3000).
local: venv-demo
	cargo run --quiet -p adtrail-local -- serve

## Every test: the template's lint, unit, store (moto) and end-to-end tests.
test: venv lint-template
	infra/run-tests.sh

## The API contract alone: schemathesis against the local stack.
contract: venv
	infra/run-tests.sh --contract-only

lint-template: venv
	$(VENV)/bin/cfn-lint template.yaml
	$(VENV)/bin/sam validate --lint --region us-east-1 --template-file template.yaml

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

FUNCTIONS := adtrail-api adtrail-dispatcher adtrail-sync-worker adtrail-sweeper adtrail-capi-sender adtrail-leadgen-worker

## Figures, side by side in one run: requests per unit of work, binary sizes
## (failing past 8 MB), init times against a hello world (and the
## instructions to the first runtime call: x86_64 with valgrind, the arm64
## binaries Lambda runs with qemu-user), costs, scale.
## Each binary is built alone, as `sam build` builds it: a function links
## only the SDK clients it uses.
## The size check runs last, so a binary past its budget fails the target
## loudly without hiding the other figures.
bench: venv-demo build-lambdas
	for b in $(FUNCTIONS) adtrail-hello; do cargo build --release --quiet -p $$b || exit 1; done
	cargo run --release --quiet -p adtrail-local --bin adtrail-bench
	infra/tools/init-instructions.sh
	infra/tools/check-sizes.sh

## The Conversions API fault run at full size: 10,000 conversions, 30% of
## Meta's calls failing, duplicates and lost messages (15 to 25 minutes on moto).
fault-run: venv-demo
	ADTRAIL_FAULT_RUN=10000 ADTRAIL_FAULT_EVENTS=2000 infra/run-tests.sh -p adtrail-tests --test e2e fault -- --nocapture

## Release arm64 binaries, as `sam build` makes them: one cargo invocation
## per crate (`-p`, as sam build runs in each function's CodeUri), so cargo
## resolves that crate's features alone and each binary links only its own
## clients (`--bin` from the root would unify every member's features).
build-lambdas: venv-demo
	$(VENV)/bin/pip install --quiet -r infra/requirements-build.txt
	-rustup target add aarch64-unknown-linux-gnu
	for b in $(FUNCTIONS) adtrail-hello; do \
		PATH=$(abspath $(VENV))/bin:$$PATH cargo lambda build --release --arm64 -p $$b || exit 1; \
	done

fmt:
	cargo fmt --all

clean:
	rm -rf $(VENV) target .aws-sam
