# The team's interface to the Club backend. `make help` lists the targets.
GO        ?= go
CLUB_DIR  ?= .club
# Test parallelism sized for small machines (2 cores); raise it on bigger ones.
# The stack suites mostly wait on the stack, so four test binaries at once
# keep two cores busy.
TEST_P    ?= 4
TEST_FLAGS ?=
# One build configuration for every go command here — vet, the tests and the
# functions' builds (which are always -trimpath and cgo-free): each package
# is then compiled once, whoever needs it first, and a clone in another
# directory reuses Go's build cache. Nothing here needs cgo.
export CGO_ENABLED ?= 0
export GOFLAGS ?= -trimpath

.DEFAULT_GOAL := help
.PHONY: help run reset docs docs-assets screenshots test test-moto conformance test-reliability test-adversary test-localstack fuzz bench model build lint validate deploy clean ci ci-repeat

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: ## Run the whole stack locally (local cloud on :4566, HTTP API on :3000); Ctrl-C stops it, its data is kept
	@mkdir -p $(CLUB_DIR)/bin
	$(GO) build -o $(CLUB_DIR)/bin/club-local ./cmd/club-local
	exec $(CLUB_DIR)/bin/club-local

reset: ## Forget the local stack's data (tables, queues, streams, executions): the next 'make run' starts empty
	@if [ -f $(CLUB_DIR)/state/RUNNING ] && kill -0 $$(cat $(CLUB_DIR)/state/RUNNING) 2>/dev/null; then \
		echo "reset: a local cloud runs on $(CLUB_DIR)/state (process $$(cat $(CLUB_DIR)/state/RUNNING)): stop it first"; exit 1; fi
	rm -rf $(CLUB_DIR)/state

# The HTTP API's reference: Swagger UI from npm's swagger-ui-dist, vendored
# in api/reference/swaggerui at this version, with its checksums.
SWAGGER_UI ?= 5.35.0
SWAGGER_UI_FILES = swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE

docs: ## Write the HTTP API's reference page (what GET /docs serves) to .club/docs/api.html
	$(GO) run ./cmd/club-apidocs --out $(CLUB_DIR)/docs/api.html

docs-assets: ## Fetch the vendored Swagger UI again from npm at its pinned version; fails unless the checksums match
	rm -rf $(CLUB_DIR)/npm && mkdir -p $(CLUB_DIR)/npm
	cd $(CLUB_DIR)/npm && npm pack --silent swagger-ui-dist@$(SWAGGER_UI) >/dev/null && tar xzf swagger-ui-dist-$(SWAGGER_UI).tgz
	cd $(CLUB_DIR)/npm/package && sha256sum -c $(CURDIR)/api/reference/swaggerui/SHA256SUMS
	cd $(CLUB_DIR)/npm/package && cp $(SWAGGER_UI_FILES) $(CURDIR)/api/reference/swaggerui/

screenshots: ## Take the pages' screenshots in docs/ (the browser tests, with CLUB_SCREENSHOTS=1; needs chromium)
	CLUB_SCREENSHOTS=1 $(GO) test -count=1 -run '^(TestConsole|TestAPIReferencePage)' ./e2e/

# The two stack suites come first: they are the longest and mostly wait on
# the stack, so starting them at once lets the other packages fill the gaps.
# The adapters' contract suites run on kumo here and on moto in test-moto
# (CLUB_ENGINES; a plain go test runs them on both): moto is several times
# slower, and the whole suite on two cores stays within a few minutes.
test: ## Run every test, end to end against the embedded local cloud (no Docker, no AWS account)
	CLUB_ENGINES=kumo $(GO) test -p $(TEST_P) -count=1 -timeout 30m $(TEST_FLAGS) ./e2e/ ./reliability/ ./...

# The adapters' contract suites: each runs once per engine (localcloud/testkit).
CONTRACT_SUITES = ./internal/store/ ./internal/relay/ ./internal/sqsconsumer/ ./internal/ops/redrive/ ./internal/ops/replay/ \
	./internal/api/ ./internal/exporter/ ./internal/reports/ ./localcloud/internal/ddbstream/

# On moto the e2e suite leaves out one test, the flood of 300 exports: moto
# serves DynamoDB one call at a time and copies the tables a transaction
# touches, so a flood outruns the API's 10-second timeout there, which
# neither kumo nor DynamoDB does (docs/local-cloud.md).
test-moto: ## Run the end-to-end suite and the adapters' contract suites with the data plane on moto (needs python3 with moto; about 10 minutes)
	CLUB_ENGINE=moto CLUB_ENGINES=moto $(GO) test -p $(TEST_P) -count=1 -timeout 45m $(TEST_FLAGS) \
		-skip '^TestFloodOfExportsDoesNotDelayUrgentMail$$' ./e2e/ $(CONTRACT_SUITES) ./localcloud/conformance/

# One run on both engines, so that the table has both columns; the table is
# written even when a case fails (it then says FAIL), and the target fails.
conformance: ## Run the conformance suite on kumo and moto and rewrite its table in docs/local-cloud.md
	CLUB_ENGINES=kumo,moto $(GO) test -count=1 -p 1 ./localcloud/conformance/ -args -conformance.doc $(CURDIR)/docs/local-cloud.md

test-reliability: ## Run the fault-injection suite alone (SOAK=2000 enrollments) and rewrite docs/reliability.md
	$(GO) test -count=1 -timeout 30m -v ./reliability/ -args -club.soak $${SOAK:-2000} -club.report docs/reliability.md

# The adversary (docs/local-cloud.md) makes the local cloud misbehave as AWS
# is documented to: the suites with the aws profile, then the soak with
# heavy. Each run prints its seed; SEED=N replays the suites' decisions.
test-adversary: ## Run the e2e and reliability suites with the adversary at aws, then the soaks at heavy (SOAK=2000, MIXED=2000)
	CLUB_ADVERSARY=aws CLUB_ENGINES=kumo $(GO) test -p $(TEST_P) -count=1 -timeout 45m $(TEST_FLAGS) ./e2e/
	$(GO) test -count=1 -timeout 45m -v -skip '^TestSoak$$' ./reliability/ -args -club.adversary aws $${SEED:+-club.seed $$SEED}
	$(GO) test -count=1 -timeout 60m -v -run '^TestSoak(Mixed)?$$' ./reliability/ -args -club.adversary heavy -club.soak $${SOAK:-2000} \
		-club.mixed $${MIXED:-2000} -club.report docs/reliability.md $${SEED:+-club.seed $$SEED}

test-localstack: ## Run the end-to-end suite against LocalStack (needs Docker and LOCALSTACK_AUTH_TOKEN)
	localstack/run-tests.sh

# The fuzz target drives the handler over the in-memory stores; the tag
# apifuzz leaves the package's DynamoDB tests (and with them kumo and the AWS
# SDK) out of the fuzz binary, which Go builds with coverage instrumentation
# of every package in it.
fuzz: ## Fuzz the HTTP API for a while (FUZZTIME=1m by default)
	$(GO) test -tags apifuzz -run '^$$' -fuzz '^FuzzAPI$$' -fuzztime $${FUZZTIME:-1m} ./internal/api/

bench: ## Run the benchmarks against the local cloud and write docs/benchmarks.md (about 15 minutes)
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench -args -club.report docs/benchmarks.md

# The protocol's SPIN models (model/README.md): each verified exhaustively at
# its bounds, then each documented mutation must give a counterexample. One
# test process (-p 1), one pan at a time: it runs beside the other checks on
# two cores. SPIN comes from Debian; as root (CI) it is installed if missing.
model: ## Model-check the protocol with SPIN: every model, then every mutation caught (model/README.md; a few minutes)
	@command -v spin >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq spin >/dev/null; }; } || true
	@command -v spin >/dev/null || { echo "model: spin is not installed and could not be installed here: apt-get install spin (as root)"; exit 1; }
	@command -v gcc >/dev/null || { echo "model: gcc is required to compile SPIN's verifiers: apt-get install gcc"; exit 1; }
	$(GO) test -tags model -count=1 -p 1 -timeout 30m -v -run '^(TestModel|TestMutations)' ./model/

build: ## Build every program and function
	$(GO) build ./...

lint: ## gofmt, go vet, go.mod tidy, and cfn-lint on the template (zero errors, warnings or informational findings)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) test -count=1 -vet=off ./internal/archtest/
	@$(GO) mod tidy -diff >/dev/null || { echo "lint: go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	@command -v cfn-lint >/dev/null || { echo "lint: cfn-lint is not installed (pip install cfn-lint)"; exit 1; }
	cfn-lint infra/template.yaml

validate: ## Check infra/template.yaml: the local cloud's reading, the SAM transform, and sam when installed
	$(GO) run ./cmd/club-local --validate
	python3 infra/sam-transform.py infra/template.yaml >/dev/null
	@if command -v sam >/dev/null; then sam validate --lint -t infra/template.yaml; fi

deploy: ## Build and deploy to AWS with SAM (uses your AWS profile; see README)
	CGO_ENABLED=0 sam build -t infra/template.yaml
	sam deploy --guided

ci: ## Run what CI runs (.ci/run), here
	CI=true bash .ci/run

ci-repeat: ## Run CI N times in fresh clones (N=10, MODE=warm or new-machine: empty caches, two CPU burners) and record them in docs/ci.md
	bash .ci/repeat $${N:-10} $${MODE:-warm}

clean: ## Remove local state and build output
	rm -rf $(CLUB_DIR)
