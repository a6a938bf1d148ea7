# twnsbench — see README.md. Targets that touch namespaces need root.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
BIN := bin/twnsbench
ARGS ?=

.PHONY: all build deps run test unit fuzz vmtest bench vet clean

all: build

# bin/wireguard-go is wireguard-go's own daemon at the version in go.mod:
# the userspace WireGuard rows run it from beside twnsbench (see docs/transports.md).
build:
	$(GO) build -o $(BIN) ./cmd/twnsbench
	$(GO) build -o bin/wireguard-go golang.zx2c4.com/wireguard

# System packages the harness needs (Debian/Ubuntu; root).
deps:
	bash scripts/install-deps.sh

# Set up and run the main job with its defaults: sudo make run [ARGS='--quick']
run: deps build
	./$(BIN) run $(ARGS)

vet:
	$(GO) vet ./...

# Every test, the root-only integration tests included (they skip, saying
# so, without root). -p 1: integration tests measure real throughput and
# latency, so packages must not compete for the two cores.
test: vet
	$(GO) test -p 1 -count=1 -timeout 30m ./...

# The kernel paths this host lacks (kernel WireGuard, netem) in a VM booted
# from Debian's stock kernel under QEMU (root; installs qemu and the kernel
# package on first use; see scripts/vmtest/README.md). suite.sh builds
# twnsbench and the test binaries itself; it ends with a summary line.
vmtest:
	GO=$(GO) bash scripts/vmtest/suite.sh

# Every fuzz target (func FuzzXxx in a _test.go file: the readers of
# results files, the report's renderers, compare, the wire's decoder) for
# FUZZTIME each; go test -fuzz takes one target of one package a run. No
# root, no namespaces. A crash's input is written to the package's
# testdata/fuzz/FuzzXxx/, which plain go test then runs as a seed.
# FUZZTIME is a count of inputs (Nx): with a duration, Go 1.26's fuzz
# coordinator now and then reports its own deadline as a failure with no
# input behind it (go.dev/issue/75804, fixed in Go 1.27). Longer: make fuzz
# FUZZTIME=1000000x (docs/testing.md).
FUZZTIME ?= 5000x
FUZZMINIMIZETIME ?= 1s
fuzz:
	@for f in $$(grep -rl --include='*_test.go' '^func Fuzz' cmd internal nsbench | sort); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz: $$t ($$(dirname $$f)) for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$(dirname $$f)/ || exit 1; \
		done; \
	done

# Unit tests only: no root, no namespaces.
unit:
	$(GO) test -short -count=1 ./...

# A quick benchmark of every available transport into results/quick.
bench: build
	./$(BIN) run --quick --out results/quick $(ARGS)

clean:
	rm -rf bin
