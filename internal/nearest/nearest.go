// Package nearest suggests, for a mistyped name, the known name it most
// likely meant: "did you mean --num-prompts?" for --num-promtps.
package nearest

// Name returns the name of known nearest to got, counting an insertion,
// a deletion, a substitution or a swap of two neighbouring characters as
// one edit (the optimal string alignment distance), if it is near enough
// to be a typo: one edit for a name of up to 4 characters, two for
// longer ones, and never the whole name. The first of equally near names
// wins; "" when none is near enough.
func Name(got string, known []string) string {
	limit := 1
	if len([]rune(got)) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := distance(got, k); d < bestD && d < len([]rune(k)) {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance of ra[:i] and rb[:j]; three rows suffice.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
