"""The mesh console: a live view of the edges (rates, latency, breakers, bulkheads, budgets,
faults), controls that break and mend them, background load and a trace viewer, served on
127.0.0.1 by `mesh up`; `mesh status`, `mesh fault` and `mesh watch` read the same model."""
