// Package doctest runs every command the documentation shows, as written,
// so that README.md and docs/*.md cannot drift from what the binary does.
//
// The convention, which its test enforces:
//
//   - A command a reader is meant to type goes in a fenced block whose
//     language is console (a "$ " line is a command; a line ending in a
//     backslash continues it; the lines after it, up to the next "$ ", are
//     what it prints) or sh (the whole block is one script). No such block
//     may appear without a directive.
//   - The line right above the fence is the directive, an HTML comment, so
//     that a rendered page does not show it:
//     <!-- docs-test: budget=60s --> runs the block, which must finish
//     within the budget; <!-- docs-test: skip="why" --> does not run it, and
//     the reason (a real GPU server, a cluster) must be given, and since a
//     rendered page hides the directive, the paragraph above the block or a
//     comment in it must tell the reader it is "not run";
//     expect="regexp" (repeatable) checks the block's output for each
//     expression instead of checking the output shown, for output that is
//     expected to change in its details.
//   - The output a console block shows is checked line by line, in order,
//     each shown line against some later line of the real output, with any
//     number standing for any number and any run of spaces for any run;
//     a line "..." marks lines left out and matches nothing.
//   - A command ending in " &" is started in the background and lives until
//     the end of its page, so that later blocks can use the simulator or
//     daemon it starts; the test waits for its listen port to accept.
//
// The test changes the commands in three ways only: "go run
// ./cmd/servingprobe" becomes the binary it built once (the same program,
// without a build per command); every loopback port a page names becomes a
// free port, the same one throughout the page (so that pages can run beside
// other users of the machine); and a background "serve" that names no
// listen address gets the one the documentation says it uses (127.0.0.1:9775
// mapped like the others). Commands run in a scratch directory that links
// the top-level entries git tracks, so that paths such as
// examples/servingprobe.yml resolve and the files they write (bench
// records, reports, a daemon's results/) are thrown away; nothing a page
// runs may add an entry to the top of the work tree, which the test
// checks.
package doctest
