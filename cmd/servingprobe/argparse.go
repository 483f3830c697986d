package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/internal/nearest"
)

// argparseCommands are the commands whose command lines come from
// bench_serving users and their scripts, so they follow Python argparse's
// habits rather than kingpin's.
var argparseCommands = []string{"bench"}

// argparseArgs rewrites a command line of an argparse command as argparse
// would read it, before kingpin parses it:
//   - a long flag may be abbreviated to any unambiguous prefix
//     (--num-prompt 10, --random-input 1024); an exact name always wins,
//     and an ambiguous prefix is refused with argparse's message;
//   - a flag given twice takes its last value (scripts build command lines
//     by appending), except list flags (--lora-name, --header), which
//     keep every value as before. A flagValue takes the last value itself;
//     the pre-pass drops the earlier occurrences of kingpin's own flags
//     (booleans, durations).
//
// Other commands are returned as they are.
func argparseArgs(app *kingpin.Application, args []string) ([]string, error) {
	cmdAt := slices.IndexFunc(args, func(a string) bool { return slices.Contains(argparseCommands, a) })
	if cmdAt < 0 {
		return args, nil
	}
	var cmd *kingpin.CmdModel
	for _, c := range app.Model().Commands {
		if c.Name == args[cmdAt] {
			cmd = c
		}
	}
	if cmd == nil {
		return args, nil
	}
	flags := slices.Concat(app.Model().Flags, cmd.Flags)

	type occurrence struct {
		flag       *kingpin.FlagModel
		start, end int // tokens [start, end) in out
	}
	out := slices.Clone(args[:cmdAt+1])
	var seen []occurrence
	for i := cmdAt + 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "--") {
			out = append(out, a) // a value of a list flag, or kingpin's to judge
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		f, err := lookupFlag(flags, name)
		if err != nil {
			return nil, err
		}
		if f == nil {
			if negatesBool(flags, name) { // kingpin's --no-X of a boolean
				out = append(out, a)
				continue
			}
			return nil, unknownFlag(flags, name)
		}
		start := len(out)
		if hasValue {
			out = append(out, "--"+f.Name+"="+value)
		} else {
			out = append(out, "--"+f.Name)
			if !f.IsBoolFlag() && i+1 < len(args) {
				i++
				value, hasValue = args[i], true
				if strings.HasPrefix(value, "-") {
					// argparse takes a negative number as a value;
					// kingpin would read it as a flag.
					out[len(out)-1] += "=" + value
				} else {
					out = append(out, value)
				}
			}
		}
		if hasValue {
			if err := checkValue(f, value); err != nil {
				return nil, err
			}
		}
		if c, ok := f.Value.(interface{ IsCumulative() bool }); ok && c.IsCumulative() {
			continue
		}
		seen = append(seen, occurrence{f, start, len(out)})
	}
	// Drop every occurrence of a single-valued flag but its last.
	drop := make([]bool, len(out))
	for i, o := range seen {
		if slices.ContainsFunc(seen[i+1:], func(later occurrence) bool { return later.flag == o.flag }) {
			for k := o.start; k < o.end; k++ {
				drop[k] = true
			}
		}
	}
	kept := out[:0:0]
	for k, a := range out {
		if !drop[k] {
			kept = append(kept, a)
		}
	}
	return kept, nil
}

// checkValue refuses a value that does not parse as the flag's type, or
// is not one of an enum flag's choices, with argparse's message, which
// names the flag; kingpin's names neither. Every bench flag that takes a
// value is a flagValue, which knows how it parses.
func checkValue(f *kingpin.FlagModel, v string) error {
	c, ok := f.Value.(flagValue)
	if !ok {
		return nil
	}
	if err := c.argCheck(v); err != nil {
		return fmt.Errorf("argument --%s: %v", f.Name, err)
	}
	return nil
}

// negatesBool reports whether name is kingpin's --no-X of a boolean flag X.
func negatesBool(flags []*kingpin.FlagModel, name string) bool {
	x, ok := strings.CutPrefix(name, "no-")
	return ok && slices.ContainsFunc(flags, func(f *kingpin.FlagModel) bool { return f.Name == x && f.IsBoolFlag() })
}

// unknownFlag is argparse's refusal of an unknown option, with the flag
// the user most likely meant.
func unknownFlag(flags []*kingpin.FlagModel, name string) error {
	names := make([]string, 0, len(flags))
	for _, f := range flags {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	if near := nearest.Name(name, names); near != "" {
		return fmt.Errorf("unrecognized arguments: --%s (did you mean --%s?)", name, near)
	}
	return fmt.Errorf("unrecognized arguments: --%s", name)
}

// lookupFlag finds the flag a long option names: by its exact name, else
// by an unambiguous prefix. It returns nil for no match.
func lookupFlag(flags []*kingpin.FlagModel, name string) (*kingpin.FlagModel, error) {
	var matches []*kingpin.FlagModel
	for _, f := range flags {
		if f.Name == name {
			return f, nil
		}
		if name != "" && strings.HasPrefix(f.Name, name) {
			matches = append(matches, f)
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return matches[0], nil
	}
	names := make([]string, len(matches))
	for i, f := range matches {
		names[i] = "--" + f.Name
	}
	return nil, fmt.Errorf("ambiguous option: --%s could match %s", name, strings.Join(names, ", "))
}
