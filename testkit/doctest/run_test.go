package doctest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repoRoot is where the pages and the commands' relative paths start.
const repoRoot = "../.."

// pages are the files whose commands must run: the front page and the
// reference.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

func loadBlocks(t *testing.T, path string) []*block {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(repoRoot, path)
	return parseBlocks(rel, string(b))
}

// TestEveryCommandBlockHasADirective: a command a page shows is either run
// by TestDocumentedCommands or says why not.
func TestEveryCommandBlockHasADirective(t *testing.T) {
	t.Parallel()
	n := 0
	for _, p := range pages(t) {
		for _, b := range loadBlocks(t, p) {
			n++
			switch {
			case b.dirErr != nil:
				t.Errorf("%s: %v", b.where(), b.dirErr)
			case b.dir == nil:
				t.Errorf("%s: a %s block without a <!-- docs-test: budget=... --> or <!-- docs-test: skip=\"why\" --> line above it", b.where(), b.lang)
			}
			if b.dir != nil && b.dir.skip != "" && !b.saysNotRun() {
				t.Errorf("%s: a skipped block must say \"not run\" where a reader sees it (the paragraph above, or a comment in the block): %s", b.where(), b.dir.skip)
			}
			for _, err := range b.parseErrs {
				t.Errorf("%s: %v", b.where(), err)
			}
			if b.lang != "console" && b.dir != nil && b.dir.skip == "" && regexp.MustCompile(`&\s*$`).MatchString(b.script) {
				t.Errorf("%s: background commands go in a console block, where the test manages them", b.where())
			}
		}
	}
	if n == 0 {
		t.Fatal("no command blocks found: the pages moved?")
	}
}

// TestDocumentedCommands runs every page's commands, in order, against what
// the page itself starts, and checks each one's exit status, budget and
// output.
func TestDocumentedCommands(t *testing.T) {
	bin := buildBinary(t)
	// The commands write files (bench records, reports, a daemon's
	// results): into each page's scratch directory, never the work tree.
	before := topLevel(t)
	t.Cleanup(func() {
		for name := range topLevel(t) {
			if !before[name] {
				t.Errorf("%s appeared at the top of the work tree while the pages ran: a command wrote outside its scratch directory", name)
			}
		}
	})
	for _, p := range pages(t) {
		blocks := loadBlocks(t, p)
		run := 0
		for _, b := range blocks {
			if b.dir != nil && b.dir.skip == "" {
				run++
			}
		}
		if run == 0 {
			continue
		}
		rel, _ := filepath.Rel(repoRoot, p)
		t.Run(rel, func(t *testing.T) {
			s := newSession(t, bin)
			for _, b := range blocks {
				if b.dir == nil || b.dirErr != nil || b.dir.skip != "" {
					continue // TestEveryCommandBlockHasADirective reports the first two
				}
				s.runBlock(t, b)
			}
		})
	}
}

func buildBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "servingprobe")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/servingprobe")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// session is one page's run: its scratch directory, its port map and the
// processes its background commands started.
type session struct {
	t     *testing.T
	dir   string
	env   []string
	ports map[string]string // the page's port -> the free port used
}

func newSession(t *testing.T, binDir string) *session {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range sourceEntries(t, root) {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		// Nothing a page runs may reach the internet: the simulator names
		// its tokenizer, and a hub lookup would be a bug in the page.
		"HF_HUB_OFFLINE=1",
		"HOME="+t.TempDir(),
	)
	return &session{t: t, dir: dir, env: env, ports: map[string]string{}}
}

// sourceEntries returns the repository's top-level entries that git
// tracks: what the pages' commands read (examples/, tokenizer/testdata, the
// source). An untracked entry is left out, so that a command writing
// through it (a daemon's results/ under the scratch directory, say) cannot
// reach a directory of the work tree that a developer's own runs created.
// Outside a git checkout every entry is linked.
func sourceEntries(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	var names []string
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Logf("not a git checkout (%v): linking every top-level entry", err)
		ents, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	for f := range strings.SplitSeq(string(out), "\x00") {
		name, _, _ := strings.Cut(f, "/")
		if name == "" || seen[name] {
			continue
		}
		// A tracked file deleted in the work tree (a git rm not yet
		// committed) is not there to link.
		if _, err := os.Lstat(filepath.Join(root, name)); err != nil {
			continue
		}
		seen[name] = true
		names = append(names, name)
	}
	return names
}

// topLevel returns the names at the top of the work tree.
func topLevel(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names
}

var (
	goRunRE  = regexp.MustCompile(`\bgo run \./cmd/servingprobe\b`)
	hostPort = regexp.MustCompile(`\b(127\.0\.0\.1|localhost):(\d{2,5})\b`)
	portFlag = regexp.MustCompile(`(--port[ =])(\d{2,5})\b`)
	listenRE = regexp.MustCompile(`--web\.listen-address[ =]\S*:(\d+)`)
	serveRE  = regexp.MustCompile(`^servingprobe serve\b`)
)

// port returns the free port standing for the page's port p.
func (s *session) port(p string) string {
	if q, ok := s.ports[p]; ok {
		return q
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	q := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	s.ports[p] = q
	return q
}

// rewrite makes the three changes the package documentation lists, and
// no other.
func (s *session) rewrite(cmd string, background bool) string {
	cmd = goRunRE.ReplaceAllString(cmd, "servingprobe")
	cmd = hostPort.ReplaceAllStringFunc(cmd, func(m string) string {
		sm := hostPort.FindStringSubmatch(m)
		return sm[1] + ":" + s.port(sm[2])
	})
	cmd = portFlag.ReplaceAllStringFunc(cmd, func(m string) string {
		sm := portFlag.FindStringSubmatch(m)
		return sm[1] + s.port(sm[2])
	})
	if background && serveRE.MatchString(cmd) && !listenRE.MatchString(cmd) {
		cmd += " --web.listen-address=127.0.0.1:" + s.port("9775")
	}
	return cmd
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (s *session) command(ctx context.Context, script string, out *syncBuffer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that a pipeline or a child is stopped with
	// it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (s *session) runBlock(t *testing.T, b *block) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), b.dir.budget)
	defer cancel()
	start := time.Now()
	var all strings.Builder
	if b.lang != "console" {
		out := &syncBuffer{}
		script := "set -eo pipefail\n" + s.rewrite(b.script, false)
		if err := s.command(ctx, script, out).Run(); err != nil {
			t.Fatalf("%s: %v (budget %v)\nscript:\n%s\noutput:\n%s", b.where(), err, b.dir.budget, script, out)
		}
		all.WriteString(out.String())
	}
	for _, c := range b.commands {
		text := s.rewrite(c.text, c.background)
		if c.background {
			s.startBackground(ctx, t, b, c, text)
			continue
		}
		out := &syncBuffer{}
		err := s.command(ctx, "set -o pipefail\n"+text, out).Run()
		if ctx.Err() != nil {
			t.Fatalf("%s: line %d: past the block's budget of %v: %s\noutput:\n%s", b.file, c.line, b.dir.budget, text, out)
		}
		if err != nil {
			t.Fatalf("%s: line %d: %v: %s\noutput:\n%s", b.file, c.line, err, text, out)
		}
		if len(b.dir.expects) == 0 {
			if miss, ok := matchShown(c.shown, out.String()); !ok {
				t.Errorf("%s: line %d: the page shows %q, which the output lacks: %s\noutput:\n%s", b.file, c.line, miss, text, out)
			}
		}
		all.WriteString(out.String())
	}
	for _, re := range b.dir.expects {
		if !re.MatchString(all.String()) {
			t.Errorf("%s: output does not match expect=%q\noutput:\n%s", b.where(), re, all.String())
		}
	}
	t.Logf("%s: %v of a %v budget", b.where(), time.Since(start).Round(100*time.Millisecond), b.dir.budget)
}

// startBackground starts a command that lives until the page's end and
// returns once its listen port accepts connections.
func (s *session) startBackground(ctx context.Context, t *testing.T, b *block, c command, text string) {
	t.Helper()
	m := listenRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: line %d: a background command must name its --web.listen-address, so the test can wait for it: %s", b.file, c.line, text)
	}
	addr := "127.0.0.1:" + m[1]
	out := &syncBuffer{}
	// Not bound to the block's context: it outlives the block.
	cmd := s.command(context.Background(), "exec "+text, out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("%s: line %d: background output:\n%s", b.file, c.line, out)
		}
	})
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("%s: line %d: exited before listening (%v): %s\noutput:\n%s", b.file, c.line, err, text, out)
		case <-ctx.Done():
			t.Fatalf("%s: line %d: not listening on %s within the block's budget: %s\noutput:\n%s", b.file, c.line, addr, text, out)
		case <-tick.C:
		}
	}
}
