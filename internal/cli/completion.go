package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"hm/internal/cmdline"
)

const completionSynopsis = "hm completion bash|zsh|fish"

// completionShells are the shells hm completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

// runCompletion: `hm completion <shell>` prints a completion script for
// hm, hm-send and hm-bg, made from the command table (commands) and each
// command's own flags: commands, subcommands, argument words (bg's
// actions) and flags, with file names after a flag that takes a value.
func runCompletion(ctx context.Context, env Env, args []string) int {
	fs := newFlags("completion", env)
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) != 1 {
		err = errors.New("name one shell: bash, zsh or fish")
	}
	if err != nil {
		return usageError(env, fs, completionSynopsis, err)
	}
	tree := completionTree(ctx)
	switch pos[0] {
	case "bash":
		writeBash(env.Stdout, tree)
	case "zsh":
		writeZsh(env.Stdout, tree)
	case "fish":
		writeFish(env.Stdout, tree)
	default:
		return usageError(env, fs, completionSynopsis, fmt.Errorf("no completion for %q%s", pos[0], didYouMean(pos[0], completionShells)))
	}
	return ExitOK
}

// completionNode is what completion offers after one command path ("",
// "send", "comms history").
type completionNode struct {
	path   string
	words  []completionWord // subcommands, argument words, flags
	values []string         // its flags that take a value (--root)
}

// completionWord is a word completion offers and what it is (fish shows it).
type completionWord struct{ word, about string }

// completionTree walks the command table: every command path with what may
// follow it. A command's flags are read from its own flag set, the one its
// --help prints (Env.Describe), so nothing is listed twice.
func completionTree(ctx context.Context) []completionNode {
	top := completionNode{words: []completionWord{{"--help", "print hm's usage"}, {versionFlag, "print the version and commit"}}}
	var nodes []completionNode
	var walk func(parent *completionNode, path string, cmds []command)
	walk = func(parent *completionNode, path string, cmds []command) {
		for _, c := range cmds {
			parent.words = append(parent.words, completionWord{c.name, c.summary})
			n := completionNode{path: strings.TrimSpace(path + " " + c.name)}
			if len(c.subs) > 0 {
				walk(&n, n.path, c.subs)
				n.words = append(n.words, completionWord{"--help", "print the subcommands"})
				nodes = append(nodes, n)
				continue
			}
			for _, w := range c.words {
				n.words = append(n.words, completionWord{w, ""})
			}
			if fs := commandFlags(ctx, c); fs != nil {
				fs.VisitAll(func(f *flag.Flag) {
					n.words = append(n.words, completionWord{cmdline.FlagName(f.Name), f.Usage})
					if !cmdline.IsBoolFlag(f) {
						n.values = append(n.values, cmdline.FlagName(f.Name))
					}
				})
			}
			nodes = append(nodes, n)
		}
	}
	walk(&top, "", commands())
	for i := range nodes {
		if nodes[i].path == "help" { // hm help's arguments are the commands
			nodes[i].words = append(top.words[2:len(top.words):len(top.words)], nodes[i].words...)
		}
	}
	return append([]completionNode{top}, nodes...)
}

// commandFlags is the flag set c's --help describes, or nil.
func commandFlags(ctx context.Context, c command) *flag.FlagSet {
	var got *flag.FlagSet
	env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" },
		Describe: func(fs *flag.FlagSet) { got = fs }}
	c.run(ctx, env, []string{"--help"})
	return got
}

// commandPathsIn is every command path of tree (not the top's ""),
// quoted for a shell.
func commandPathsIn(tree []completionNode, quote func(string) string) []string {
	var out []string
	for _, n := range tree[1:] {
		out = append(out, quote(n.path))
	}
	return out
}

// shQuote quotes s for sh, bash and zsh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeShFunctions writes the functions bash and zsh share: _hm_is_path
// (is "$1" a command path), _hm_words (what follows path "$1") and
// _hm_values (path "$1"'s flags that take a value).
func writeShFunctions(w io.Writer, tree []completionNode) {
	paths := commandPathsIn(tree, shQuote)
	fmt.Fprintf(w, "_hm_is_path() {\n  case \"$1\" in\n    %s) return 0 ;;\n  esac\n  return 1\n}\n\n", strings.Join(paths, "|"))
	fmt.Fprint(w, "_hm_words() {\n  case \"$1\" in\n")
	for _, n := range tree {
		var words []string
		for _, cw := range n.words {
			words = append(words, cw.word)
		}
		fmt.Fprintf(w, "    %s) echo %s ;;\n", shQuote(n.path), shQuote(strings.Join(words, " ")))
	}
	fmt.Fprint(w, "  esac\n}\n\n_hm_values() {\n  case \"$1\" in\n")
	for _, n := range tree {
		if len(n.values) > 0 {
			fmt.Fprintf(w, "    %s) echo %s ;;\n", shQuote(n.path), shQuote(strings.Join(n.values, " ")))
		}
	}
	fmt.Fprint(w, "  esac\n}\n\n")
}

// shWalk is the loop bash and zsh share: it finds the command path among
// the words before the cursor (words are $1.., first the program). A flag
// that takes a value skips that value; the first argument that is not a
// command ends the path (hm-send's target, bg's action).
const shWalk = `  local cmdpath="" next w skip=""
  case "${1##*/}" in
    hm-send) cmdpath=send ;;
    hm-bg) cmdpath=bg ;;
  esac
  shift
  for w in "$@"; do
    if [ -n "$skip" ]; then skip=""; continue; fi
    case "$w" in
      -*=*) continue ;;
      -*) case " $(_hm_values "$cmdpath") " in *" $w "*) skip=1 ;; esac; continue ;;
    esac
    next="${cmdpath:+$cmdpath }$w"
    if _hm_is_path "$next"; then cmdpath="$next"; else break; fi
  done
  _hm_path="$cmdpath"
`

func writeBash(w io.Writer, tree []completionNode) {
	fmt.Fprint(w, "# bash completion for hm, hm-send and hm-bg (hm completion bash)\n\n")
	writeShFunctions(w, tree)
	fmt.Fprint(w, "_hm_find_path() {\n"+shWalk+"}\n\n")
	fmt.Fprint(w, `_hm() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" _hm_path
  if [ "$COMP_CWORD" -gt 0 ]; then prev="${COMP_WORDS[COMP_CWORD-1]}"; fi
  _hm_find_path "${COMP_WORDS[@]:0:COMP_CWORD}"
  case " $(_hm_values "$_hm_path") " in
    *" $prev "*) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  COMPREPLY=($(compgen -W "$(_hm_words "$_hm_path")" -- "$cur"))
}

complete -o default -F _hm hm hm-send hm-bg
`)
}

func writeZsh(w io.Writer, tree []completionNode) {
	fmt.Fprint(w, "#compdef hm hm-send hm-bg\n# zsh completion for hm, hm-send and hm-bg (hm completion zsh)\n\n")
	writeShFunctions(w, tree)
	fmt.Fprint(w, "_hm_find_path() {\n"+shWalk+"}\n\n")
	fmt.Fprint(w, `_hm() {
  local _hm_path prev="${words[CURRENT-1]}"
  _hm_find_path "${(@)words[1,CURRENT-1]}"
  if [[ " $(_hm_values "$_hm_path") " == *" $prev "* ]]; then
    _files
    return
  fi
  compadd -- ${=$(_hm_words "$_hm_path")}
}

if (( $+functions[compdef] )); then
  compdef _hm hm hm-send hm-bg
fi
`)
}

// fishQuote quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func writeFish(w io.Writer, tree []completionNode) {
	fmt.Fprint(w, "# fish completion for hm, hm-send and hm-bg (hm completion fish)\n\n")
	paths := commandPathsIn(tree, fishQuote)
	fmt.Fprintf(w, "function __hm_is_path\n    contains -- $argv[1] %s\nend\n\n", strings.Join(paths, " "))
	fmt.Fprint(w, "function __hm_words\n    switch $argv[1]\n")
	for _, n := range tree {
		fmt.Fprintf(w, "        case %s\n", fishQuote(n.path))
		for _, cw := range n.words {
			line := cw.word
			if cw.about != "" {
				line += "\t" + cw.about
			}
			fmt.Fprintf(w, "            printf '%%s\\n' %s\n", fishQuote(line))
		}
	}
	fmt.Fprint(w, "    end\nend\n\nfunction __hm_values\n    switch $argv[1]\n")
	for _, n := range tree {
		if len(n.values) > 0 {
			fmt.Fprintf(w, "        case %s\n            printf '%%s\\n' %s\n", fishQuote(n.path), strings.Join(n.values, " "))
		}
	}
	fmt.Fprint(w, `    end
end

function __hm_complete
    set -l tokens (commandline -opc)
    set -l p ''
    switch (string replace -r '.*/' '' -- $tokens[1])
        case hm-send
            set p send
        case hm-bg
            set p bg
    end
    set -e tokens[1]
    set -l skip 0
    for w in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*=*' $w
            continue
        end
        if string match -q -- '-*' $w
            if contains -- $w (__hm_values $p)
                set skip 1
            end
            continue
        end
        set -l next (string trim -- "$p $w")
        if __hm_is_path $next
            set p $next
        else
            break
        end
    end
    set -l prev (commandline -opc)[-1]
    if contains -- $prev (__hm_values $p)
        __fish_complete_path (commandline -ct)
        return
    end
    __hm_words $p
end

complete -c hm -f -a '(__hm_complete)'
complete -c hm-send -f -a '(__hm_complete)'
complete -c hm-bg -f -a '(__hm_complete)'
`)
}
