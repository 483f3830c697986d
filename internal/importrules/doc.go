// Package importrules holds the test that enforces the direction of
// imports between servingprobe's packages (the table in its test, from
// the style guide's package rules). It has no code of its own.
package importrules
