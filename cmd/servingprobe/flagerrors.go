package main

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/servingprobe/servingprobe/internal/nearest"
)

// flagError is a flag's value that did not parse, named by the flag.
// A value that names its flag itself (a list flag's values given after
// other tokens) returns one, so that namedValue does not name it twice.
type flagError struct {
	Flag string // without the dashes
	Err  error
}

func (e *flagError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *flagError) Unwrap() error { return e.Err }

// namedValue is a flag's kingpin.Value whose refusals name the flag, say
// what was wrong and give a valid value: kingpin's own values return the
// bare parse error ("strconv.ParseFloat: parsing \"abc\": invalid
// syntax", "time: missing unit in duration \"5\""), which leaves the
// user to guess which of the flags given it was.
//
// It passes kingpin's optional interfaces through, so that a boolean
// stays a switch (--no-X) and a repeatable flag stays repeatable.
type namedValue struct {
	kingpin.Value
	name    string
	kind    valueKind
	example string // a valid value: the flag's default, else one of its kind
}

func (v *namedValue) Set(s string) error {
	if !v.kind.accepts(s) {
		return &flagError{v.name, v.kind.refusal(s, v.example)}
	}
	err := v.Value.Set(s)
	if err == nil {
		return nil
	}
	if _, ok := err.(*flagError); ok {
		return err
	}
	if v.kind != kindOther {
		err = v.kind.refusal(s, v.example)
	}
	return &flagError{v.name, err}
}

func (v *namedValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func (v *namedValue) IsCumulative() bool {
	c, ok := v.Value.(interface{ IsCumulative() bool })
	return ok && c.IsCumulative()
}

// valueKind is what a kingpin value parses, read from the type its Get
// returns; kindOther is a value of ours, whose error is kept as it is.
type valueKind int

const (
	kindOther valueKind = iota
	kindInt
	kindUint
	kindFloat
	kindBool
	kindDuration
)

func kindOf(v kingpin.Value) valueKind {
	g, ok := v.(interface{ Get() any })
	if !ok {
		return kindOther
	}
	switch g.Get().(type) {
	case int, int8, int16, int32, int64:
		return kindInt
	case uint, uint8, uint16, uint32, uint64:
		return kindUint
	case float32, float64:
		return kindFloat
	case bool:
		return kindBool
	case time.Duration:
		return kindDuration
	}
	return kindOther
}

// accepts is a check before kingpin's own: kingpin parses an integer flag
// as a float and truncates it, so --max-tokens=1.5 would ask for 1 token.
func (k valueKind) accepts(s string) bool {
	switch k {
	case kindInt:
		_, err := strconv.ParseInt(s, 0, 64)
		return err == nil
	case kindUint:
		_, err := strconv.ParseUint(s, 0, 64)
		return err == nil
	}
	return true
}

// refusal says what s is not, with a valid example.
func (k valueKind) refusal(s, example string) error {
	switch k {
	case kindInt:
		return fmt.Errorf("%q is not a whole number (e.g. %s)", s, orDefault(example, "10"))
	case kindUint:
		return fmt.Errorf("%q is not a whole number of 0 or more (e.g. %s)", s, orDefault(example, "10"))
	case kindFloat:
		return fmt.Errorf("%q is not a number (e.g. %s)", s, orDefault(example, "0.5"))
	case kindBool:
		return fmt.Errorf("%q is not true or false", s)
	case kindDuration:
		return fmt.Errorf("%q is not a duration (a number with a unit, e.g. 5s or 500ms)", s)
	}
	return fmt.Errorf("%q is not valid", s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stringValueType is the type of kingpin's plain string value, which
// never refuses a value; it stays unwrapped because kingpin's help quotes
// a default only for that type.
var stringValueType = func() reflect.Type {
	fc := kingpin.New("", "").Flag("s", "")
	fc.String()
	return reflect.TypeOf(fc.Model().Value)
}()

// nameFlagErrors makes every flag of app, global or of any command, refuse
// a bad value with its name (namedValue): the one place where value
// errors are worded, so that a flag added later is covered too. run calls
// it just before kingpin parses, after the bench help and argparse's
// pre-pass, which read the flags' own values.
func nameFlagErrors(app *kingpin.Application) {
	wrap := func(fc *kingpin.FlagClause) {
		if fc == nil {
			return
		}
		m := fc.Model()
		if _, done := m.Value.(*namedValue); done || m.Value == nil || reflect.TypeOf(m.Value) == stringValueType {
			return
		}
		v := &namedValue{Value: m.Value, name: m.Name, kind: kindOf(m.Value)}
		if len(m.Default) == 1 && v.kind.accepts(m.Default[0]) {
			v.example = m.Default[0]
		}
		fc.SetValue(v)
	}
	for _, f := range app.Model().Flags {
		wrap(app.GetFlag(f.Name))
	}
	var walk func(models []*kingpin.CmdModel, get func(string) *kingpin.CmdClause)
	walk = func(models []*kingpin.CmdModel, get func(string) *kingpin.CmdClause) {
		for _, cm := range models {
			c := get(cm.Name)
			if c == nil {
				continue
			}
			for _, f := range cm.Flags {
				wrap(c.GetFlag(f.Name))
			}
			walk(cm.Commands, c.GetCommand)
		}
	}
	walk(app.Model().Commands, app.GetCommand)
}

// suggestParseError adds to kingpin's refusal of an unknown command or
// flag the name the user most likely meant, as bench's argparse pre-pass
// does for its flags and as the datasets do for their names, and names
// the switch behind kingpin's "unexpected false" for --switch=false.
func suggestParseError(app *kingpin.Application, args []string, err error) error {
	msg := err.Error()
	if q, ok := strings.CutPrefix(msg, "expected command but got "); ok {
		got, uerr := strconv.Unquote(q)
		if uerr != nil {
			return err
		}
		var names []string
		for _, c := range app.Model().Commands {
			if !c.Hidden {
				names = append(names, c.Name)
			}
		}
		// Commands are lower case; BENCH is a caps-lock away from bench.
		if near := nearest.Name(strings.ToLower(got), names); near != "" {
			return fmt.Errorf("unknown command %q (did you mean %s?)", got, near)
		}
		return fmt.Errorf("unknown command %q (one of %s)", got, strings.Join(names, ", "))
	}
	flags := commandFlags(app, args)
	if q, ok := strings.CutPrefix(msg, "unknown long flag '--"); ok {
		got := strings.TrimSuffix(q, "'")
		var names []string
		for _, f := range flags {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		}
		if near := nearest.Name(got, names); near != "" {
			return fmt.Errorf("%s (did you mean --%s?)", msg, near)
		}
		return err
	}
	if strings.HasPrefix(msg, "unexpected ") {
		// kingpin reads --stream=false as the switch --stream followed
		// by a stray argument "false", and refuses the argument alone.
		for _, a := range args {
			name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !hasVal || !strings.HasPrefix(a, "--") {
				continue
			}
			if slices.ContainsFunc(flags, func(f *kingpin.FlagModel) bool { return f.Name == name && f.IsBoolFlag() }) {
				return fmt.Errorf("--%s takes no value (got %q): --%s turns it on, --no-%s off", name, val, name, name)
			}
		}
	}
	return err
}

// commandFlags are the global flags and those of the first command args
// name, the one kingpin parses.
func commandFlags(app *kingpin.Application, args []string) []*kingpin.FlagModel {
	flags := slices.Clone(app.Model().Flags)
	cmds := app.Model().Commands
	for _, a := range args {
		if i := slices.IndexFunc(cmds, func(c *kingpin.CmdModel) bool { return c.Name == a }); i >= 0 {
			return append(flags, cmds[i].Flags...)
		}
	}
	return flags
}
