"""The chaos run's session: resolve the experiments, start or attach to the mesh, run the rounds,
write the reports, index the traces (session.py; the soak's in soak.py). `mesh chaos run`,
`mesh demo` and `mesh soak` call it with their options and a view that prints."""
