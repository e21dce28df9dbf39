package agent_test

import (
	"fmt"

	"hm/agent"
)

// Neutralize makes text safe to type into a terminal: an escape sequence
// is shown, never sent, and a lone CR cannot press Enter.
func ExampleNeutralize() {
	fmt.Printf("%q\n", agent.Neutralize("hi\x1b[31mred\rnext"))
	// Output:
	// "hi␛[31mred\nnext"
}

// ProfileFor finds a built-in profile; an unknown name gets the default.
func ExampleProfileFor() {
	fmt.Println(agent.ProfileFor("Claude").Name, agent.ProfileFor("no-such-cli").Name)
	// Output:
	// claude default
}
