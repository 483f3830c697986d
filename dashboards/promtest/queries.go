package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Kind says where a dashboard query comes from.
type Kind string

// Query kinds.
const (
	KindPanel      Kind = "panel"
	KindAnnotation Kind = "annotation"
	KindVariable   Kind = "variable"
)

// Query is one PromQL expression of a dashboard.
type Query struct {
	Dashboard string // file name
	Kind      Kind
	Title     string // panel title, annotation or variable name
	RefID     string
	Expr      string // as written, with Grafana variables
}

// Name identifies the query in reports.
func (q Query) Name() string {
	if q.RefID != "" {
		return fmt.Sprintf("%s: %s %q [%s]", q.Dashboard, q.Kind, q.Title, q.RefID)
	}
	return fmt.Sprintf("%s: %s %q", q.Dashboard, q.Kind, q.Title)
}

type dashboardJSON struct {
	Annotations struct {
		List []struct {
			BuiltIn int    `json:"builtIn"`
			Name    string `json:"name"`
			Expr    string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panelJSON struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []panelJSON `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// DashboardQueries returns every query of the named dashboards in fsys:
// panel targets (inside collapsed rows too), annotation queries, and query
// variables. label_values(selector, label) becomes count by (label)
// (selector), which is empty exactly when the variable has no values.
func DashboardQueries(fsys fs.FS, names ...string) ([]Query, error) {
	var out []Query
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var d dashboardJSON
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var walk func([]panelJSON)
		walk = func(ps []panelJSON) {
			for _, p := range ps {
				for _, t := range p.Targets {
					out = append(out, Query{Dashboard: name, Kind: KindPanel, Title: p.Title, RefID: t.RefID, Expr: t.Expr})
				}
				walk(p.Panels)
			}
		}
		walk(d.Panels)
		for _, a := range d.Annotations.List {
			if a.BuiltIn == 0 && a.Expr != "" {
				out = append(out, Query{Dashboard: name, Kind: KindAnnotation, Title: a.Name, Expr: a.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			qs, _ := v.Query.(string)
			if m, ok := v.Query.(map[string]any); ok {
				qs, _ = m["query"].(string)
			}
			m := labelValues.FindStringSubmatch(strings.TrimSpace(qs))
			if m == nil {
				return nil, fmt.Errorf("%s: variable %s: unsupported query %q", name, v.Name, qs)
			}
			out = append(out, Query{Dashboard: name, Kind: KindVariable, Title: v.Name, Expr: fmt.Sprintf("count by (%s) (%s)", m[2], m[1])})
		}
	}
	return out, nil
}

var grafanaVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// Substitute replaces Grafana variables ($name, ${name}, ${name:fmt}) with
// vars[name]. An unknown variable is an error, so a new variable cannot slip
// past the checks as literal text.
func Substitute(expr string, vars map[string]string) (string, error) {
	var missing []string
	out := grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		sm := grafanaVar.FindStringSubmatch(m)
		name := sm[1] + sm[2]
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return v
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("unknown Grafana variables %v in %q", missing, expr)
	}
	return out, nil
}

// Vars returns substitutions that select everything: ".*" for every
// dashboard variable, rateInterval for $__rate_interval and $__interval, and
// rng for $__range. Tests with a 1s scrape interval pass short windows.
func Vars(rateInterval, rng string) map[string]string {
	return map[string]string{
		"__rate_interval": rateInterval,
		"__interval":      rateInterval,
		"__range":         rng,
		"datasource":      "prometheus",
		"job":             ".*",
		"target":          ".*",
		"module":          ".*",
		"model":           ".*",
		"server_job":      ".*",
		"server_model":    ".*",
	}
}

// Check is the outcome of one dashboard query.
type Check struct {
	Query
	Substituted string
	Result      Result
	Err         error
}

// CheckQueries runs every query as a range query over [start, end], as
// Grafana would, and returns one Check per query in order.
func (s *Server) CheckQueries(ctx context.Context, qs []Query, vars map[string]string, start, end time.Time, step time.Duration) []Check {
	out := make([]Check, 0, len(qs))
	for _, q := range qs {
		c := Check{Query: q}
		c.Substituted, c.Err = Substitute(q.Expr, vars)
		if c.Err == nil {
			c.Result, c.Err = s.QueryRange(ctx, c.Substituted, start, end, step)
		}
		out = append(out, c)
	}
	return out
}
