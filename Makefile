# hm — see README.md. Everything here needs only Go and gcc.
GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: build run test test-race test-timing bench lint fuzz clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Builds and starts the hub on its defaults (127.0.0.1:9900, panes in this directory).
run: build
	./$(BIN)/hm up

# vet, the timing-sensitive tests (which skip themselves under -race)
# without the race detector, then the whole suite under it.
test: build
	$(GO) vet $(PKGS)
	@out=$$($(GO) test -count=1 -run 'Timing' $(PKGS) 2>&1); status=$$?; \
	  printf '%s\n' "$$out" | grep -v 'no test files\|no tests to run'; exit $$status
	$(GO) test -race -count=1 $(PKGS)

bench: build
	$(GO) run ./scripts/bench

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Short fuzzing pass over every parser (FUZZTIME=30s for longer).
FUZZTIME ?= 10s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN)
