package main

// The translation: one caller's edges into the listeners, clusters and endpoints gRPC's xDS
// client reads (gRFC A27). Each dependency is an API listener named like the xds:/// target,
// its route config inline (go-control-plane's Snapshot.Consistent() would not follow an RDS
// name inside an API listener), an EDS cluster of the same name, and its endpoints.

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	fault "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const faultFilter = "envoy.filters.http.fault"

// NodeResources is every resource one caller (node) is sent.
func NodeResources(edges map[string]Edge) (map[resource.Type][]types.Resource, error) {
	out := map[resource.Type][]types.Resource{}
	for _, dep := range sortedKeys(edges) {
		edge := edges[dep]
		lis, err := apiListener(dep, edge)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dep, err)
		}
		eps, err := assignment(dep, edge.Endpoints)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dep, err)
		}
		out[resource.ListenerType] = append(out[resource.ListenerType], lis)
		out[resource.ClusterType] = append(out[resource.ClusterType], edsCluster(dep, edge))
		out[resource.EndpointType] = append(out[resource.EndpointType], eps)
	}
	return out, nil
}

func seconds(s float64) *durationpb.Duration {
	return durationpb.New(time.Duration(math.Round(s * float64(time.Second))))
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err) // only for messages of this file, whose types are registered
	}
	return a
}

func apiListener(name string, edge Edge) (*listener.Listener, error) {
	filters := []*hcm.HttpFilter{}
	if len(edge.Faults) > 0 {
		// An empty HTTPFault injects nothing; the routes' overrides say what each gets.
		filters = append(filters, &hcm.HttpFilter{
			Name:       faultFilter,
			ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(&fault.HTTPFault{})},
		})
	}
	filters = append(filters, &hcm.HttpFilter{
		Name:       "envoy.filters.http.router",
		ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(&router.Router{})},
	})
	manager := &hcm.HttpConnectionManager{
		HttpFilters: filters,
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &route.RouteConfiguration{
			Name: name,
			VirtualHosts: []*route.VirtualHost{
				{Name: name, Domains: []string{"*"}, Routes: routes(name, edge)},
			},
		}},
	}
	return &listener.Listener{
		Name:        name,
		ApiListener: &listener.ApiListener{ApiListener: mustAny(manager)},
	}, nil
}

// routes: one per fault bound to a method's path, then the catch-all (with the edge-wide fault).
func routes(cluster string, edge Edge) []*route.Route {
	var out []*route.Route
	var everyCall *Fault
	for i := range edge.Faults {
		f := edge.Faults[i]
		if f.Path == "" {
			everyCall = &f
			continue
		}
		match := &route.RouteMatch{PathSpecifier: &route.RouteMatch_Path{Path: f.Path}}
		out = append(out, oneRoute(cluster, edge, match, &f))
	}
	match := &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: ""}}
	return append(out, oneRoute(cluster, edge, match, everyCall))
}

func oneRoute(cluster string, edge Edge, match *route.RouteMatch, f *Fault) *route.Route {
	action := &route.RouteAction{
		ClusterSpecifier: &route.RouteAction_Cluster{Cluster: cluster},
		RetryPolicy:      retryPolicy(edge.Retry),
	}
	if edge.TimeoutS > 0 { // gRFC A31: the call's deadline, capped at this
		action.MaxStreamDuration = &route.RouteAction_MaxStreamDuration{
			MaxStreamDuration:    seconds(edge.TimeoutS),
			GrpcTimeoutHeaderMax: seconds(edge.TimeoutS),
		}
	}
	r := &route.Route{Match: match, Action: &route.Route_Route{Route: action}}
	if f != nil {
		r.TypedPerFilterConfig = map[string]*anypb.Any{faultFilter: mustAny(httpFault(*f))}
	}
	return r
}

func retryPolicy(r *Retry) *route.RetryPolicy {
	if r == nil {
		return nil
	}
	on := ""
	for i, c := range r.RetryableCodes {
		if i > 0 {
			on += ","
		}
		on += retryOn[c]
	}
	return &route.RetryPolicy{
		RetryOn:    on,
		NumRetries: wrapperspb.UInt32(r.MaxAttempts - 1),
		RetryBackOff: &route.RetryPolicy_RetryBackOff{
			BaseInterval: seconds(r.BaseBackoffS),
			MaxInterval:  seconds(r.MaxBackoffS),
		},
	}
}

// perMillion: gRPC reads FractionalPercent with any denominator; a million keeps 0.0001%.
func perMillion(percent float64) *typev3.FractionalPercent {
	return &typev3.FractionalPercent{
		Numerator:   uint32(math.Round(percent * 10000)),
		Denominator: typev3.FractionalPercent_MILLION,
	}
}

func httpFault(f Fault) *fault.HTTPFault {
	out := &fault.HTTPFault{}
	if f.DelayPercent > 0 {
		out.Delay = &faultcommon.FaultDelay{
			FaultDelaySecifier: &faultcommon.FaultDelay_FixedDelay{FixedDelay: seconds(f.DelayS)},
			Percentage:         perMillion(f.DelayPercent),
		}
	}
	if f.AbortPercent > 0 {
		out.Abort = &fault.FaultAbort{
			ErrorType:  &fault.FaultAbort_GrpcStatus{GrpcStatus: uint32(f.AbortCode)},
			Percentage: perMillion(f.AbortPercent),
		}
	}
	return out
}

func edsCluster(name string, edge Edge) *cluster.Cluster {
	c := &cluster.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: &core.ConfigSource{
			ResourceApiVersion:    core.ApiVersion_V3,
			ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
		}},
		LbPolicy: cluster.Cluster_ROUND_ROBIN,
	}
	if edge.MaxRequests > 0 { // gRFC A32: the only threshold gRPC reads
		c.CircuitBreakers = &cluster.CircuitBreakers{Thresholds: []*cluster.CircuitBreakers_Thresholds{
			{Priority: core.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(edge.MaxRequests)},
		}}
	}
	if o := edge.Outlier; o != nil {
		c.OutlierDetection = outlierDetection(*o)
	}
	return c
}

// outlierDetection: A50's failure-percentage ejection only; success-rate ejection's
// enforcement is set to 0, since its defaults (100%) would otherwise turn it on as well.
func outlierDetection(o Outlier) *cluster.OutlierDetection {
	return &cluster.OutlierDetection{
		Interval:                       seconds(o.IntervalS),
		BaseEjectionTime:               seconds(o.BaseEjectionS),
		MaxEjectionTime:                seconds(math.Max(o.BaseEjectionS, o.MaxEjectionS)),
		MaxEjectionPercent:             wrapperspb.UInt32(o.MaxEjectedPercent),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		FailurePercentageThreshold:     wrapperspb.UInt32(o.FailurePercentage),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(o.MinimumHosts),
		FailurePercentageRequestVolume: wrapperspb.UInt32(o.RequestVolume),
	}
}

func assignment(name string, addrs []string) (*endpoint.ClusterLoadAssignment, error) {
	var lbs []*endpoint.LbEndpoint
	for _, addr := range addrs {
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("%q: port: %w", addr, err)
		}
		sock := &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address:       host,
			PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)},
		}}}
		lbs = append(lbs, &endpoint.LbEndpoint{
			HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{Address: sock}},
			HealthStatus:   core.HealthStatus_HEALTHY,
		})
	}
	return &endpoint.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpoint.LocalityLbEndpoints{{
			// gRPC drops a locality without a weight (A27's weighted_target).
			Locality:            &core.Locality{Region: "loopback"},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         lbs,
		}},
	}, nil
}
