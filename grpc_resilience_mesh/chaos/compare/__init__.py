"""`mesh chaos compare`: one experiment's repeated runs against a baseline's, each expectation and
headline latency judged IMPROVED, REGRESSED or WITHIN NOISE by a stated test
(docs/chaos-compare.md)."""
