package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// tick: an open loop wakes at most this often and starts every call due by then (as in the
// Python generator: a wake-up per call would cost as much CPU as the call).
const tick = 10 * time.Millisecond

var methods = map[string]string{"home": "/mesh.v1.Gateway/GetHome", "checkout": "/mesh.v1.Gateway/Checkout"}

// Field numbers of protos/mesh/v1/gateway.proto; tests/unit/tools/test_loadgen_source.py
// checks each `proto:` name against the generated descriptors.
const (
	fieldUserID         = 1 // proto: GetHomeRequest.user_id CheckoutRequest.user_id
	fieldAmountCents    = 2 // proto: CheckoutRequest.amount_cents
	fieldCurrency       = 3 // proto: CheckoutRequest.currency
	fieldIdempotencyKey = 4 // proto: CheckoutRequest.idempotency_key
	fieldDegraded       = 3 // proto: GetHomeResponse.degraded
	fieldPart           = 1 // proto: Degradation.part
	fieldServedBy       = 2 // proto: Degradation.served_by
	fieldChargeID       = 1 // proto: CheckoutResponse.charge_id
	fieldStatus         = 2 // proto: CheckoutResponse.status
)

// chargeStatus: payment.proto's ChargeStatus names without their CHARGE_STATUS_ prefix.
var chargeStatus = []string{"UNSPECIFIED", "SUCCEEDED", "DECLINED", "PENDING"}

// codeNames: grpc.StatusCode's names (what a record carries), by code number.
var codeNames = []string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// retryable mirrors grpc_aio_resilience.classify.RETRYABLE_CODES (the test above checks it).
var retryable = map[string]bool{"UNAVAILABLE": true, "RESOURCE_EXHAUSTED": true}

// pushbackKey is the server's retry hint (grpc_aio_resilience.errors.PUSHBACK_KEY).
const pushbackKey = "grpc-retry-pushback-ms"

// timeoutKey carries each call's deadline in ms (grpc_aio_resilience.intake.TIMEOUT_KEY).
const timeoutKey = "resilience-timeout-ms"

// serialise encodes GetHomeRequest or CheckoutRequest as protobuf would (defaults omitted).
func serialise(r Request) []byte {
	b := appendString(nil, fieldUserID, fmt.Sprintf("u-%04d", r.User)) // grpc_resilience_mesh.services.customers.user_id
	if r.RPC == "home" {
		return b
	}
	if r.AmountCents != 0 {
		b = protowire.AppendTag(b, fieldAmountCents, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(r.AmountCents))
	}
	b = appendString(b, fieldCurrency, "USD")
	return appendString(b, fieldIdempotencyKey, r.Key)
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, field, protowire.BytesType), s)
}

// eachField calls visit with every field of a message (varints as v, bytes as data).
func eachField(msg []byte, visit func(field protowire.Number, v uint64, data []byte)) error {
	for len(msg) > 0 {
		field, kind, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		switch kind {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return protowire.ParseError(m)
			}
			visit(field, v, nil)
			n = m
		case protowire.BytesType:
			data, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return protowire.ParseError(m)
			}
			visit(field, 0, data)
			n = m
		default:
			n = protowire.ConsumeFieldValue(field, kind, msg)
			if n < 0 {
				return protowire.ParseError(n)
			}
		}
		msg = msg[n:]
	}
	return nil
}

// replyFields reads an answer's (degraded parts "part:served_by,...", status, charge id).
func replyFields(rpc string, reply []byte) (degraded, state, chargeID string, err error) {
	if rpc == "home" {
		var parts []string
		var inner error
		err = eachField(reply, func(field protowire.Number, _ uint64, data []byte) {
			if field != fieldDegraded {
				return
			}
			var part, servedBy string
			if bad := eachField(data, func(f protowire.Number, _ uint64, s []byte) {
				if f == fieldPart {
					part = string(s)
				} else if f == fieldServedBy {
					servedBy = string(s)
				}
			}); bad != nil {
				inner = bad
			}
			parts = append(parts, part+":"+servedBy)
		})
		if err == nil {
			err = inner
		}
		return strings.Join(parts, ","), "", "", err
	}
	var number uint64
	err = eachField(reply, func(field protowire.Number, v uint64, data []byte) {
		if field == fieldStatus {
			number = v
		} else if field == fieldChargeID {
			chargeID = string(data)
		}
	})
	state = strconv.FormatUint(number, 10)
	if number < uint64(len(chargeStatus)) {
		state = chargeStatus[number]
	}
	return "", state, chargeID, err
}

// rawCodec hands the pre-serialised requests to gRPC as they are, and answers back as bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// load is one plan being sent.
type load struct {
	plan     *Plan
	conn     *grpc.ClientConn
	payloads [][]byte
	contexts []context.Context // each request's metadata
	timeout  time.Duration
	mu       sync.Mutex
	pending  []record
}

// once sends request i one time.
func (l *load) once(i int) record {
	rpc := l.plan.Requests[i].RPC
	ctx, cancel := context.WithTimeout(l.contexts[i], l.timeout)
	defer cancel()
	var reply []byte
	var trailer metadata.MD
	start := time.Now()
	err := l.conn.Invoke(ctx, methods[rpc], l.payloads[i], &reply, grpc.Trailer(&trailer))
	if err != nil {
		latency := time.Since(start)
		failed := status.Convert(err)
		detail := failed.Message()
		if failed.Code() == codes.DeadlineExceeded && ctx.Err() == context.DeadlineExceeded {
			detail = "Deadline Exceeded" // as grpc.aio words its own deadline
		}
		if runes := []rune(detail); len(runes) > 160 {
			detail = string(runes[:160])
		}
		code := codeName(failed.Code())
		return record{i, start, latency, code, "", "", "", pushback(trailer), detail, fate(trailer)}
	}
	latency := time.Since(start)
	degraded, state, chargeID, err := replyFields(rpc, reply)
	if err != nil {
		undecodable := "undecodable answer: " + err.Error()
		return record{i, start, latency, "INTERNAL", "", "", "", nil, undecodable, ""}
	}
	return record{i, start, latency, "OK", degraded, state, chargeID, nil, "", fate(trailer)}
}

// fate is the resilience-fate trailer (grpc_aio_resilience.fates.FATE_KEY), "" when there is none.
func fate(trailer metadata.MD) string {
	if values := trailer.Get("resilience-fate"); len(values) > 0 {
		return values[0]
	}
	return ""
}

// codeName is grpc.StatusCode's name; grpc.aio reads a code it does not know as UNKNOWN.
func codeName(code codes.Code) string {
	if int(code) < len(codeNames) {
		return codeNames[code]
	}
	return "UNKNOWN"
}

// pushback reads the server's hint in ms, as grpc_aio_resilience.classify.pushback_s does: absent
// is nil, negative or unparsable is -1 (do not retry).
func pushback(trailer metadata.MD) *int {
	values := trailer.Get(pushbackKey)
	if len(values) == 0 {
		return nil
	}
	ms, err := strconv.Atoi(strings.TrimSpace(values[0]))
	if err != nil || ms < 0 {
		ms = -1
	}
	return &ms
}

// one sends request i as a well-behaved client: a retryable failure is tried again after the
// server's pushback (or 0.2 s) up to client_retries times, never after a pushback of -1; the
// record is the user's view, from the first try to the last answer.
func (l *load) one(i int) {
	first := l.once(i)
	last := first
	for try := 0; try < l.plan.ClientRetries; try++ {
		if !retryable[last.code] || (last.pushback != nil && *last.pushback < 0) {
			break
		}
		wait := 200
		if last.pushback != nil && *last.pushback != 0 {
			wait = *last.pushback
		}
		time.Sleep(time.Duration(wait) * time.Millisecond)
		last = l.once(i)
		last.latency = last.started.Add(last.latency).Sub(first.started)
		last.started = first.started
	}
	l.add(last)
}

func (l *load) add(r record) {
	l.mu.Lock()
	l.pending = append(l.pending, r)
	l.mu.Unlock()
}

func (l *load) take() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch := l.pending
	l.pending = nil
	return batch
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// generate sends the plan's requests, emits batches of records every batch_s, then the end.
func generate(plan *Plan, out *output, stop <-chan struct{}) {
	l := &load{plan: plan, timeout: seconds(plan.TimeoutS)}
	timeoutValue := strconv.FormatInt(int64(math.Round(plan.TimeoutS*1000)), 10)
	for _, r := range plan.Requests {
		l.payloads = append(l.payloads, serialise(r))
		// The deadline as sent, so the server can tell how long the call waited to be taken
		// (grpc_aio_resilience.intake.TIMEOUT_KEY; tests/unit/tools/test_loadgen_source.py).
		md := metadata.MD{timeoutKey: []string{timeoutValue}}
		if plan.APIKey != nil && *plan.APIKey != "" {
			md.Set("authorization", "Bearer "+*plan.APIKey)
		}
		if r.TraceID != "" {
			md.Set("traceparent", "00-"+r.TraceID+"-"+r.SpanID+"-01")
		}
		l.contexts = append(l.contexts, metadata.NewOutgoingContext(context.Background(), md))
	}
	conn, err := grpc.NewClient(
		plan.Target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableRetry(), // the one retry owner is client_retries, here
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})),
		// Fixed flow-control windows: no BDP-estimation ping after each answer (measured:
		// 15-25% of the generator's CPU per call at 600-1,500 calls/s).
		grpc.WithInitialWindowSize(1<<20),
		grpc.WithInitialConnWindowSize(1<<24),
	)
	if err != nil {
		fatal("target %q: %v", plan.Target, err)
	}
	defer conn.Close()
	l.conn = conn

	flushed, quit := make(chan struct{}), make(chan struct{})
	go func() { // batches leave every batch_s
		defer close(flushed)
		ticker := time.NewTicker(max(seconds(plan.BatchS), time.Millisecond))
		defer ticker.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ticker.C:
				if batch := l.take(); len(batch) > 0 {
					out.records(batch)
				}
			}
		}
	}()

	cpuBefore := cpuSeconds()
	start := time.Now()
	n := len(plan.Requests)
	maxDuration := seconds(plan.MaxDurationS)
	over := func(i int) bool {
		if i >= n || time.Since(start) > maxDuration {
			return true
		}
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	if plan.RatePerS == nil {
		var next atomic.Int64
		for range max(1, plan.Concurrency) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); !over(i); i = int(next.Add(1) - 1) {
					l.one(i)
					if plan.ThinkS > 0 {
						time.Sleep(seconds(plan.ThinkS))
					}
				}
			}()
		}
	} else {
		slots := make(chan struct{}, plan.Concurrency) // a token per call in flight
		for i := 0; !over(i); i++ {
			due := start.Add(seconds(float64(i) / *plan.RatePerS))
			if delay := time.Until(due); delay > 0 { // wake once per tick, start all that is due
				time.Sleep(max(delay, tick))
			}
			select {
			case slots <- struct{}{}:
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					l.one(i)
					<-slots
				}(i)
			default: // every slot busy: the due call is dropped, not queued
				l.add(record{index: i, started: time.Now(), code: "CLIENT_DROPPED"})
			}
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter := cpuSeconds()
	close(quit)
	<-flushed
	if batch := l.take(); len(batch) > 0 {
		out.records(batch)
	}
	var used *float64
	if cpuBefore != nil && cpuAfter != nil {
		used = new(float64)
		*used = *cpuAfter - *cpuBefore
	}
	out.end(elapsed, used)
}
