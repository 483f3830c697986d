package mixin

// A minimal typed subset of the Grafana dashboard model (schemaVersion 39):
// enough to render plain JSON that Grafana imports without migration noise,
// without depending on a Grafana SDK.

// DS is a datasource reference. Every panel, query and annotation points at
// the ${datasource} variable so users pick their Prometheus on import.
type DS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

var promDS = &DS{Type: "prometheus", UID: "${datasource}"}

// Dashboard is the top-level Grafana dashboard object.
type Dashboard struct {
	Annotations struct {
		List []Annotation `json:"list"`
	} `json:"annotations"`
	Description   string   `json:"description"`
	Editable      bool     `json:"editable"`
	GraphTooltip  int      `json:"graphTooltip"`
	Links         []Link   `json:"links"`
	Panels        []*Panel `json:"panels"`
	Refresh       string   `json:"refresh"`
	SchemaVersion int      `json:"schemaVersion"`
	Tags          []string `json:"tags"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Time     TimeRange `json:"time"`
	Timezone string    `json:"timezone"`
	Title    string    `json:"title"`
	UID      string    `json:"uid"`
	Version  int       `json:"version"`
}

// Link is a dashboard link.
type Link struct {
	AsDropdown  bool     `json:"asDropdown"`
	IncludeVars bool     `json:"includeVars"`
	KeepTime    bool     `json:"keepTime"`
	Tags        []string `json:"tags"`
	Title       string   `json:"title"`
	Type        string   `json:"type"`
}

// Annotation is a dashboard annotation query.
type Annotation struct {
	BuiltIn         int    `json:"builtIn,omitempty"`
	Datasource      *DS    `json:"datasource"`
	Enable          bool   `json:"enable"`
	Expr            string `json:"expr,omitempty"`
	Hide            bool   `json:"hide"`
	IconColor       string `json:"iconColor"`
	Name            string `json:"name"`
	Step            string `json:"step,omitempty"`
	TagKeys         string `json:"tagKeys,omitempty"`
	TitleFormat     string `json:"titleFormat,omitempty"`
	Type            string `json:"type,omitempty"`
	UseValueForTime bool   `json:"useValueForTime,omitempty"`
}

// Variable is a templating variable.
type Variable struct {
	AllValue    string         `json:"allValue,omitempty"`
	Current     map[string]any `json:"current"`
	Datasource  *DS            `json:"datasource,omitempty"`
	Definition  string         `json:"definition,omitempty"`
	Description string         `json:"description,omitempty"`
	Hide        int            `json:"hide"`
	IncludeAll  bool           `json:"includeAll"`
	Label       string         `json:"label"`
	Multi       bool           `json:"multi"`
	Name        string         `json:"name"`
	Options     []any          `json:"options"`
	Query       string         `json:"query"`
	Refresh     int            `json:"refresh"`
	Regex       string         `json:"regex"`
	Sort        int            `json:"sort,omitempty"`
	Type        string         `json:"type"`
}

// GridPos places a panel on the 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Panel is a Grafana panel or row.
type Panel struct {
	Collapsed       *bool          `json:"collapsed,omitempty"`
	Datasource      *DS            `json:"datasource,omitempty"`
	Description     string         `json:"description,omitempty"`
	FieldConfig     *FieldConfig   `json:"fieldConfig,omitempty"`
	GridPos         GridPos        `json:"gridPos"`
	ID              int            `json:"id"`
	Interval        string         `json:"interval,omitempty"`
	Links           []PanelLink    `json:"links,omitempty"`
	Options         map[string]any `json:"options,omitempty"`
	Panels          []*Panel       `json:"panels,omitempty"`
	Repeat          string         `json:"repeat,omitempty"`
	RepeatDirection string         `json:"repeatDirection,omitempty"`
	Targets         []Target       `json:"targets,omitempty"`
	Title           string         `json:"title"`
	Transformations []any          `json:"transformations,omitempty"`
	Type            string         `json:"type"`
}

// PanelLink is a link in a panel's header menu: the runbook section that
// says what to do about what the panel shows.
type PanelLink struct {
	TargetBlank bool   `json:"targetBlank"`
	Title       string `json:"title"`
	URL         string `json:"url"`
}

// FieldConfig holds panel field defaults.
type FieldConfig struct {
	Defaults  FieldDefaults `json:"defaults"`
	Overrides []any         `json:"overrides"`
}

// FieldDefaults is the subset of field options the dashboards set.
type FieldDefaults struct {
	Color      map[string]any `json:"color,omitempty"`
	Custom     map[string]any `json:"custom,omitempty"`
	Decimals   *int           `json:"decimals,omitempty"`
	Mappings   []any          `json:"mappings"`
	Max        *float64       `json:"max,omitempty"`
	Min        *float64       `json:"min,omitempty"`
	Thresholds Thresholds     `json:"thresholds"`
	Unit       string         `json:"unit"`
}

// Thresholds are absolute threshold steps; the first step has a null value.
type Thresholds struct {
	Mode  string `json:"mode"`
	Steps []Step `json:"steps"`
}

// Step is one threshold step.
type Step struct {
	Color string   `json:"color"`
	Value *float64 `json:"value"`
}

// Target is a Prometheus query of a panel.
type Target struct {
	Datasource   *DS    `json:"datasource"`
	EditorMode   string `json:"editorMode"`
	Expr         string `json:"expr"`
	Format       string `json:"format"`
	Instant      bool   `json:"instant"`
	LegendFormat string `json:"legendFormat"`
	Range        bool   `json:"range"`
	RefID        string `json:"refId"`
}

// TimeRange is the default time range.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}
