// The load generator mesh-loadgen: built into .peers/bin by `make peers` (tools/peers.py).
module mesh/tools/loadgen

go 1.24.0

require (
	golang.org/x/sys v0.38.0
	google.golang.org/grpc v1.76.0
	google.golang.org/protobuf v1.36.10
)

require (
	golang.org/x/net v0.42.0 // indirect
	golang.org/x/text v0.27.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250804133106-a7a43d27e69b // indirect
)
