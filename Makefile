# hm — see README.md. Everything here needs only Go and gcc.
GO      ?= go
BIN     := bin
PKGS    := ./...
.PHONY: build install uninstall run deps test test-loaded test-realcli bench lint vet-cross fuzz clean

# make install puts hm, hm-send and the hm-bg link in $(DESTDIR)$(PREFIX)/bin.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
# Stamp the binary with the commit it is built from (hm --version), even
# where GOFLAGS says -buildvcs=false; BUILDVCS=false turns it off.
BUILDVCS ?= auto
# hm-send is its own binary (cmd/hm-send: the send command alone, none of
# the hub), since every pane starts it for every message it sends; hm-bg
# is a link to hm, which acts as the program it is started as (so would
# hm-send, linked). Both binaries are built without cgo: hm needs no C,
# and a dynamically linked binary spends milliseconds at every start
# loading libc (the net package links it for its resolver otherwise).
BINS    := hm hm-send
LINKS   := hm-bg
NOCGO   := CGO_ENABLED=0

build:
	@rm -f $(addprefix $(BIN)/,$(BINS))
	$(NOCGO) $(GO) build -buildvcs=$(BUILDVCS) -o $(BIN)/ ./cmd/hm ./cmd/hm-send
	@for l in $(LINKS); do ln -sfn hm $(BIN)/$$l; done

install: build
	install -d $(DESTDIR)$(BINDIR)
	@for b in $(BINS); do rm -f $(DESTDIR)$(BINDIR)/$$b && install -m 0755 $(BIN)/$$b $(DESTDIR)$(BINDIR)/$$b && echo "$(DESTDIR)$(BINDIR)/$$b"; done
	@for l in $(LINKS); do ln -sfn hm $(DESTDIR)$(BINDIR)/$$l && echo "$(DESTDIR)$(BINDIR)/$$l -> hm"; done

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(BINS) $(LINKS))

# Builds and starts the hub for the README's tour (127.0.0.1:9900, panes in
# this directory): the demo team, whose panes show each message's text.
run: build
	./$(BIN)/hm up --demo

# What the tests need that Go does not bring (shells, chattr, node/npm):
# installed with apt-get when missing; and the agent CLIs pinned in
# scripts/agent-clis.txt, with npm into a cache outside the tree.
deps:
	./scripts/deps.sh

# vet (native and macOS cross), the tests too slow under the race detector
# without it, the whole suite under it, and the real agent CLI suite: every
# step runs, every failure is listed at the end (scripts/test.sh).
test: deps build
	./scripts/test.sh

# Only the real agent CLI suite (internal/realcli), after make deps.
test-realcli: deps build
	$(GO) test -count=1 -timeout 10m -v -run TestRealCLIs ./internal/realcli/

# make test while a CPU hog keeps every core busy (RUNS=3 for three in a row).
test-loaded:
	./scripts/test-loaded.sh

bench: deps build
	$(GO) run ./scripts/bench

# The linters are pinned here and run with go run, so that they need no
# install and stay out of go.mod (their dependencies would raise ours).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.52.0

# vet, gofmt, staticcheck, and deadcode: a function that neither the
# programs nor the tests reach fails lint.
lint: vet-cross
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)
	@out=$$($(GO) run $(DEADCODE) -test $(PKGS)) || exit 1; if [ -n "$$out" ]; then echo "deadcode (unreachable even from tests):"; echo "$$out"; exit 1; fi

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
