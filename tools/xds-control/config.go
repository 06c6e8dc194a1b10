package main

// The control plane's input: the JSON file the mesh's launcher writes (grpc_resilience_mesh.launch.xds).
// Per node (the caller's service name, its bootstrap's node id) per dependency (the xds:///
// target's name): where the replicas are, and the part of the mesh's edge policy xDS can say.

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"

	"google.golang.org/grpc/codes"
)

// Config is the whole file: {"nodes": {"gateway": {"payment": {...}}}}.
type Config struct {
	Nodes map[string]map[string]Edge `json:"nodes"`
}

// Edge is one caller's view of one dependency.
type Edge struct {
	Endpoints   []string `json:"endpoints"`
	Retry       *Retry   `json:"retry,omitempty"`
	MaxRequests uint32   `json:"max_requests,omitempty"`
	Outlier     *Outlier `json:"outlier,omitempty"`
	TimeoutS    float64  `json:"timeout_s,omitempty"`
	Faults      []Fault  `json:"faults,omitempty"`
}

// Retry is A44's RetryPolicy: attempts in all (gRPC caps them at 5), backoff, codes.
type Retry struct {
	MaxAttempts    uint32       `json:"max_attempts"`
	BaseBackoffS   float64      `json:"base_backoff_s"`
	MaxBackoffS    float64      `json:"max_backoff_s"`
	RetryableCodes []codes.Code `json:"retryable_codes"`
}

// Outlier is A50's failure_percentage ejection (success-rate ejection is left off).
type Outlier struct {
	IntervalS         float64 `json:"interval_s"`
	BaseEjectionS     float64 `json:"base_ejection_s"`
	MaxEjectionS      float64 `json:"max_ejection_s"`
	MaxEjectedPercent uint32  `json:"max_ejected_percent"`
	FailurePercentage uint32  `json:"failure_percentage"`
	RequestVolume     uint32  `json:"request_volume"`
	MinimumHosts      uint32  `json:"minimum_hosts"`
}

// Fault is A33's HTTPFault on every call of the edge, or on one method's path only.
type Fault struct {
	Path         string     `json:"path,omitempty"` // "/mesh.v1.Recommendation/Recommend"
	AbortPercent float64    `json:"abort_percent,omitempty"`
	AbortCode    codes.Code `json:"abort_code,omitempty"`
	DelayPercent float64    `json:"delay_percent,omitempty"`
	DelayS       float64    `json:"delay_s,omitempty"`
}

// retryOn names the codes A44 retries on; gRPC ignores any other retry_on value.
var retryOn = map[codes.Code]string{
	codes.Canceled:          "cancelled",
	codes.DeadlineExceeded:  "deadline-exceeded",
	codes.Internal:          "internal",
	codes.ResourceExhausted: "resource-exhausted",
	codes.Unavailable:       "unavailable",
}

// ParseConfig reads and checks the file's bytes: an error names the node, edge and field.
func ParseConfig(raw []byte) (*Config, error) {
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("not the control plane's JSON: %w", err)
	}
	for _, node := range sortedKeys(cfg.Nodes) {
		for _, dep := range sortedKeys(cfg.Nodes[node]) {
			if err := cfg.Nodes[node][dep].check(); err != nil {
				return nil, fmt.Errorf("nodes.%s.%s: %w", node, dep, err)
			}
		}
	}
	return &cfg, nil
}

func (e Edge) check() error {
	if len(e.Endpoints) == 0 {
		return fmt.Errorf("endpoints: at least one HOST:PORT")
	}
	for _, ep := range e.Endpoints {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			return fmt.Errorf("endpoints: %q is not HOST:PORT", ep)
		}
	}
	if r := e.Retry; r != nil {
		if r.MaxAttempts < 2 || r.MaxAttempts > 5 {
			return fmt.Errorf("retry.max_attempts: %d is not in [2, 5]", r.MaxAttempts)
		}
		if r.BaseBackoffS <= 0 || r.MaxBackoffS < r.BaseBackoffS {
			return fmt.Errorf("retry: need 0 < base_backoff_s <= max_backoff_s")
		}
		for _, c := range r.RetryableCodes {
			if _, ok := retryOn[c]; !ok {
				return fmt.Errorf("retry.retryable_codes: gRPC's xDS retry cannot retry %s", c)
			}
		}
	}
	for i, f := range e.Faults {
		if f.AbortPercent < 0 || f.AbortPercent > 100 || f.DelayPercent < 0 || f.DelayPercent > 100 {
			return fmt.Errorf("faults[%d]: percentages are in [0, 100]", i)
		}
		if f.AbortPercent > 0 && f.AbortCode == codes.OK {
			return fmt.Errorf("faults[%d].abort_code: an abort needs a code other than OK", i)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
