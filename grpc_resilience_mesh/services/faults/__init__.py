"""Application-level fault injection: the runtime-editable fault table and the server layer
applying it (injection.py), and the loopback FaultAdmin servicer that edits it (admin.py)."""
