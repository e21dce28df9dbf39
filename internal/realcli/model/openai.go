package model

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// OpenAI Responses (Codex CLI): POST <p>/v1/responses, streamed as
// response.created … response.completed.

type openaiRequest struct {
	Stream bool `json:"stream"`
	Input  []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// modelItem reports whether an input item is the model's own output.
func modelItem(typ, role string) bool {
	switch typ {
	case "function_call", "reasoning", "local_shell_call", "custom_tool_call", "web_search_call":
		return true
	}
	return role == "assistant"
}

// parseOpenAI fills req from a Responses body: the input items after the
// model's last output item are the turn's new content.
func parseOpenAI(req *Request) error {
	var b openaiRequest
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return err
	}
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, cmpOr(t.Name, t.Type))
	}
	req.Main = len(b.Tools) > 0
	start := 0
	for i, it := range b.Input {
		if modelItem(it.Type, it.Role) {
			start = i + 1
		}
	}
	for i, it := range b.Input {
		switch it.Type {
		case "function_call_output", "local_shell_call_output", "custom_tool_call_output":
			out := jsonStrings(it.Output)
			req.all = append(req.all, out...)
			if i >= start {
				req.ToolResult = true
				req.Texts = append(req.Texts, out...)
			}
		case "", "message":
			if modelItem(it.Type, it.Role) {
				continue
			}
			texts := textOf(it.Content)
			req.all = append(req.all, texts...)
			if i >= start {
				req.Texts = append(req.Texts, texts...)
			}
		}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// openaiShell is the function call that runs cmd with the shell tool the
// request offers, or nil.
func openaiShell(req Request, cmd string) map[string]any {
	var name, args string
	switch {
	case slices.Contains(req.Tools, "exec_command"):
		a, _ := json.Marshal(map[string]any{"cmd": cmd})
		name, args = "exec_command", string(a)
	case slices.Contains(req.Tools, "shell"):
		a, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
		name, args = "shell", string(a)
	default:
		return nil
	}
	return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", req.Seq), "call_id": fmt.Sprintf("call_%d", req.Seq),
		"name": name, "arguments": args, "status": "completed"}
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request, req Request) {
	if err := parseOpenAI(&req); err != nil {
		badRequest(w, OpenAI, err)
		return
	}
	rep, ok := s.answer(r.Context(), &req)
	if !ok {
		return
	}
	id := fmt.Sprintf("resp_%d", req.Seq)
	var item map[string]any
	if rep.Shell != "" && !req.ToolResult {
		item = openaiShell(req, rep.Shell)
	}
	text := item == nil
	if text {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", req.Seq), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
	e := startSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress", "output": []any{}}})
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	if text {
		added["status"], added["content"] = "in_progress", []any{}
	}
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added})
	if text {
		for _, c := range chunks(rep.Text, 64) {
			e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"],
				"output_index": 0, "content_index": 0, "delta": c})
		}
	}
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed",
		"response": map[string]any{"id": id, "status": "completed", "output": []any{item}, "usage": usage}})
}
