"""The reference pages generated from the code (docs/reference/*.md), and their staleness check."""
