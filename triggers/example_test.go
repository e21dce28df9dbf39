package triggers_test

import (
	"fmt"

	"hm/triggers"
)

// A trigger file's name says whom the message is for.
func ExampleParseName() {
	for _, name := range []string{"builder.txt", "Builder.note-1.TXT", ".builder.txt", "builder.tmp"} {
		target, ok := triggers.ParseName(name)
		fmt.Printf("%s: %q %v\n", name, target, ok)
	}
	// Output:
	// builder.txt: "builder" true
	// Builder.note-1.TXT: "builder" true
	// .builder.txt: "" false
	// builder.tmp: "" false
}

// Decode takes the id line off and cleans the text: CRLF becomes LF,
// control characters go, surrounding blanks are trimmed.
func ExampleDecode() {
	id, content, err := triggers.Decode([]byte("[HM-MESSAGE-ID:note-42]\r\n(ARCH #3): build it\x07\r\n"))
	fmt.Printf("%q %q %v\n", id, content, err)
	// Output:
	// "note-42" "(ARCH #3): build it" <nil>
}
