package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// capacityMetrics are the live-headroom gauges of targets with a
// capacity_check (docs/slo-search.md): what the last scheduled check
// found, when, and how close the server's own traffic runs to it. A
// target without a check, or whose check found no capacity, has none:
// a 0 would read as a server that can take nothing.
type capacityMetrics struct {
	capacity, lowerBound, timestamp, headroom *prometheus.GaugeVec
}

func newCapacityMetrics(f promauto.Factory) *capacityMetrics {
	return &capacityMetrics{
		capacity: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "capacity_requests_per_second",
			Help: "Highest request rate at which the target's SLO held in its last scheduled capacity check (capacity_check), in requests per second, as the search's answer gives it; absent until a check gives one. When servingprobe_capacity_lower_bound is 1 the search stopped at one of its limits before the SLO broke, and the capacity is at least this.",
		}, []string{labelTarget}),
		lowerBound: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "capacity_lower_bound",
			Help: "1 when servingprobe_capacity_requests_per_second is only a lower bound (a limit of ours capped the last check's search before its SLO broke, as its answer's bounded_by names: the request rate or concurrency limit, slo_max, slo_max_points, the budget, the prompt count or the memory budget), 0 when the check bracketed the capacity.",
		}, []string{labelTarget}),
		timestamp: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "capacity_check_timestamp_seconds",
			Help: "Unix time in seconds at which the target's capacity check that gave servingprobe_capacity_requests_per_second ended; time() minus it is the capacity's age.",
		}, []string{labelTarget}),
		headroom: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "capacity_headroom_ratio",
			Help: "1 minus the server's completed-request rate (its own counter, such as vllm:request_success_total, over the last minute, every client's traffic included) divided by servingprobe_capacity_requests_per_second; below 0 when the server serves more than the capacity. Absent when the server states no completed-request counter (llama.cpp), while a bench window runs on the target, and before a check gave a capacity.",
		}, []string{labelTarget}),
	}
}

// CapacityChecked records a capacity check of target that ended at end
// with a capacity (req/s); lowerBound says the capacity is only a lower
// bound. A check that gave no capacity is not recorded: the last one
// that did stands, and its timestamp says how old it is.
func (m *Metrics) CapacityChecked(target string, end time.Time, capacity float64, lowerBound bool) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if _, ok := m.series.targets[target]; !ok {
		return
	}
	c := m.capacity
	c.capacity.WithLabelValues(target).Set(capacity)
	lb := 0.0
	if lowerBound {
		lb = 1
	}
	c.lowerBound.WithLabelValues(target).Set(lb)
	c.timestamp.WithLabelValues(target).Set(unixSeconds(end))
}

// SetHeadroom sets target's headroom ratio; ok false removes it, for a
// server that states no completed-request counter or a rate that cannot
// be read now.
func (m *Metrics) SetHeadroom(target string, ratio float64, ok bool) {
	m.series.mu.RLock()
	defer m.series.mu.RUnlock()
	if _, known := m.series.targets[target]; !known {
		return
	}
	if !ok {
		m.capacity.headroom.DeleteLabelValues(target)
		return
	}
	m.capacity.headroom.WithLabelValues(target).Set(ratio)
}

// ForgetCapacity removes target's capacity gauges, for a capacity_check
// that a reload removed while the target stays: a capacity no check will
// renew must not stand as the target's.
func (m *Metrics) ForgetCapacity(target string) {
	c := m.capacity
	for _, g := range []*prometheus.GaugeVec{c.capacity, c.lowerBound, c.timestamp, c.headroom} {
		g.DeleteLabelValues(target)
	}
}
