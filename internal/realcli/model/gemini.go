package model

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Gemini (Gemini CLI): POST <p>/v1beta/models/<m>:streamGenerateContent
// ?alt=sse, :generateContent and :countTokens.

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string `json:"text"`
			Thought          bool   `json:"thought"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// parseGemini fills req from a generateContent body: the user contents
// after the model's last content are the turn's new content. A
// countTokens body wraps the same fields (or holds them directly).
func parseGemini(req *Request) error {
	var b geminiRequest
	if err := json.Unmarshal(req.Body, &b); err != nil {
		return err
	}
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			req.Tools = append(req.Tools, f.Name)
		}
	}
	req.Main = len(req.Tools) > 0 && strings.Contains(req.Path, ":streamGenerateContent")
	start := 0
	for i, c := range b.Contents {
		if c.Role == "model" {
			start = i + 1
		}
	}
	// A tool call is answered once: Gemini CLI's resumed history can
	// carry one call's response twice in one turn, which is one result.
	answered := map[string]bool{}
	for i, c := range b.Contents {
		if c.Role == "model" {
			continue
		}
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil && p.FunctionResponse.ID != "" && answered[p.FunctionResponse.ID]:
				continue
			case p.FunctionResponse != nil:
				answered[p.FunctionResponse.ID] = true
				out := jsonStrings(p.FunctionResponse.Response)
				req.all = append(req.all, out...)
				if i >= start {
					req.ToolResult = true
					req.Texts = append(req.Texts, out...)
				}
			case p.Text != "" && !p.Thought:
				req.all = append(req.all, p.Text)
				if i >= start {
					req.Texts = append(req.Texts, p.Text)
				}
			}
		}
	}
	return nil
}

func (s *Server) gemini(w http.ResponseWriter, r *http.Request, rest string, req Request) {
	switch {
	case strings.HasSuffix(rest, ":countTokens"):
		s.record(req)
		writeJSON(w, map[string]any{"totalTokens": 100})
		return
	case strings.HasSuffix(rest, ":streamGenerateContent"), strings.HasSuffix(rest, ":generateContent"):
	default:
		http.NotFound(w, r)
		return
	}
	if err := parseGemini(&req); err != nil {
		badRequest(w, Gemini, err)
		return
	}
	rep, ok := s.answer(r.Context(), &req)
	if !ok {
		return
	}
	part := map[string]any{"text": rep.Text}
	if rep.Shell != "" && !req.ToolResult && slices.Contains(req.Tools, "run_shell_command") {
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": rep.Shell, "description": "Run the scripted command"}}}
	}
	chunk := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "scripted",
	}
	if strings.HasSuffix(rest, ":generateContent") {
		writeJSON(w, chunk)
		return
	}
	startSSE(w).event("", chunk)
}
