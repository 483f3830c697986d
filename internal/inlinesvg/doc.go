// Package inlinesvg draws the small inline charts of the daemon's landing
// page (a sparkline, a strip of outcomes) as SVG text. It stands apart from
// report, whose charts need a run's summary, so that the daemon links
// neither report nor bench: it imports only the standard library.
package inlinesvg
