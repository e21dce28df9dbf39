package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DelayedAfter is the age after which an inbound message is marked
// "[delayed: Nm old] ".
const DelayedAfter = 10 * time.Minute

// maxSenderLen caps the sender name shown in "[Telegram from <sender>]".
const maxSenderLen = 64

// wireUpdate is the part of a Bot API Update the relay reads. Messages are kept
// raw and decoded one by one so that a surprising field never makes a whole
// batch undecodable.
type wireUpdate struct {
	UpdateID          *int64          `json:"update_id"`
	Message           json.RawMessage `json:"message"`
	EditedMessage     json.RawMessage `json:"edited_message"`
	ChannelPost       json.RawMessage `json:"channel_post"`
	EditedChannelPost json.RawMessage `json:"edited_channel_post"`
}

// wireChat is a Bot API Chat (or the chat-like sender of a channel post).
type wireChat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title"`
	Username  string `json:"username"`
	FirstName string `json:"first_name"`
}

// wireUser is a Bot API User.
type wireUser struct {
	ID        int64  `json:"id"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// wireMessage is the part of a Bot API Message the relay reads. Media objects
// stay raw: their presence is what matters, and their few useful fields are
// read leniently by [placeholder].
type wireMessage struct {
	MessageID       int64     `json:"message_id"`
	Date            int64     `json:"date"`
	EditDate        int64     `json:"edit_date"`
	Chat            wireChat  `json:"chat"`
	From            *wireUser `json:"from"`
	SenderChat      *wireChat `json:"sender_chat"`
	AuthorSignature string    `json:"author_signature"`
	Text            string    `json:"text"`
	Caption         string    `json:"caption"`

	ForwardOrigin json.RawMessage `json:"forward_origin"`
	Photo         json.RawMessage `json:"photo"`
	Animation     json.RawMessage `json:"animation"`
	Document      json.RawMessage `json:"document"`
	Audio         json.RawMessage `json:"audio"`
	Voice         json.RawMessage `json:"voice"`
	Video         json.RawMessage `json:"video"`
	VideoNote     json.RawMessage `json:"video_note"`
	Sticker       json.RawMessage `json:"sticker"`
	Location      json.RawMessage `json:"location"`
	Venue         json.RawMessage `json:"venue"`
	Contact       json.RawMessage `json:"contact"`
	Poll          json.RawMessage `json:"poll"`
	Dice          json.RawMessage `json:"dice"`
	Story         json.RawMessage `json:"story"`
	Game          json.RawMessage `json:"game"`
	PaidMedia     json.RawMessage `json:"paid_media"`
	Checklist     json.RawMessage `json:"checklist"`
	Invoice       json.RawMessage `json:"invoice"`
}

// update is one decoded update: its id, and the message it carries (nil for
// kinds the relay does not deliver, or a message it could not decode).
type update struct {
	ID     int64
	Msg    *wireMessage
	Edited bool
	Kind   string
	Err    error // why Msg is nil although the update carried a message
}

// errNoUpdateID marks an update whose update_id cannot be read.
var errNoUpdateID = errors.New("update without update_id")

// decodeUpdate decodes one raw update. It fails only when the update_id itself
// cannot be read; a message that does not decode is reported in update.Err.
func decodeUpdate(raw json.RawMessage) (update, error) {
	var w wireUpdate
	if err := json.Unmarshal(raw, &w); err != nil {
		// The envelope itself is odd; try for the id alone.
		var id struct {
			UpdateID *int64 `json:"update_id"`
		}
		if json.Unmarshal(raw, &id) != nil || id.UpdateID == nil {
			return update{}, fmt.Errorf("decode update: %w", errors.Join(errNoUpdateID, err))
		}
		return update{ID: *id.UpdateID, Kind: "malformed", Err: err}, nil
	}
	if w.UpdateID == nil {
		return update{}, errNoUpdateID
	}
	u := update{ID: *w.UpdateID, Kind: "other"}
	var msgRaw json.RawMessage
	switch {
	case present(w.Message):
		u.Kind, msgRaw = "message", w.Message
	case present(w.EditedMessage):
		u.Kind, msgRaw, u.Edited = "edited_message", w.EditedMessage, true
	case present(w.ChannelPost):
		u.Kind, msgRaw = "channel_post", w.ChannelPost
	case present(w.EditedChannelPost):
		u.Kind, msgRaw, u.Edited = "edited_channel_post", w.EditedChannelPost, true
	default:
		return u, nil
	}
	var m wireMessage
	if err := json.Unmarshal(msgRaw, &m); err != nil {
		// Some field has an unexpected shape; keep what matters most.
		var lite struct {
			Date    int64    `json:"date"`
			Chat    wireChat `json:"chat"`
			Text    string   `json:"text"`
			Caption string   `json:"caption"`
		}
		if json.Unmarshal(msgRaw, &lite) != nil || lite.Chat.ID == 0 {
			u.Err = fmt.Errorf("decode %s: %w", u.Kind, err)
			return u, nil
		}
		m = wireMessage{Date: lite.Date, Chat: lite.Chat, Text: lite.Text, Caption: lite.Caption}
	}
	u.Msg = &m
	return u, nil
}

// present reports whether a raw JSON field was given and is not null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// chatIDString renders a chat id as the relay compares and reports it.
func chatIDString(c wireChat) string { return strconv.FormatInt(c.ID, 10) }

// toInbound builds the Inbound of a decoded message update.
func toInbound(u update) Inbound {
	m := u.Msg
	in := Inbound{
		UpdateID: u.ID,
		ChatID:   chatIDString(m.Chat),
		Sender:   senderName(m),
		Text:     renderMessage(m),
		Edited:   u.Edited,
	}
	date := m.Date
	if u.Edited && m.EditDate > 0 {
		date = m.EditDate
	}
	if date > 0 {
		in.Date = time.Unix(date, 0)
	}
	return in
}

// senderName picks the name shown for the sender: first name, else username,
// else the sending chat's title, else the chat's own name.
func senderName(m *wireMessage) string {
	var candidates []string
	if m.From != nil {
		candidates = append(candidates, m.From.FirstName, m.From.Username)
	}
	if m.SenderChat != nil {
		candidates = append(candidates, m.SenderChat.Title, m.SenderChat.Username)
	}
	candidates = append(candidates, m.AuthorSignature, m.Chat.Title, m.Chat.FirstName, m.Chat.Username)
	for _, c := range candidates {
		if c = cleanLine(c); c != "" {
			return truncateRunes(c, maxSenderLen)
		}
	}
	return "unknown"
}

// renderMessage turns a message into the text given to the architect: the
// text, or a media placeholder followed by the caption. Empty means the
// message has nothing to deliver (a service message).
func renderMessage(m *wireMessage) string {
	body := m.Text
	if body == "" {
		body = m.Caption
	}
	body = strings.TrimSpace(cleanText(body))
	ph := placeholder(m)
	var s string
	switch {
	case ph != "" && body != "":
		s = ph + " " + body
	case ph != "":
		s = ph
	default:
		s = body
	}
	if s != "" && present(m.ForwardOrigin) {
		s = "[Forwarded] " + s
	}
	return s
}

// placeholder names the media a message carries, e.g. "[Photo]",
// "[File: report.pdf]"; empty for a plain text.
func placeholder(m *wireMessage) string {
	switch {
	case present(m.Photo):
		return "[Photo]"
	case present(m.Animation):
		return "[GIF]"
	case present(m.Document):
		var d struct {
			FileName string `json:"file_name"`
		}
		_ = json.Unmarshal(m.Document, &d)
		return labelled("File", d.FileName)
	case present(m.Voice):
		return "[Voice]"
	case present(m.Audio):
		var a struct {
			Performer string `json:"performer"`
			Title     string `json:"title"`
			FileName  string `json:"file_name"`
		}
		_ = json.Unmarshal(m.Audio, &a)
		name := a.FileName
		if a.Title != "" {
			name = strings.TrimPrefix(a.Performer+" - "+a.Title, " - ")
		}
		return labelled("Audio", name)
	case present(m.Video):
		return "[Video]"
	case present(m.VideoNote):
		return "[Video message]"
	case present(m.Sticker):
		var s struct {
			Emoji string `json:"emoji"`
		}
		_ = json.Unmarshal(m.Sticker, &s)
		if e := cleanLine(s.Emoji); e != "" {
			return "[Sticker " + e + "]"
		}
		return "[Sticker]"
	case present(m.Venue):
		var v struct {
			Title   string `json:"title"`
			Address string `json:"address"`
		}
		_ = json.Unmarshal(m.Venue, &v)
		return labelled("Venue", strings.Trim(cleanLine(v.Title)+", "+cleanLine(v.Address), ", "))
	case present(m.Location):
		var l struct {
			Latitude  float64 `json:"latitude"`
			Longitude float64 `json:"longitude"`
		}
		if json.Unmarshal(m.Location, &l) != nil {
			return "[Location]"
		}
		return fmt.Sprintf("[Location: %.6f, %.6f]", l.Latitude, l.Longitude)
	case present(m.Contact):
		var c struct {
			FirstName   string `json:"first_name"`
			LastName    string `json:"last_name"`
			PhoneNumber string `json:"phone_number"`
		}
		_ = json.Unmarshal(m.Contact, &c)
		name := strings.TrimSpace(cleanLine(c.FirstName) + " " + cleanLine(c.LastName))
		return labelled("Contact", strings.Trim(name+", "+cleanLine(c.PhoneNumber), ", "))
	case present(m.Poll):
		var p struct {
			Question string `json:"question"`
		}
		_ = json.Unmarshal(m.Poll, &p)
		return labelled("Poll", p.Question)
	case present(m.Dice):
		var d struct {
			Emoji string `json:"emoji"`
			Value int    `json:"value"`
		}
		if json.Unmarshal(m.Dice, &d) != nil {
			return "[Dice]"
		}
		return fmt.Sprintf("[Dice %s %d]", cleanLine(d.Emoji), d.Value)
	case present(m.Story):
		return "[Story]"
	case present(m.Game):
		return "[Game]"
	case present(m.PaidMedia):
		return "[Paid media]"
	case present(m.Checklist):
		return "[Checklist]"
	case present(m.Invoice):
		return "[Invoice]"
	}
	return ""
}

// labelled renders "[Kind: detail]", or "[Kind]" without a detail.
func labelled(kind, detail string) string {
	if detail = truncateRunes(cleanLine(detail), 200); detail != "" {
		return "[" + kind + ": " + detail + "]"
	}
	return "[" + kind + "]"
}

// formatInbound renders what the architect pane gets:
// "[Telegram from <sender>]: <text>", "[edited] " before the text of an edit,
// and "[delayed: Nm old] " in front when the message is older than
// [DelayedAfter].
func formatInbound(in Inbound, now time.Time) string {
	var b strings.Builder
	if !in.Date.IsZero() {
		if age := now.Sub(in.Date); age > DelayedAfter {
			fmt.Fprintf(&b, "[delayed: %dm old] ", int(age/time.Minute))
		}
	}
	b.WriteString("[Telegram from ")
	b.WriteString(in.Sender)
	b.WriteString("]: ")
	if in.Edited {
		b.WriteString("[edited] ")
	}
	b.WriteString(in.Text)
	return b.String()
}

// cleanText makes inbound text safe to type into a terminal: invalid UTF-8 is
// replaced, CR and CRLF become LF, and control characters other than tab and
// newline (C0, DEL, C1) are removed.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r':
			return '\n'
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return -1
		}
		return r
	}, s)
}

// cleanLine is cleanText for one-line values: whitespace runs, including
// newlines, collapse to one space.
func cleanLine(s string) string {
	return strings.Join(strings.Fields(cleanText(s)), " ")
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}
