//go:build !race

package datasets

const RaceEnabled = false
