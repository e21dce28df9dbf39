package proto

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hm/internal/ground/status"
)

// specCopy is SPEC.md's §5 (the WebSocket protocol), copied into the
// repository so that the test below needs nothing outside it;
// TestSpecCopyCurrent keeps it in step with the contract.
var specCopy = filepath.Join("testdata", "spec-5.md")

// specPath is where the contract lives: ../shared/SPEC.md beside the
// repository.
var specPath = filepath.Join("..", "..", "..", "shared", "SPEC.md")

var updateSpec = flag.Bool("update-spec", false, "rewrite "+specCopy+" from ../shared/SPEC.md")

// specSection returns SPEC.md's "## 5." section, up to the next "## ".
func specSection(spec string) (string, bool) {
	i := strings.Index(spec, "\n## 5. ")
	if i < 0 {
		return "", false
	}
	sec := spec[i+1:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j+1]
	}
	return sec, true
}

// TestSpecCopyCurrent checks that testdata/spec-5.md is SPEC.md's §5 as it
// stands, where the contract is beside the repository (as in CI); with
// -update-spec it rewrites the copy.
func TestSpecCopyCurrent(t *testing.T) {
	spec, err := os.ReadFile(specPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("the contract is not beside the repository (%s): %s cannot be compared with it", specPath, specCopy)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, ok := specSection(string(spec))
	if !ok {
		t.Fatalf(`%s has no "## 5. " section; the extraction is broken`, specPath)
	}
	if *updateSpec {
		if err := os.WriteFile(specCopy, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(specCopy)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from §5 of %s: run go test ./broker/proto -run TestSpecCopyCurrent -update-spec, then check TestProtocolMatchesSpec", specCopy, specPath)
	}
}

// notProtocol are words the extraction below picks up from SPEC.md §5.3's
// prose that are not protocol names, each with what it is.
var notProtocol = map[string]string{
	"ack_status": "a comms_journal column (SPEC §9), named where §5.3 lists the delivery stages",
	"hm_ack":     "an MCP tool an agent may call to acknowledge a message, not a frame, status or code",
}

// protocolNames returns every name the protocol may use: proto's frame
// types and statuses, and internal/ground/status's Status, Stage and Code values.
func protocolNames() map[string]bool {
	known := map[string]bool{}
	for _, s := range []string{TypeWelcome, TypeRegister, TypeRegistered, TypeSend, TypeBroadcast, TypeSendAck, TypeHealthCheck,
		TypeHealthCheckResult, TypeDeliveryCheck, TypeDeliveryCheckResult, TypeHeartbeat, TypeHeartbeatAck, TypeBackgroundAgent,
		TypeResponse, TypeSubscribe, TypeJournalEvent, TypeMessage, TypeMessageAck, TypeError, TypeResize, TypeQuery} {
		known[s] = true
	}
	for _, s := range status.Statuses {
		known[string(s)] = true
	}
	for _, s := range append(status.Stages, status.FallbackTriggered) {
		if s != status.StageNone {
			known[string(s)] = true
		}
	}
	for _, c := range status.Codes {
		known[string(c)] = true
	}
	return known
}

// TestProtocolMatchesSpec checks that every frame type, code, status and
// delivery stage SPEC.md names is a protocol name hm defines (protocolNames)
// and is mentioned in docs/protocol.md. It reads the copy of SPEC.md's §5
// (specCopy), where every one of them is named.
func TestProtocolMatchesSpec(t *testing.T) {
	spec, err := os.ReadFile(specCopy)
	if err != nil {
		t.Fatalf("SPEC.md's §5, the contract this test checks the protocol against: %v", err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	known := protocolNames()
	var names []string
	for _, m := range regexp.MustCompile(`"type":"([a-z-]+)"`).FindAllStringSubmatch(string(spec), -1) {
		names = append(names, m[1])
	}
	for _, m := range regexp.MustCompile(`code:"([a-z_]+)"`).FindAllStringSubmatch(string(spec), -1) {
		names = append(names, m[1])
	}
	sec := string(spec)
	i := strings.Index(sec, "### 5.3 Statuses")
	if i < 0 {
		t.Fatal(`SPEC.md has no "### 5.3 Statuses" section; the extraction is broken`)
	}
	sec = sec[i:]
	if j := strings.Index(sec[5:], "###"); j >= 0 {
		sec = sec[:j+5]
	}
	for _, m := range regexp.MustCompile("`([a-z_]+(?:\\.[a-z]+)?)`").FindAllStringSubmatch(sec, -1) {
		names = append(names, m[1])
	}
	if len(names) < 20 {
		t.Fatalf("found only %d protocol names in SPEC.md; the extraction is broken", len(names))
	}
	for _, n := range names {
		if _, skip := notProtocol[n]; skip {
			continue
		}
		if !known[n] {
			t.Errorf("SPEC.md names %q but neither broker/proto nor internal/ground/status defines it", n)
		}
		if !strings.Contains(string(doc), "`"+n+"`") && !strings.Contains(string(doc), `"`+n+`"`) {
			t.Errorf("SPEC.md names %q but docs/protocol.md does not mention it (as `%s` or %q)", n, n, n)
		}
	}
}
