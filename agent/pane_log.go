package agent

import (
	"fmt"
	"os"
	"path/filepath"
)

// openLog opens the pane log, if configured; failures are logged, not fatal.
func (p *Pane) openLog() {
	if p.spec.LogPath == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p.spec.LogPath), 0o700); err != nil {
		p.log.Warn("pane log disabled", "err", fmt.Errorf("create log dir: %w", err))
		return
	}
	f, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		p.log.Warn("pane log disabled", "err", fmt.Errorf("open pane log: %w", err))
		return
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	p.logMu.Lock()
	p.logFile, p.logSize = f, size
	p.logMu.Unlock()
}

// appendLog appends output to the pane log, rotating it when too large.
func (p *Pane) appendLog(b []byte) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.logFile == nil {
		return
	}
	if p.spec.LogMaxBytes > 0 && p.logSize+int64(len(b)) > p.spec.LogMaxBytes {
		p.logFile.Close()
		p.logFile = nil
		if err := os.Rename(p.spec.LogPath, p.spec.LogPath+".1"); err != nil {
			p.log.Warn("rotate pane log", "err", err)
		}
		f, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			p.log.Warn("pane log disabled", "err", fmt.Errorf("reopen pane log: %w", err))
			return
		}
		p.logFile, p.logSize = f, 0
	}
	n, err := p.logFile.Write(b)
	p.logSize += int64(n)
	if err != nil {
		p.log.Warn("pane log disabled", "err", fmt.Errorf("write pane log: %w", err))
		p.logFile.Close()
		p.logFile = nil
	}
}

// closeLog closes the pane log.
func (p *Pane) closeLog() {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.logFile != nil {
		if err := p.logFile.Close(); err != nil {
			p.log.Warn("close pane log", "err", err)
		}
		p.logFile = nil
	}
}
