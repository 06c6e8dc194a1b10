// Command mesh-loadgen is the load generator process grpc_resilience_mesh/loadgen/in_process.py starts when `make peers`
// has built it: the Go twin of grpc_resilience_mesh/loadgen/generator.py, speaking the same line protocol
// (grpc_resilience_mesh/loadgen/protocol.py). A JSON Plan per line on stdin; `R [records]` batches and one
// `E {elapsed_s, cpu_s}` line per plan on stdout; a `stop` line, or EOF, ends the current
// plan early; plans run one after another on one process.
//
// It exists because the Python generator sits at grpc.aio's own floor of CPU per call, above
// the issue 16 budget (10% of the mesh's CPU). This one does per call what that one does:
// requests serialised before the load (protowire, no generated code), one ClientConn carrying
// raw bytes, and per call only a deadline, the timing and a record.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Plan is grpc_resilience_mesh/loadgen/protocol.py's Plan; absent fields keep that dataclass's defaults.
type Plan struct {
	Target        string    `json:"target"`
	Requests      []Request `json:"requests"`
	Concurrency   int       `json:"concurrency"`
	RatePerS      *float64  `json:"rate_per_s"` // nil: closed loop
	ThinkS        float64   `json:"think_s"`
	TimeoutS      float64   `json:"timeout_s"`
	MaxDurationS  float64   `json:"max_duration_s"`
	ClientRetries int       `json:"client_retries"`
	APIKey        *string   `json:"api_key"`
	BatchS        float64   `json:"batch_s"`
}

// Request is one call, chosen by the runner: [rpc, user, amount_cents, key, trace_id, span_id].
type Request struct {
	RPC         string
	User        int64
	AmountCents int64
	Key         string
	TraceID     string
	SpanID      string
}

func (r *Request) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	fields := []any{&r.RPC, &r.User, &r.AmountCents, &r.Key, &r.TraceID, &r.SpanID}
	if len(raw) < 2 || len(raw) > len(fields) {
		return fmt.Errorf("a request is [rpc, user, amount_cents, key, trace_id, span_id], not %.80s", data)
	}
	for i, value := range raw {
		if err := json.Unmarshal(value, fields[i]); err != nil {
			return fmt.Errorf("request %.80s: %w", data, err)
		}
	}
	if r.RPC != "home" && r.RPC != "checkout" {
		return fmt.Errorf("request %.80s: rpc must be home or checkout", data)
	}
	return nil
}

func parsePlan(line string) (*Plan, error) {
	plan := &Plan{Concurrency: 1, TimeoutS: 2.0, MaxDurationS: 120.0, BatchS: 0.2}
	if err := json.Unmarshal([]byte(line), plan); err != nil {
		return nil, fmt.Errorf("a plan line must be grpc_resilience_mesh/loadgen/protocol.py's Plan: %w", err)
	}
	if plan.Concurrency < 0 {
		return nil, fmt.Errorf("concurrency must be >= 0, not %d", plan.Concurrency)
	}
	if plan.RatePerS != nil && *plan.RatePerS <= 0 {
		return nil, fmt.Errorf("rate_per_s must be > 0, not %v", *plan.RatePerS)
	}
	return plan, nil
}

// record is one finished request, sent as a JSON list in RECORD_FIELDS order: index,
// started_s, latency_s, code, degraded, status, charge_id, pushback_ms (or null), detail,
// fate (the resilience-fate trailer, "" when the answer carried none).
type record struct {
	index    int
	started  time.Time
	latency  time.Duration
	code     string
	degraded string
	status   string
	chargeID string
	pushback *int
	detail   string
	fate     string
}

// monotonic turns Go's monotonic readings into seconds of CLOCK_MONOTONIC, the clock of
// Python's time.perf_counter(), so the runner can compare started_s with its own times.
type monotonic struct {
	base float64
	at   time.Time
}

func newMonotonic() monotonic {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		fatal("CLOCK_MONOTONIC: %v", err)
	}
	return monotonic{float64(ts.Sec) + float64(ts.Nsec)/1e9, time.Now()}
}

func (m monotonic) seconds(t time.Time) float64 { return m.base + t.Sub(m.at).Seconds() }

// cpuSeconds is this process's utime+stime (all threads), as grpc_resilience_mesh/loadgen/procstat.py reads it.
func cpuSeconds() *float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return nil
	}
	used := time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
	return &used
}

// output writes whole lines to stdout; a runner that went away ends the process.
type output struct {
	mu    sync.Mutex
	w     *bufio.Writer
	clock monotonic
}

func (o *output) write(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(line)
	if err := o.w.Flush(); err != nil {
		os.Exit(1)
	}
}

func (o *output) records(batch []record) {
	line := append(make([]byte, 0, 64+len(batch)*96), "R ["...)
	for i := range batch {
		if i > 0 {
			line = append(line, ',')
		}
		line = o.appendRecord(line, &batch[i])
	}
	o.write(append(line, "]\n"...))
}

func (o *output) appendRecord(b []byte, r *record) []byte {
	b = strconv.AppendInt(append(b, '['), int64(r.index), 10)
	b = strconv.AppendFloat(append(b, ','), o.clock.seconds(r.started), 'g', -1, 64)
	b = strconv.AppendFloat(append(b, ','), r.latency.Seconds(), 'g', -1, 64)
	for _, s := range []string{r.code, r.degraded, r.status, r.chargeID} {
		b = appendJSONString(append(b, ','), s)
	}
	if r.pushback == nil {
		b = append(b, ",null"...)
	} else {
		b = strconv.AppendInt(append(b, ','), int64(*r.pushback), 10)
	}
	b = appendJSONString(append(b, ','), r.detail)
	return append(appendJSONString(append(b, ','), r.fate), ']')
}

func (o *output) end(elapsed time.Duration, cpu *float64) {
	line := strconv.AppendFloat([]byte(`E {"elapsed_s": `), elapsed.Seconds(), 'g', -1, 64)
	if cpu == nil {
		line = append(line, `, "cpu_s": null`...)
	} else {
		line = strconv.AppendFloat(append(line, `, "cpu_s": `...), *cpu, 'g', -1, 64)
	}
	o.write(append(line, "}\n"...))
}

// appendJSONString quotes plain ASCII directly and leaves anything else to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			quoted, _ := json.Marshal(s)
			return append(b, quoted...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mesh-loadgen: "+format+"\n", args...)
	os.Exit(2)
}

// readLines sends stdin's lines (plans can be megabytes long) and closes at EOF.
func readLines(in io.Reader, lines chan<- string) {
	reader := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := reader.ReadString('\n')
		if line != "" {
			lines <- line
		}
		if err != nil {
			close(lines)
			return
		}
	}
}

func main() {
	// One P: a few thousand calls/s need no parallelism, and idle Ps woken for each answer
	// cost more than the calls (measured: about 25% of its CPU per call).
	runtime.GOMAXPROCS(1)
	out := &output{w: bufio.NewWriterSize(os.Stdout, 1<<16), clock: newMonotonic()}
	lines := make(chan string)
	go readLines(os.Stdin, lines)
	var carried *string // a line read while a plan ended: the next input
	for {
		var line string
		if carried != nil {
			line, carried = *carried, nil
		} else if next, ok := <-lines; ok {
			line = next
		} else {
			return
		}
		text := strings.TrimSpace(line)
		if text == "stop" || text == "" { // a stop that came after its plan ended
			continue
		}
		plan, err := parsePlan(text)
		if err != nil {
			fatal("%v", err)
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			generate(plan, out, stop)
			close(done)
		}()
		select {
		case <-done:
		case next, ok := <-lines:
			if !ok || strings.TrimSpace(next) == "stop" { // the runner wants the load to end
				close(stop)
			} else {
				// The next plan, sent once this one's end line was out: it waits its turn
				// (taken for a stop while this plan was closing, it was lost, and the runner
				// waited for its outcomes forever).
				carried = &next
			}
			<-done
			if !ok {
				return
			}
		}
	}
}
