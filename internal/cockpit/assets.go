// This file serves the cockpit's page: the files under web/, embedded in
// the binary, with the headers every cockpit response carries.

package cockpit

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:web
var webFiles embed.FS

// web is the embedded web/ directory.
var web = func() fs.FS {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic("cockpit: embedded web/: " + err.Error())
	}
	return sub
}()

// CSP is the Content-Security-Policy of every cockpit response: nothing is
// loaded from or sent to another origin; xterm sets inline styles.
const CSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"

// secureHeaders sets the headers every cockpit response carries.
func secureHeaders(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", CSP)
	h.Set("Referrer-Policy", "no-referrer")
}

// contentTypes overrides mime.TypeByExtension where browsers need a given
// type (ES modules must be served as JavaScript) or the system's mime
// tables may lack one.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".json":  "application/json",
	".map":   "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
	".md":    "text/plain; charset=utf-8",
}

// contentType is the Content-Type of an embedded file.
func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// serveAsset serves /ui/<name> from web/ ("/ui/" is index.html).
func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		htmlError(w, http.StatusMethodNotAllowed, "Method not allowed", "The cockpit's pages are read with GET.")
		return
	}
	if name == "" {
		name = "index.html"
	}
	if !fs.ValidPath(name) || strings.HasSuffix(name, "/") {
		htmlError(w, http.StatusNotFound, "Not found", "No such page in the cockpit.")
		return
	}
	data, err := fs.ReadFile(web, name)
	if err != nil { // missing, or a directory
		htmlError(w, http.StatusNotFound, "Not found", "No such page in the cockpit.")
		return
	}
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
