// This file builds the inbound updates tests enqueue.

package telegramtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Message describes an inbound message to enqueue with [Server.Enqueue].
type Message struct {
	ChatID    int64  // required
	ChatType  string // default "private"
	ChatTitle string // for groups and channels
	ChatUser  string // the chat's @username, without "@"
	FromID    int64  // default: ChatID
	FromName  string // first name of the sender; default "Alice"
	Username  string // sender's username
	Text      string
	Caption   string
	Photo     bool   // attach a photo
	Document  string // attach a document with this file name
	Voice     bool   // attach a voice note
	Sticker   bool   // attach a sticker
	Emoji     string // the sticker's emoji
	Edited    bool   // deliver as edited_message
	Date      time.Time
	EditDate  time.Time
}

// Enqueue adds a message update (message or edited_message) and returns its
// update_id.
func (s *Server) Enqueue(m Message) int64 {
	chatType := m.ChatType
	if chatType == "" {
		chatType = "private"
	}
	chat := map[string]any{"id": m.ChatID, "type": chatType}
	if m.ChatTitle != "" {
		chat["title"] = m.ChatTitle
	}
	if m.ChatUser != "" {
		chat["username"] = m.ChatUser
	}
	fromName := m.FromName
	if fromName == "" {
		fromName = "Alice"
	}
	fromID := m.FromID
	if fromID == 0 {
		fromID = m.ChatID
	}
	from := map[string]any{"id": fromID, "is_bot": false, "first_name": fromName}
	if m.Username != "" {
		from["username"] = m.Username
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	s.mu.Lock()
	msgID := s.nextMsgID
	s.nextMsgID++
	s.mu.Unlock()
	msg := map[string]any{"message_id": msgID, "date": date.Unix(), "chat": chat, "from": from}
	if m.Text != "" {
		msg["text"] = m.Text
		if strings.HasPrefix(m.Text, "/") {
			n := len(strings.Fields(m.Text)[0])
			msg["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": n}}
		}
	}
	if m.Caption != "" {
		msg["caption"] = m.Caption
	}
	if m.Photo {
		msg["photo"] = []any{
			map[string]any{"file_id": "p-small", "file_unique_id": "ps", "width": 90, "height": 90},
			map[string]any{"file_id": "p-big", "file_unique_id": "pb", "width": 800, "height": 800},
		}
	}
	if m.Document != "" {
		msg["document"] = map[string]any{"file_id": "d1", "file_unique_id": "d1u", "file_name": m.Document}
	}
	if m.Voice {
		msg["voice"] = map[string]any{"file_id": "v1", "file_unique_id": "v1u", "duration": 3}
	}
	if m.Sticker {
		st := map[string]any{"file_id": "s1", "file_unique_id": "s1u", "type": "regular", "width": 512, "height": 512}
		if m.Emoji != "" {
			st["emoji"] = m.Emoji
		}
		msg["sticker"] = st
	}
	kind := "message"
	if m.Edited {
		kind = "edited_message"
		ed := m.EditDate
		if ed.IsZero() {
			ed = time.Now()
		}
		msg["edit_date"] = ed.Unix()
	}
	return s.EnqueueRaw(kind, msg)
}

// EnqueueRaw adds an update {"update_id": id, kind: payload} and returns id.
// payload is marshalled as JSON (a json.RawMessage is used as is), so any
// kind, known or not, can be queued.
func (s *Server) EnqueueRaw(kind string, payload any) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	p, err := json.Marshal(payload)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: marshal payload: %v", err))
	}
	raw := fmt.Sprintf(`{"update_id":%d,%q:%s}`, id, kind, p)
	s.queue = append(s.queue, queued{id: id, raw: json.RawMessage(raw)})
	close(s.changed)
	s.changed = make(chan struct{})
	return id
}

// EnqueueJSON adds an update whose JSON (without update_id) is given
// verbatim, e.g. to deliver invalid UTF-8 or odd shapes; fields must be a JSON
// object body such as `"message":{...}`. It returns the update_id.
func (s *Server) EnqueueJSON(fields string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	raw := fmt.Sprintf(`{"update_id":%d,%s}`, id, fields)
	s.queue = append(s.queue, queued{id: id, raw: json.RawMessage(raw)})
	close(s.changed)
	s.changed = make(chan struct{})
	return id
}
