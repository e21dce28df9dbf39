package proto

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProtocolMatchesSpec checks that every frame type, code and status
// SPEC.md names exists in this package and in docs/protocol.md. SPEC.md lives
// in ../shared beside the repository; the test fails when it is absent.
func TestProtocolMatchesSpec(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "SPEC.md"))
	if err != nil {
		t.Fatalf("the contract SPEC.md is missing: it must be at ../shared/SPEC.md beside the repository (as in CI's checkout, with shared/ next to the clone): %v", err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range []string{TypeWelcome, TypeRegister, TypeRegistered, TypeSend, TypeBroadcast, TypeSendAck, TypeHealthCheck,
		TypeHealthCheckResult, TypeDeliveryCheck, TypeDeliveryCheckResult, TypeHeartbeat, TypeHeartbeatAck, TypeBackgroundAgent,
		TypeResponse, TypeSubscribe, TypeJournalEvent, TypeMessage, TypeMessageAck, TypeError, TypeResize,
		StatusDeliveredVerified, StatusDeliveredWebsocket, StatusAcceptedUnverified, StatusFallbackTriggered} {
		known[s] = true
	}
	for _, c := range []Code{CodeInvalidTarget, CodeOwnerBindingViolation, CodeRoleMismatch, CodeUnauthorized, CodeNotRegistered,
		CodeTooLarge, CodeRateLimited, CodeEmptyContent, CodeNoRoute, CodeTelegramUnconfigured, CodeJournalUnavailable,
		CodeUnknownType, CodeBadJSON, CodeExpiredSession, CodeCapacityReached, CodeSlotUnavailable, CodeNotRunning} {
		known[string(c)] = true
	}
	var names []string
	for _, m := range regexp.MustCompile(`"type":"([a-z-]+)"`).FindAllStringSubmatch(string(spec), -1) {
		names = append(names, m[1])
	}
	for _, m := range regexp.MustCompile(`code:"([a-z_]+)"`).FindAllStringSubmatch(string(spec), -1) {
		names = append(names, m[1])
	}
	sec := string(spec)
	if i := strings.Index(sec, "### 5.3 Statuses"); i >= 0 {
		sec = sec[i:]
		if j := strings.Index(sec[5:], "###"); j >= 0 {
			sec = sec[:j+5]
		}
		for _, m := range regexp.MustCompile("`([a-z_]+(?:\\.[a-z]+)?)`").FindAllStringSubmatch(sec, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d protocol names in SPEC.md; the extraction is broken", len(names))
	}
	for _, n := range names {
		if !known[n] {
			t.Errorf("SPEC.md names %q but broker/proto does not define it", n)
		}
		if !strings.Contains(string(doc), n) {
			t.Errorf("SPEC.md names %q but docs/protocol.md does not mention it", n)
		}
	}
}
