"""The metastability lab: a discrete-event model of the retry storm the catalogue runs on the
mesh, the OSDI'22 four-panel it reproduces, and the vulnerability-region map it predicts."""
