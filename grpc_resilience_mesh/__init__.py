"""grpc-resilience-mesh: the mesh's services (`services`), the `mesh` command (`cli`), the
embedded mesh as processes (`launch`), a client of a running mesh (`client`), the live console
(`console`), the chaos runner (`chaos`), the embedded Toxiproxy, the load generator and the
benchmarks. The resilience library they use is a distribution of its own: grpc_aio_resilience."""
