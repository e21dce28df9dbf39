package federation_test

import (
	"encoding/json"
	"testing"

	"hm/internal/federation"
)

func FuzzParsePresence(f *testing.F) {
	f.Add([]byte(`{"hub":"h1","roles":[{"role":"builder","state":"idle"}],"atMs":1,"ttlMs":1000}`), "h1")
	f.Add([]byte(`{"hub":"h1","roles":[{"role":"builder"},{"role":"builder"}],"atMs":1,"ttlMs":1000}`), "h1")
	f.Add([]byte(`{"hub":"h1","roles":null,"atMs":1,"ttlMs":1000,"sig":"zz"}`), "h2")
	f.Add([]byte(`[]`), "")
	f.Fuzz(func(t *testing.T, data []byte, hub string) {
		p, err := federation.ParsePresence(data, hub)
		if err != nil {
			return
		}
		if p.Hub != hub || len(p.Roles) > federation.MaxPresenceRoles || p.TTLMs <= 0 {
			t.Fatalf("accepted %+v", p)
		}
		_ = p.Signed()
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := federation.ParsePresence(out, hub); err != nil {
			t.Fatalf("re-encoded presence refused: %v", err)
		}
		peers := federation.NewPeers("self", func(r string) bool { return r == "architect" }, false, nil, nil)
		_ = peers.Accept(p)
		_ = peers.Panes()
	})
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"messageId":"m1","hub":"h","from":"architect","target":"builder","content":"(ARCH #1): hi","seq":1,"metadata":{}}`))
	f.Add([]byte(`{"messageId":"m1","hub":"h","from":"a b","target":"builder","content":"x"}`))
	f.Add([]byte(`{"messageId":"m1","hub":"h","from":"a","target":"b","content":"x","metadata":[1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := federation.ParseEnvelope(data)
		if err != nil {
			return
		}
		out, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := federation.ParseEnvelope(out); err != nil {
			t.Fatalf("re-encoded envelope refused: %v", err)
		}
	})
}
