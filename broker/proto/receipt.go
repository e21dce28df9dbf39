package proto

// TypeReceipt carries the proof a CLI's prompt-submit hook gives (its
// prompt, the text the CLI sends its model): payload Receipt, answered with
// a response whose result is a ReceiptResult (docs/protocol.md §14,
// "Receipts").
const TypeReceipt = "receipt"

// MaxReceipt bounds the ids one receipt names.
const MaxReceipt = 50

// Receipt is a receipt frame's payload: the ids of the [hm:<id>] markers
// one submitted prompt holds, in order.
type Receipt struct {
	MessageIDs []string `json:"messageIds"`
	// Hook names the witness for the ledger, e.g. "claude UserPromptSubmit".
	Hook string `json:"hook,omitempty"`
}

// ReceiptResult answers a receipt.
type ReceiptResult struct {
	// Verified were recorded delivered.verified.
	Verified []string `json:"verified"`
	// Merged: the prompt held more than one of them (event merged).
	Merged bool `json:"merged,omitempty"`
	// Ignored prove nothing: unknown, not the caller's, or put in the
	// agent's context by hm itself (delivered.context).
	Ignored []string `json:"ignored,omitempty"`
}
