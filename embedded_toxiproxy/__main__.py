"""`python -m embedded_toxiproxy` runs the server (embedded_toxiproxy.server)."""

from embedded_toxiproxy.server import main

if __name__ == "__main__":
    raise SystemExit(main())
