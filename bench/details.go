package bench

import "time"

// detailRow is one request's entry in each array of the details.
type detailRow struct {
	inputLen, outputLen int
	ttft                float64
	times               [4]time.Time // scheduled, sent, first token, end
	// itls are the inter-token samples of a row read back from the spool;
	// a row being added gives them as an itlRange.
	itls               []float64
	text, err, outcome string
	server             *ServerTiming // nil when the server stated none
}

// noDetails keeps no details (no --output-details).
type noDetails struct{}

func (noDetails) add(int, detailRow, itlRange) {}

func (noDetails) fill(*Summary, time.Time) {}

// memoryDetails keeps the details in memory, in Summary.Details.
type memoryDetails struct {
	d     Details
	times [][4]time.Time // made relative in fill, once the run's start is known
}

func (m *memoryDetails) add(i int, row detailRow, gaps itlRange) {
	d := &m.d
	for len(d.InputLens) <= i {
		d.InputLens = append(d.InputLens, 0)
		d.OutputLens = append(d.OutputLens, 0)
		d.TTFTs = append(d.TTFTs, 0)
		d.ITLs = append(d.ITLs, nil)
		d.GeneratedTexts = append(d.GeneratedTexts, "")
		d.Errors = append(d.Errors, "")
		d.Outcomes = append(d.Outcomes, "")
		m.times = append(m.times, [4]time.Time{})
	}
	m.times[i] = row.times
	d.Outcomes[i] = row.outcome
	d.InputLens[i] = row.inputLen
	d.OutputLens[i] = row.outputLen
	d.TTFTs[i] = row.ttft
	d.ITLs[i] = gaps.values()
	d.GeneratedTexts[i] = row.text
	d.Errors[i] = row.err
	if row.server != nil {
		// The array is made by the first request that states timings,
		// so that a run against a server that states none has none.
		for len(d.ServerTimings) <= i {
			d.ServerTimings = append(d.ServerTimings, nil)
		}
		d.ServerTimings[i] = row.server
	}
}

func (m *memoryDetails) fill(s *Summary, start time.Time) {
	d := m.d
	n := len(m.times)
	d.ScheduledTimes, d.SentTimes, d.FirstTokenTimes, d.EndTimes = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, ts := range m.times {
		d.ScheduledTimes[i], d.SentTimes[i], d.FirstTokenTimes[i], d.EndTimes[i] = relTime(ts[0], start), relTime(ts[1], start), relTime(ts[2], start), relTime(ts[3], start)
	}
	for d.ServerTimings != nil && len(d.ServerTimings) < n {
		d.ServerTimings = append(d.ServerTimings, nil)
	}
	s.Details = &d
}

// relTime is t in seconds from start, -1 when either is unknown.
func relTime(t, start time.Time) float64 {
	if t.IsZero() || start.IsZero() {
		return -1
	}
	return t.Sub(start).Seconds()
}
