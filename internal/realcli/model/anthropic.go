package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Anthropic Messages (Claude Code): POST <p>/v1/messages[?beta=true],
// streamed as message_start … message_stop; <p>/v1/messages/count_tokens.

type anthropicRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// parseAnthropic fills req from an Anthropic Messages body: the user
// messages after the last assistant message are the turn's new content.
func parseAnthropic(req *Request) error {
	var b anthropicRequest
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return err
	}
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	req.Main = len(b.Tools) > 0
	start := 0
	for i, m := range b.Messages {
		if m.Role == "assistant" {
			start = i + 1
		}
	}
	for i, m := range b.Messages {
		// Not only "user": Claude Code 2.1.197 sends hook context as
		// "system" messages too (Request.SystemTexts).
		if m.Role == "assistant" {
			continue
		}
		texts, tool := textOf(m.Content), false
		var parts []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			for _, p := range parts {
				if p.Type == "tool_result" {
					tool = true
					texts = append(texts, jsonStrings(p.Content)...)
				}
			}
		}
		if m.Role == "system" {
			req.SystemTexts = append(req.SystemTexts, texts...)
			continue
		}
		req.all = append(req.all, texts...)
		if i >= start {
			req.ToolResult = req.ToolResult || tool
			req.Texts = append(req.Texts, texts...)
		}
	}
	return nil
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, rest string, req Request) {
	if strings.HasPrefix(rest, "/v1/messages/count_tokens") {
		s.record(req)
		writeJSON(w, map[string]any{"input_tokens": 100})
		return
	}
	if err := parseAnthropic(&req); err != nil {
		badRequest(w, Anthropic, err)
		return
	}
	var b anthropicRequest
	_ = json.Unmarshal(req.Body, &b)
	rep, ok := s.answer(r.Context(), &req)
	if !ok {
		return
	}
	block, stop := map[string]any{"type": "text", "text": rep.Text}, "end_turn"
	if rep.Shell != "" && !req.ToolResult && slices.Contains(req.Tools, "Bash") {
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", req.Seq), "name": "Bash",
			"input": map[string]any{"command": rep.Shell, "description": "Run the scripted command"}}
		stop = "tool_use"
	}
	msg := map[string]any{"id": fmt.Sprintf("msg_%d", req.Seq), "type": "message", "role": "assistant", "model": "scripted",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}
	if !b.Stream {
		msg["content"], msg["stop_reason"] = []any{block}, stop
		writeJSON(w, msg)
		return
	}
	e := startSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": msg})
	if block["type"] == "tool_use" {
		input, _ := json.Marshal(block["input"])
		block["input"] = map[string]any{}
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
		e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(rep.Text, 64) {
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c}})
		}
	}
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}
