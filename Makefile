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

# vet, the whole suite under the race detector, then the timing-sensitive
# tests (which skip themselves under -race) without it.
test: build
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 $(PKGS)
	$(GO) test -count=1 -run 'Timing' $(PKGS)

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
