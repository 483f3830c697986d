package doctest

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// maxBudget bounds one block, so that the whole run stays within a few
// minutes on two cores.
const maxBudget = 3 * time.Minute

// commandLangs are the fence languages that hold commands; any other
// fenced block (json, yaml, promql, an unlabelled block of output) is not
// a command and is not run.
var commandLangs = map[string]bool{"console": true, "sh": true, "bash": true, "shell": true}

type directive struct {
	skip    string // the reason, when the block is not run
	budget  time.Duration
	expects []*regexp.Regexp
}

type command struct {
	line       int    // of its "$ " line in the file
	text       string // without "$ " and a trailing " &"
	background bool
	shown      []string // the output the page shows for it
}

type block struct {
	file      string
	line      int // of the opening fence
	lang      string
	dir       *directive // nil when the page gave none
	dirErr    error
	commands  []command // console blocks
	script    string    // sh blocks
	body      string    // the block's text, as written
	above     string    // the paragraph above the directive
	parseErrs []error
}

func (b *block) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fenceOpen    = regexp.MustCompile("^```([A-Za-z0-9_+-]*)\\s*$")
	fenceClose   = regexp.MustCompile("^```\\s*$")
	directiveRE  = regexp.MustCompile(`^<!--\s*docs-test:(.*)-->\s*$`)
	directiveArg = regexp.MustCompile(`^\s*([a-z]+)=("([^"]*)"|(\S+))`)
)

// parseBlocks returns the command blocks of one Markdown file, each with
// the directive on the line above its fence.
func parseBlocks(file, text string) []*block {
	lines := strings.Split(text, "\n")
	var blocks []*block
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && !fenceClose.MatchString(lines[i]); i++ {
			body = append(body, lines[i])
		}
		if !commandLangs[m[1]] {
			continue
		}
		b := &block{file: file, line: start + 1, lang: m[1], body: strings.Join(body, "\n")}
		if start > 0 {
			if dm := directiveRE.FindStringSubmatch(lines[start-1]); dm != nil {
				b.dir, b.dirErr = parseDirective(dm[1])
				b.above = paragraphAbove(lines, start-1)
			}
		}
		if b.lang == "console" {
			b.commands, b.parseErrs = parseConsole(body, start+2)
		} else {
			b.script = strings.Join(body, "\n")
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// paragraphAbove returns the paragraph above lines[i]: the blank lines
// right above it skipped, the lines up to the next blank line or fence.
func paragraphAbove(lines []string, i int) string {
	for i > 0 && strings.TrimSpace(lines[i-1]) == "" {
		i--
	}
	j := i
	for j > 0 && strings.TrimSpace(lines[j-1]) != "" && !strings.HasPrefix(lines[j-1], "```") {
		j--
	}
	return strings.Join(lines[j:i], "\n")
}

// saysNotRun reports whether a reader of the rendered page, who does not
// see the directive, is told that a skipped block is not run: in the
// paragraph above it or in the block itself.
func (b *block) saysNotRun() bool {
	re := regexp.MustCompile(`(?i)\bnot\s+run\b`)
	return re.MatchString(b.above) || re.MatchString(b.body)
}

func parseDirective(s string) (*directive, error) {
	d := &directive{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		m := directiveArg.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("directive: cannot read %q (want key=value or key=\"value\")", s)
		}
		s = s[len(m[0]):]
		val := m[3] + m[4]
		switch m[1] {
		case "skip":
			if strings.TrimSpace(val) == "" {
				return nil, fmt.Errorf("directive: skip needs its reason")
			}
			d.skip = val
		case "budget":
			v, err := time.ParseDuration(val)
			if err != nil || v <= 0 || v > maxBudget {
				return nil, fmt.Errorf("directive: budget %q, want a duration in (0, %v]", val, maxBudget)
			}
			d.budget = v
		case "expect":
			re, err := regexp.Compile(val)
			if err != nil {
				return nil, fmt.Errorf("directive: expect: %v", err)
			}
			d.expects = append(d.expects, re)
		default:
			return nil, fmt.Errorf("directive: unknown key %q (skip, budget, expect)", m[1])
		}
	}
	if (d.skip == "") == (d.budget == 0) {
		return nil, fmt.Errorf(`directive: give either budget=DURATION (run) or skip="why" (not run)`)
	}
	if d.skip != "" && len(d.expects) > 0 {
		return nil, fmt.Errorf("directive: expect on a block that is not run")
	}
	return d, nil
}

// parseConsole splits a console block into its commands and the output
// shown after each; first is the file line of body[0].
func parseConsole(body []string, first int) ([]command, []error) {
	var cmds []command
	var errs []error
	for i := 0; i < len(body); i++ {
		l := body[i]
		if !strings.HasPrefix(l, "$ ") {
			if len(cmds) == 0 {
				if strings.TrimSpace(l) != "" {
					errs = append(errs, fmt.Errorf("line %d: output before any command", first+i))
				}
				continue
			}
			cmds[len(cmds)-1].shown = append(cmds[len(cmds)-1].shown, l)
			continue
		}
		c := command{line: first + i}
		text := strings.TrimPrefix(l, "$ ")
		for strings.HasSuffix(text, `\`) && i+1 < len(body) {
			i++
			text += "\n" + body[i]
		}
		text = strings.TrimSpace(text)
		if t, ok := strings.CutSuffix(text, " &"); ok {
			c.background, text = true, strings.TrimSpace(t)
		}
		c.text = text
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if c.background && len(shownLines(c.shown)) > 0 {
			errs = append(errs, fmt.Errorf("line %d: a background command shows output, which is not checked", c.line))
		}
	}
	if len(cmds) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("a console block without a \"$ \" command"))
	}
	return cmds, errs
}

// shownLines drops the blank lines and the "..." marks of a command's
// shown output: what is left must appear.
func shownLines(shown []string) []string {
	var out []string
	for _, l := range shown {
		if t := strings.TrimSpace(l); t != "" && t != "..." {
			out = append(out, l)
		}
	}
	return out
}

var (
	numberRE = regexp.MustCompile(`\d+(?:[.,]\d+)*(?:e[+-]\d+)?`)
	spaceRE  = regexp.MustCompile(`\s+`)
)

// linePattern turns a shown output line into an expression that matches
// the same line with other numbers and other runs of spaces.
func linePattern(shown string) *regexp.Regexp {
	shown = strings.TrimSpace(shown)
	var b strings.Builder
	b.WriteString(`^\s*`)
	last := 0
	lit := func(s string) {
		parts := spaceRE.Split(s, -1)
		for i, p := range parts {
			if i > 0 {
				b.WriteString(`\s+`)
			}
			b.WriteString(regexp.QuoteMeta(p))
		}
	}
	for _, m := range numberRE.FindAllStringIndex(shown, -1) {
		lit(shown[last:m[0]])
		b.WriteString(numberRE.String())
		last = m[1]
	}
	lit(shown[last:])
	b.WriteString(`\s*$`)
	return regexp.MustCompile(b.String())
}

// matchShown checks that every shown line matches a line of the output,
// in order; it returns the first shown line that does not.
func matchShown(shown []string, output string) (missing string, ok bool) {
	out := strings.Split(output, "\n")
	j := 0
	for _, s := range shownLines(shown) {
		re := linePattern(s)
		for j < len(out) && !re.MatchString(out[j]) {
			j++
		}
		if j == len(out) {
			return s, false
		}
		j++
	}
	return "", true
}
