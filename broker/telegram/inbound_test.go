package telegram

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDecodeAndRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		wantID     int64
		wantErr    bool
		wantMsg    bool
		wantText   string
		wantSender string
		wantEdited bool
	}{
		{
			name:   "text",
			raw:    `{"update_id":5,"message":{"message_id":1,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"first_name":"Ann","username":"ann"},"text":"hello"}}`,
			wantID: 5, wantMsg: true, wantText: "hello", wantSender: "Ann",
		},
		{
			name:   "username when no first name",
			raw:    `{"update_id":6,"message":{"chat":{"id":42},"from":{"id":42,"username":"ann"},"text":"hi"}}`,
			wantID: 6, wantMsg: true, wantText: "hi", wantSender: "ann",
		},
		{
			name:   "photo with caption",
			raw:    `{"update_id":7,"message":{"chat":{"id":42},"from":{"first_name":"Ann"},"photo":[{"file_id":"a"}],"caption":"look"}}`,
			wantID: 7, wantMsg: true, wantText: "[Photo] look", wantSender: "Ann",
		},
		{
			name:   "document",
			raw:    `{"update_id":8,"message":{"chat":{"id":42},"from":{"first_name":"Ann"},"document":{"file_name":"log.txt"},"caption":"see"}}`,
			wantID: 8, wantMsg: true, wantText: "[File: log.txt] see", wantSender: "Ann",
		},
		{
			name:   "voice, audio, video, sticker, location, contact, poll, dice",
			raw:    `{"update_id":9,"message":{"chat":{"id":42},"voice":{"duration":2}}}`,
			wantID: 9, wantMsg: true, wantText: "[Voice]", wantSender: "unknown",
		},
		{
			name:   "edited message",
			raw:    `{"update_id":10,"edited_message":{"chat":{"id":42,"first_name":"Ann"},"date":1,"edit_date":2,"text":"fixed"}}`,
			wantID: 10, wantMsg: true, wantText: "fixed", wantSender: "Ann", wantEdited: true,
		},
		{
			name:   "channel post signed",
			raw:    `{"update_id":11,"channel_post":{"chat":{"id":-1001,"type":"channel","title":"News"},"sender_chat":{"id":-1001,"title":"News"},"text":"post"}}`,
			wantID: 11, wantMsg: true, wantText: "post", wantSender: "News",
		},
		{
			name:   "unknown kind",
			raw:    `{"update_id":12,"some_future_kind":{"x":1}}`,
			wantID: 12, wantMsg: false,
		},
		{
			name:   "callback query is not delivered",
			raw:    `{"update_id":13,"callback_query":{"id":"q","data":"x"}}`,
			wantID: 13, wantMsg: false,
		},
		{
			name:   "odd field shape keeps the text",
			raw:    `{"update_id":14,"message":{"chat":{"id":42},"from":"not an object","text":"still here"}}`,
			wantID: 14, wantMsg: true, wantText: "still here", wantSender: "unknown",
		},
		{
			name:   "message without a chat",
			raw:    `{"update_id":15,"message":{"text":5}}`,
			wantID: 15, wantMsg: false,
		},
		{
			name:    "no update id",
			raw:     `{"message":{"chat":{"id":42},"text":"x"}}`,
			wantErr: true,
		},
		{
			name:    "not an object",
			raw:     `[1,2]`,
			wantErr: true,
		},
		{
			name:   "control characters removed",
			raw:    `{"update_id":16,"message":{"chat":{"id":42},"from":{"first_name":"A\nnn\u001b"},"text":"a\u0000b\u001b[31mc\r\nd\u0085e\tf"}}`,
			wantID: 16, wantMsg: true, wantText: "ab[31mc\nde\tf", wantSender: "A nn",
		},
		{
			name:   "forwarded",
			raw:    `{"update_id":17,"message":{"chat":{"id":42},"from":{"first_name":"Ann"},"forward_origin":{"type":"hidden_user","sender_user_name":"X","date":1},"text":"fwd"}}`,
			wantID: 17, wantMsg: true, wantText: "[Forwarded] fwd", wantSender: "Ann",
		},
		{
			name:   "service message has no text",
			raw:    `{"update_id":18,"message":{"chat":{"id":42},"from":{"first_name":"Ann"},"new_chat_title":"T"}}`,
			wantID: 18, wantMsg: true, wantText: "", wantSender: "Ann",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := decodeUpdate(json.RawMessage(tt.raw))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decodeUpdate succeeded: %+v", u)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeUpdate: %v", err)
			}
			if u.ID != tt.wantID {
				t.Fatalf("ID = %d, want %d", u.ID, tt.wantID)
			}
			if (u.Msg != nil) != tt.wantMsg {
				t.Fatalf("Msg present = %v, want %v (err %v)", u.Msg != nil, tt.wantMsg, u.Err)
			}
			if u.Msg == nil {
				return
			}
			in := toInbound(u)
			if in.Text != tt.wantText || in.Sender != tt.wantSender || in.Edited != tt.wantEdited {
				t.Fatalf("inbound = text %q sender %q edited %v, want %q %q %v",
					in.Text, in.Sender, in.Edited, tt.wantText, tt.wantSender, tt.wantEdited)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want string
	}{
		{`"audio":{"performer":"Band","title":"Song"}`, "[Audio: Band - Song]"},
		{`"audio":{"file_name":"a.mp3"}`, "[Audio: a.mp3]"},
		{`"video":{}`, "[Video]"},
		{`"video_note":{}`, "[Video message]"},
		{`"animation":{},"document":{"file_name":"x.gif"}`, "[GIF]"},
		{`"sticker":{"emoji":"👍"}`, "[Sticker 👍]"},
		{`"sticker":{}`, "[Sticker]"},
		{`"location":{"latitude":1.5,"longitude":-2.25}`, "[Location: 1.500000, -2.250000]"},
		{`"venue":{"title":"Cafe","address":"Main St"},"location":{"latitude":1,"longitude":2}`, "[Venue: Cafe, Main St]"},
		{`"contact":{"first_name":"Bo","phone_number":"+1"}`, "[Contact: Bo, +1]"},
		{`"poll":{"question":"Lunch?"}`, "[Poll: Lunch?]"},
		{`"dice":{"emoji":"🎲","value":4}`, "[Dice 🎲 4]"},
		{`"document":{}`, "[File]"},
		{`"document":{"file_name":7}`, "[File]"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			raw := `{"update_id":1,"message":{"chat":{"id":42},` + tt.msg + `}}`
			u, err := decodeUpdate(json.RawMessage(raw))
			if err != nil || u.Msg == nil {
				t.Fatalf("decode: %v %v", err, u.Err)
			}
			if got := renderMessage(u.Msg); got != tt.want {
				t.Fatalf("render = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatInbound(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   Inbound
		want string
	}{
		{"fresh", Inbound{Sender: "Ann", Text: "hi", Date: now.Add(-time.Minute)}, "[Telegram from Ann]: hi"},
		{"exactly ten minutes is not delayed", Inbound{Sender: "Ann", Text: "hi", Date: now.Add(-10 * time.Minute)}, "[Telegram from Ann]: hi"},
		{"delayed", Inbound{Sender: "Ann", Text: "hi", Date: now.Add(-42*time.Minute - 30*time.Second)}, "[delayed: 42m old] [Telegram from Ann]: hi"},
		{"edited", Inbound{Sender: "Ann", Text: "fixed", Date: now, Edited: true}, "[Telegram from Ann]: [edited] fixed"},
		{"no date", Inbound{Sender: "Ann", Text: "x"}, "[Telegram from Ann]: x"},
		{"future date", Inbound{Sender: "Ann", Text: "x", Date: now.Add(time.Hour)}, "[Telegram from Ann]: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatInbound(tt.in, now); got != tt.want {
				t.Fatalf("formatInbound = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInboundMessageID(t *testing.T) {
	t.Parallel()
	if got := (Inbound{UpdateID: 700001}).MessageID(); got != "telegram-in-700001" {
		t.Fatalf("MessageID = %q", got)
	}
}

// FuzzDecodeUpdate feeds arbitrary updates through decoding and rendering:
// never a panic, and what would be typed into a pane is valid UTF-8 without
// control characters other than newline and tab.
func FuzzDecodeUpdate(f *testing.F) {
	f.Add(`{"update_id":1,"message":{"chat":{"id":42},"from":{"first_name":"Ann"},"text":"hi"}}`)
	f.Add(`{"update_id":2,"edited_message":{"chat":{"id":42},"photo":[{}],"caption":"c\u001b"}}`)
	f.Add(`{"update_id":3,"message":{"chat":{"id":42},"document":{"file_name":"\u0000x"},"sticker":null}}`)
	f.Add(`{"update_id":4,"poll":{}}`)
	f.Add(`{"update_id":"x"}`)
	f.Add("{\"update_id\":5,\"message\":{\"chat\":{\"id\":1},\"text\":\"\xff\xfe\"}}")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := decodeUpdate(json.RawMessage(raw))
		if err != nil || u.Msg == nil {
			return
		}
		in := toInbound(u)
		out := formatInbound(in, time.Now())
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 in %q", out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("control character %U in %q", r, out)
			}
		}
		if strings.ContainsAny(in.Sender, "\n\t") || in.Sender == "" {
			t.Fatalf("bad sender %q", in.Sender)
		}
	})
}
