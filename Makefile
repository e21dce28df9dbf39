# hm — see README.md. Everything here needs only Go and gcc.
GO      ?= go
BIN     := bin
PKGS    := ./...
# The packages that have Timing tests: the un-raced pass builds only these.
TIMING_PKGS = $(sort $(dir $(shell grep -rl --include='*_test.go' '^func Test[A-Za-z0-9_]*Timing' .)))

.PHONY: build run deps test test-race test-timing bench lint vet-cross fuzz clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Builds and starts the hub on its defaults (127.0.0.1:9900, panes in this directory).
run: build
	./$(BIN)/hm up

# What the tests need that Go does not bring (shells, chattr): installed
# with apt-get when missing.
deps:
	./scripts/deps.sh

# vet (native and macOS cross), the timing-sensitive tests (which skip
# themselves under -race) without the race detector, then the whole suite
# under it.
test: deps build vet-cross
	$(GO) vet $(PKGS)
	@out=$$($(GO) test -count=1 -run 'Timing' $(TIMING_PKGS) 2>&1); status=$$?; \
	  printf '%s\n' "$$out" | grep -v 'no test files\|no tests to run'; exit $$status
	$(GO) test -race -count=1 -p 4 -parallel 4 $(PKGS)

bench: build
	$(GO) run ./scripts/bench

lint: vet-cross
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# macOS is not run here; vetting its cross-compilation keeps Linux-only
# calls out of the build (see README.md, Platforms).
vet-cross:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)
	CGO_ENABLED=0 GOOS=darwin GOARCH=amd64 $(GO) vet $(PKGS)

# Short fuzzing pass over every parser (FUZZTIME=30s for longer).
FUZZTIME ?= 10s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN)
